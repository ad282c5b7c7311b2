import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { apiClient } from '../support/http';
import { describeShape, randomShape, writeRandomTable, type RandomTable } from '../support/random-tables';
import { createTestEnv, type TestEnv } from '../support/test-env';

// Subtract and add on many generated tables of varied shape (row counts, column kinds and
// cardinalities, missing values, with and without time and keys): every experiment must succeed.
// This is where buffer-handling bugs between the workflows and the native runtime show up (a model
// without numeric inputs once failed every prune with a detached ArrayBuffer).
const TABLES = 50;
const SEED0 = 1000;

let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv({ ABACUS_WORKER_CONCURRENCY: '2', ABACUS_RUNTIME_THREADS: '1' });
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  expect((await http.call('POST', '/business-lines', { name: 'fuzz' })).status).toBe(201);
});

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

const training = { epochs: 2, batchSize: 256 };

describe(`subtract and add on ${TABLES} generated tables`, () => {
  it('every experiment succeeds, whatever the table shape', async () => {
    const tables: RandomTable[] = [];
    const submitted: { table: RandomTable; kind: string; id: string }[] = [];
    const failures: string[] = [];
    for (let i = 0; i < TABLES; i++) {
      const table = await writeRandomTable(randomShape(SEED0 + i), path.join(env.dataDir, 'random'));
      tables.push(table);
      const name = `t${table.shape.seed}`;
      const up = await http.upload('/sample-sets', table.file, {
        name,
        businessLine: 'fuzz',
        label: table.label,
        ...(table.shape.time ? { time: 'ts' } : {}),
        ...(table.shape.keys.length ? { keys: table.shape.keys.join(',') } : {}),
      });
      if (up.status !== 201) {
        failures.push(`import ${describeShape(table.shape)}: ${up.status} ${JSON.stringify(up.body)}`);
        continue;
      }
      const sub = await http.call('POST', '/experiments', {
        kind: 'subtract',
        businessLine: 'fuzz',
        name: `${name} subtract`,
        spec: { model: { sampleSet: name, features: table.features, training }, retrainSeeds: 1, seed: i },
      });
      const nCand = table.features.length > 2 && i % 2 ? 2 : 1;
      const candidates = table.features.slice(-nCand);
      const add = await http.call('POST', '/experiments', {
        kind: 'add',
        businessLine: 'fuzz',
        name: `${name} add`,
        spec: {
          base: { sampleSet: name, features: table.features.slice(0, -nCand), training },
          candidates,
          bootstrap: 50,
          leaveOneIn: i % 3 === 0,
          seeds: 3,
          notify: false,
          seed: i,
        },
      });
      for (const [kind, r] of [
        ['subtract', sub],
        ['add', add],
      ] as const) {
        if (r.status === 201) submitted.push({ table, kind, id: String(r.body.id) });
        else failures.push(`submit ${kind} ${describeShape(table.shape)}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }
    for (const s of submitted) {
      const e = await http.finished(s.id, 900_000, `${s.kind} on table ${s.table.shape.seed}`);
      if (e.status !== 'succeeded') failures.push(`${s.kind} ${describeShape(s.table.shape)}: ${e.status}: ${e.error}`);
    }
    // the shapes covered, so a narrowed generator cannot pass unnoticed
    const shapes = tables.map((t) => t.shape);
    expect(shapes.filter((s) => !s.columns.some((c) => c.kind === 'numeric' || c.kind === 'integer')).length).toBeGreaterThan(3);
    expect(
      shapes.filter((s) => !s.columns.some((c) => c.kind === 'categorical' || c.kind === 'multi_id')).length,
    ).toBeGreaterThan(3);
    expect(shapes.filter((s) => s.columns.some((c) => c.kind === 'multi_id')).length).toBeGreaterThan(5);
    expect(shapes.filter((s) => s.columns.some((c) => c.missing > 0)).length).toBeGreaterThan(10);
    expect(shapes.filter((s) => s.time).length).toBeGreaterThan(10);
    expect(shapes.filter((s) => !s.time).length).toBeGreaterThan(10);
    expect(shapes.filter((s) => s.keys.length).length).toBeGreaterThan(10);
    expect(shapes.filter((s) => s.format === 'csv').length).toBeGreaterThan(5);
    expect(Math.min(...shapes.map((s) => s.rows))).toBeLessThan(3_000);
    expect(Math.max(...shapes.map((s) => s.rows))).toBeGreaterThan(10_000);
    expect(submitted.length).toBe(2 * TABLES);
    expect(failures, failures.join('\n')).toEqual([]);
  });
});
