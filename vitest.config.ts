import path from 'node:path';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const libs = ['access', 'core', 'catalog', 'data', 'queue', 'runtime', 'samples', 'scoring', 'serving', 'store', 'workflows', 'reports'];
const alias: Record<string, string> = {
  // before '@abacus/workflows' (the first matching alias wins): the web app's browser-safe entry
  '@abacus/workflows/browser': path.resolve(__dirname, 'libs/workflows/src/browser.ts'),
  '@abacus/configs': path.resolve(__dirname, 'configs/index.ts'),
};
for (const lib of libs) alias[`@abacus/${lib}`] = path.resolve(__dirname, `libs/${lib}/src/index.ts`);

/**
 * The slowest test files (minutes of training on simulated worlds), started first so that the files
 * running beside them fill the other workers instead of one long file finishing alone at the end.
 */
const SLOWEST_FIRST = [
  'test/integration/subtract-truth.test.ts',
  'test/integration/add-truth.test.ts',
  'test/e2e/cli-workflows.test.ts',
  'test/integration/calibration.test.ts',
  'test/integration/worker-faults.test.ts',
  'test/e2e/web-demo.test.ts',
  'test/integration/random-tables.test.ts',
  'test/integration/prune-lookahead.test.ts',
  'test/integration/multiply.test.ts',
  'libs/runtime/src/simulator-bound.spec.ts',
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.findIndex((s) => f.moduleId.endsWith(s));
      return i < 0 ? SLOWEST_FIRST.length : i;
    };
    return sorted.map((f, k) => ({ f, k })).sort((a, b) => rank(a.f) - rank(b.f) || a.k - b.k).map((x) => x.f);
  }
}

// SWC instead of esbuild: NestJS dependency injection needs emitted decorator metadata.
const plugins = [swc.vite({ module: { type: 'es6' } })];

export default defineConfig({
  plugins,
  resolve: { alias },
  test: {
    pool: 'forks',
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'unit',
          // apps/** includes the web app's own (apps/web/src/**/*.spec.ts: pure helpers, no DOM needed)
          include: ['libs/**/*.spec.ts', 'apps/**/*.spec.{ts,tsx}', 'configs/**/*.spec.ts', 'test/docs/**/*.spec.ts'],
          exclude: ['**/node_modules/**', 'apps/web/dist/**'],
          testTimeout: 120_000,
        },
      },
      {
        plugins,
        resolve: { alias },
        // CUDA backend tests: run on a GPU host (see libs/runtime/README.md "CUDA backend")
        test: { name: 'gpu', include: ['libs/runtime/test-gpu/**/*.gpu.test.ts'], testTimeout: 600_000 },
      },
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // three files at a time on two cores: the longest tests without their own limit took up to 78 s
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
