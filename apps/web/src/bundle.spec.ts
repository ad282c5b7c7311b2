import path from 'node:path';
import { build, type Rollup } from 'vite';
import { describe, expect, it } from 'vitest';
import { bundleGuard, forbiddenModules } from '../bundle-guard';

const webRoot = path.resolve(__dirname, '..');

describe('the web bundle', () => {
  it('forbiddenModules names server packages, Node built-ins, I/O libs and barrels, nothing else', () => {
    const ids = [
      '/r/node_modules/typeorm/index.js',
      '/r/node_modules/pg/lib/client.js',
      '/r/node_modules/@nestjs/common/index.js',
      '\0__vite-browser-external:node:fs',
      '/r/libs/data/src/entities/trial.entity.ts',
      '/r/libs/catalog/src/index.ts',
      '/r/node_modules/zod/v4/classic/schemas.js',
      '/r/node_modules/react-dom/cjs/react-dom.production.js',
      '/r/libs/workflows/src/subtract/subtract-experiment.schema.ts',
      '/r/libs/catalog/src/model-params.schema.ts',
    ];
    expect(forbiddenModules(ids)).toEqual(ids.slice(0, 6));
  });

  it('the guard fails a build whose chunk holds a forbidden module', () => {
    const plugin = bundleGuard();
    const hook = plugin.generateBundle as (this: unknown, o: unknown, b: Record<string, unknown>) => void;
    const ctx = {
      error(message: string): never {
        throw new Error(message);
      },
    };
    const chunk = (moduleIds: string[]) => ({ type: 'chunk', moduleIds });
    expect(() => hook.call(ctx, {}, { 'a.js': chunk(['/r/node_modules/react/index.js']) })).not.toThrow();
    expect(() =>
      hook.call(ctx, {}, { 'a.js': chunk(['/r/node_modules/react/index.js', '/r/node_modules/typeorm/index.js']) }),
    ).toThrow(/must not include Node or server modules; it includes: \/r\/node_modules\/typeorm\/index.js/);
  });

  it('vite build succeeds with the api’s experiment schemas in it and no Node or server module', async () => {
    const out = (await build({
      configFile: path.join(webRoot, 'vite.config.ts'),
      logLevel: 'silent',
      build: { write: false },
    })) as Rollup.RollupOutput | Rollup.RollupOutput[];
    const outputs = Array.isArray(out) ? out : [out];
    const ids = outputs.flatMap((o) => o.output.flatMap((c) => (c.type === 'chunk' ? c.moduleIds : [])));
    const rel = ids.map((id) => path.relative(path.resolve(webRoot, '../..'), id).split(path.sep).join('/'));
    expect(rel).toEqual(
      expect.arrayContaining([
        'libs/workflows/src/experiments/experiment.schemas.ts',
        'libs/workflows/src/subtract/subtract-experiment.schema.ts',
        'libs/workflows/src/divide/divide-experiment.schema.ts',
        'libs/catalog/src/model-params.schema.ts',
      ]),
    );
    expect(rel.some((id) => id.startsWith('node_modules/zod/'))).toBe(true);
    expect(forbiddenModules(ids)).toEqual([]);
    expect(rel.filter((id) => /typeorm|\/pg\/|@nestjs|bullmq|ioredis/.test(id))).toEqual([]);
  }, 120_000);
});
