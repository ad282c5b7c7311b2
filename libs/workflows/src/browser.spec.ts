import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as browser from './browser';
import { createExperimentSchema } from './index';

/** Every module reachable from `entry` by its imports (type-only ones included), and what each imports. */
function importGraph(entry: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const todo = [entry];
  while (todo.length) {
    const file = todo.pop()!;
    if (graph.has(file)) continue;
    const specifiers = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
    graph.set(file, specifiers);
    for (const s of specifiers) {
      if (!s.startsWith('.')) continue;
      const base = path.resolve(path.dirname(file), s);
      const resolved = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => fs.existsSync(f));
      if (!resolved) throw new Error(`${file}: cannot resolve ${s}`);
      todo.push(resolved);
    }
  }
  return graph;
}

describe('the browser-safe entry (src/browser.ts)', () => {
  const graph = importGraph(path.join(__dirname, 'browser.ts'));

  it('reaches only pure zod modules: no package but zod, no barrel, no Node module', () => {
    const offending: string[] = [];
    for (const [file, specifiers] of graph) {
      for (const s of specifiers) {
        const bare = !s.startsWith('.');
        const barrel = /(^|\/)index$/.test(s) || /\/src$/.test(s);
        if ((bare && s !== 'zod') || barrel) offending.push(`${path.relative(__dirname, file)} imports ${s}`);
      }
    }
    expect(offending).toEqual([]);
    // the walk did reach the per-kind schemas and the pure modules of other libs
    const files = [...graph.keys()].map((f) => path.relative(path.join(__dirname, '../..'), f));
    expect(files).toEqual(
      expect.arrayContaining([
        'workflows/src/subtract/subtract-experiment.schema.ts',
        'workflows/src/divide/divide-experiment.schema.ts',
        'catalog/src/model-params.schema.ts',
        'core/src/line-name.ts',
      ]),
    );
  });

  it('is the very schema the api validates with (one object, not a copy)', () => {
    expect(browser.createExperimentSchema).toBe(createExperimentSchema);
  });

  it('gives the same issue paths as the api (formatZodIssues)', () => {
    const r = browser.createExperimentSchema.safeParse({
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'x' }, maxDrop: 2 },
    });
    expect(r.success).toBe(false);
    expect(browser.formatZodIssues(r.error!).map((i) => i.path)).toEqual(['spec.maxDrop']);
  });
});
