import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { DuckDBInstance } from '@duckdb/node-api';
import { createDataSource } from '@abacus/data';
import { EmbeddingService } from '@abacus/catalog';
import * as ort from 'onnxruntime-web';
import { RuntimeModel, writeSafetensors } from '@abacus/runtime';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { CONTROLLERS } from '../../apps/api/src/app.module';
import { describeRoutes } from '../../apps/api/src/common/routes';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient, type HttpResult } from '../support/http';
import { cli } from '../support/processes';

/**
 * Every endpoint × credential × business line, by direct API calls. The keys scoped to a line
 * (viewer, engineer, and the revoked and expired ones) are scoped to `feed`; the admin key to all
 * lines. Lines: `feed` (own), `search` (another line, shares nothing), `mall` (another line whose
 * sample set is shared with feed).
 */

type Cred = 'none' | 'revoked' | 'expired' | 'viewer' | 'engineer' | 'admin';
const CREDS: Cred[] = ['none', 'revoked', 'expired', 'viewer', 'engineer', 'admin'];
type Line = 'feed' | 'search' | 'mall';
const LINES: Line[] = ['feed', 'search', 'mall'];

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
const secrets = {} as Record<Exclude<Cred, 'none'>, string>;
const ids = {} as Record<
  Line,
  {
    sampleSet: string;
    feature: string;
    model: string;
    experiment: string;
    embedding: string;
    serving: string;
    schedule: string;
    report: string;
  }
>;
let n = 0;
const unique = (p: string) => `${p}${++n}`;

const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);
const as = (cred: Cred) =>
  apiClient(
    () => api.url,
    () => (cred === 'none' ? undefined : secrets[cred]),
  );

async function ok(r: Promise<HttpResult>, status = 201): Promise<Record<string, any>> {
  const res = await r;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}

function csv(name: string): string {
  const file = path.join(env.dataDir, 'in', `${name}.csv`);
  writeSmallCsv(file, 200);
  return file;
}

/** a small Parquet file on a "shared path", to register by reference (written once) */
let sharedParquet: string | null = null;
async function parquetOnSharedPath(): Promise<string> {
  if (sharedParquet) return sharedParquet;
  const src = csv('shared-src');
  const file = path.join(env.dataDir, 'shared', 'clicks.parquet');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run(`COPY (SELECT * FROM read_csv('${src}')) TO '${file}' (FORMAT parquet)`);
  con.closeSync();
  db.closeSync();
  return (sharedParquet = file);
}

function featureTableCsv(column: string): string {
  const file = path.join(env.dataDir, 'in', `${column}.csv`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `user_id,${column}\n1,3\n2,5\n3,8\n`);
  return file;
}

/** A small runtime model trained for a few steps and saved in the data directory (relative path). */
const CHECKPOINT = path.join('checkpoints', 'access-model');
const EXPORT_SPEC = {
  numeric: ['price'],
  slots: [{ name: 'site', vocab: 10 }],
  embeddingDim: 4,
  hidden: [8, 4],
  wide: true,
  pooling: 'mean' as const,
};
function exportData(rows: number) {
  const numeric = Float32Array.from({ length: rows }, (_, i) => (i % 7) - 3);
  const ids = Int32Array.from({ length: rows }, (_, i) => (i % 5 === 4 ? -1 : (i * 3) % 10));
  const offsets = Int32Array.from({ length: rows + 1 }, (_, i) => i);
  const labels = Float32Array.from({ length: rows }, (_, i) => (i % 3 === 0 ? 1 : 0));
  return { rows, numericNames: ['price'], numeric, slots: [{ name: 'site', ids, offsets }], labels };
}
async function saveTrainedCheckpoint(dir: string): Promise<void> {
  const model = RuntimeModel.create(EXPORT_SPEC, { backend: 'cpu', threads: 1 });
  await model.train(exportData(256), { epochs: 1, batchSize: 32, maxSteps: 6 });
  await model.save(dir);
}

const scoreOn = (businessLine: string, sampleSet: string) => ({
  kind: 'score',
  businessLine,
  name: unique('e'),
  spec: { sampleSet },
});
/** a served model of the line's "base" model, its tier 0 (the webhook host is public, so allowed) */
const serving = (businessLine: string) => ({
  model: 'base',
  businessLine,
  tiers: [0],
  webhookUrl: 'https://hooks.example.com/abacus',
  secret: 'access-test-secret-0123',
});
const freshExperiment = async (line: Line) =>
  (await ok(admin.call('POST', '/experiments', scoreOn(line, ids[line].sampleSet)))).id as string;

/**
 * What a credential gets: the public routes answer everyone; without a valid key 401; below the
 * route's role 403; else `allowed` — or `outOfScope` for the feed-scoped keys when the line is not theirs.
 */
function expected(min: 'public' | 'viewer' | 'engineer' | 'admin', allowed: number, outOfScope?: number) {
  const rank = { viewer: 0, engineer: 1, admin: 2 } as const;
  return (c: Cred): number => {
    if (min === 'public') return allowed;
    if (c === 'none' || c === 'revoked' || c === 'expired') return 401;
    if (rank[c] < rank[min]) return 403;
    return outOfScope !== undefined && c !== 'admin' ? outOfScope : allowed;
  };
}

interface Case {
  variant: string;
  send: (cred: Cred) => Promise<HttpResult>;
  expect: (c: Cred) => number;
}

/** Per line: own line as it is, another line outside the scoped keys' lines, and the sharing line. */
const perLine = (make: (line: Line) => (cred: Cred) => Promise<HttpResult>, exp: Record<Line, (c: Cred) => number>): Case[] =>
  LINES.map((line) => ({ variant: line, send: make(line), expect: exp[line] }));

const TABLE: Record<string, Case[]> = {
  'GET /api/v1/health': [{ variant: '-', send: (c) => as(c).call('GET', '/health'), expect: expected('public', 200) }],
  'POST /api/v1/business-lines': [
    {
      variant: '-',
      send: (c) => as(c).call('POST', '/business-lines', { name: unique('line') }),
      expect: expected('admin', 201),
    },
  ],
  'GET /api/v1/business-lines': [
    { variant: '-', send: (c) => as(c).call('GET', '/business-lines'), expect: expected('viewer', 200) },
  ],
  'GET /api/v1/business-lines/:name': perLine((l) => (c) => as(c).call('GET', `/business-lines/${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'POST /api/v1/sample-sets': perLine(
    (l) => (c) => as(c).upload('/sample-sets', csv(unique('s')), { name: unique('set'), businessLine: l, label: 'click' }),
    { feed: expected('engineer', 201), search: expected('engineer', 201, 403), mall: expected('engineer', 201, 403) },
  ),
  'POST /api/v1/sample-sets/register': perLine(
    (l) => async (c) =>
      as(c).call('POST', '/sample-sets/register', {
        url: `file://${await parquetOnSharedPath()}`,
        name: unique('ref'),
        businessLine: l,
        label: 'click',
      }),
    { feed: expected('engineer', 201), search: expected('engineer', 201, 403), mall: expected('engineer', 201, 403) },
  ),
  'GET /api/v1/sample-sets': perLine((l) => (c) => as(c).call('GET', `/sample-sets?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/sample-sets/:id': perLine((l) => (c) => as(c).call('GET', `/sample-sets/${ids[l].sampleSet}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    // shared with feed: feed's keys may see what they may borrow
    mall: expected('viewer', 200),
  }),
  'POST /api/v1/features': perLine(
    (l) => (c) => as(c).call('POST', '/features', { name: unique('f'), businessLine: l, kind: 'numeric' }),
    { feed: expected('engineer', 201), search: expected('engineer', 201, 403), mall: expected('engineer', 201, 403) },
  ),
  'GET /api/v1/features': perLine((l) => (c) => as(c).call('GET', `/features?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/features/costs': [
    // by line: the ledger lists what the caller may read (another line's: an empty ledger)
    ...perLine((l) => (c) => as(c).call('GET', `/features/costs?businessLine=${l}`), {
      feed: expected('viewer', 200),
      search: expected('viewer', 200),
      mall: expected('viewer', 200),
    }).map((x) => ({ ...x, variant: `line ${x.variant}` })),
    // by model: another line's model is not found
    ...perLine((l) => (c) => as(c).call('GET', `/features/costs?model=${ids[l].model}`), {
      feed: expected('viewer', 200),
      search: expected('viewer', 200, 404),
      mall: expected('viewer', 200, 404),
    }).map((x) => ({ ...x, variant: `model ${x.variant}` })),
  ],
  'POST /api/v1/features/costs/measure': [
    ...perLine((l) => (c) => as(c).call('POST', '/features/costs/measure', { businessLine: l, rows: 64, repeats: 1 }), {
      feed: expected('engineer', 200),
      search: expected('engineer', 200, 403),
      mall: expected('engineer', 200, 403),
    }).map((x) => ({ ...x, variant: `line ${x.variant}` })),
    ...perLine((l) => (c) => as(c).call('POST', '/features/costs/measure', { model: ids[l].model, rows: 64, repeats: 1 }), {
      feed: expected('engineer', 200),
      search: expected('engineer', 200, 404),
      mall: expected('engineer', 200, 404),
    }).map((x) => ({ ...x, variant: `model ${x.variant}` })),
  ],
  'GET /api/v1/features/:id': perLine((l) => (c) => as(c).call('GET', `/features/${ids[l].feature}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'GET /api/v1/features/:id/experiments': perLine((l) => (c) => as(c).call('GET', `/features/${ids[l].feature}/experiments`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'PATCH /api/v1/features/:id': perLine(
    (l) => (c) => as(c).call('PATCH', `/features/${ids[l].feature}`, { description: unique('d') }),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'POST /api/v1/feature-tables': perLine(
    (l) => (c) =>
      as(c).upload('/feature-tables', featureTableCsv(unique('col')), {
        name: unique('table'),
        businessLine: l,
        entityKey: 'user_id',
      }),
    { feed: expected('engineer', 201), search: expected('engineer', 201, 403), mall: expected('engineer', 201, 403) },
  ),
  'GET /api/v1/feature-tables': perLine((l) => (c) => as(c).call('GET', `/feature-tables?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'POST /api/v1/models': [
    // a model in feed on the sample set of each line: search's is not shared with feed (403 for everyone)
    ...perLine(
      (l) => (c) => as(c).call('POST', '/models', { name: unique('m'), businessLine: 'feed', sampleSetId: ids[l].sampleSet }),
      { feed: expected('engineer', 201), search: expected('engineer', 403), mall: expected('engineer', 201) },
    ),
    {
      variant: 'in search',
      send: (c) =>
        as(c).call('POST', '/models', { name: unique('m'), businessLine: 'search', sampleSetId: ids.search.sampleSet }),
      expect: expected('engineer', 201, 403),
    },
  ],
  'GET /api/v1/embeddings': perLine((l) => (c) => as(c).call('GET', `/embeddings?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/embeddings/:ref': perLine((l) => (c) => as(c).call('GET', `/embeddings/${ids[l].embedding}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    // shared with feed
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/embeddings/:ref/safetensors': perLine(
    (l) => (c) => as(c).call('GET', `/embeddings/${encodeURIComponent(ids[l].embedding)}/safetensors`),
    { feed: expected('viewer', 200), search: expected('viewer', 200, 404), mall: expected('viewer', 200) },
  ),
  // the owner line sets a name's policy: feed's own (engineer), search's unseen (404), mall's shared with feed but not feed's (403)
  'PATCH /api/v1/embeddings/:name/policy': perLine(
    (l) => (c) =>
      as(c).call('PATCH', `/embeddings/${encodeURIComponent(ids[l].embedding.split('@')[0]!)}/policy`, { updatableBy: [] }),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 403) },
  ),
  'GET /api/v1/models': perLine((l) => (c) => as(c).call('GET', `/models?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/models/:id': perLine((l) => (c) => as(c).call('GET', `/models/${ids[l].model}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'GET /api/v1/models/:id/export': [
    ...perLine((l) => (c) => as(c).call('GET', `/models/${ids[l].model}/export?format=onnx`), {
      feed: expected('viewer', 200),
      search: expected('viewer', 200, 404),
      mall: expected('viewer', 200, 404),
    }),
    ...perLine((l) => (c) => as(c).call('GET', `/models/${ids[l].model}/export?format=safetensors`), {
      feed: expected('viewer', 200),
      search: expected('viewer', 200, 404),
      mall: expected('viewer', 200, 404),
    }).map((c) => ({ ...c, variant: `${c.variant} safetensors` })),
  ],
  'POST /api/v1/experiments': [
    // an experiment in feed on each line's sample set
    ...perLine((l) => (c) => as(c).call('POST', '/experiments', scoreOn('feed', ids[l].sampleSet)), {
      feed: expected('engineer', 201),
      search: expected('engineer', 403),
      mall: expected('engineer', 201),
    }),
    {
      variant: 'in search',
      send: (c) => as(c).call('POST', '/experiments', scoreOn('search', ids.search.sampleSet)),
      expect: expected('engineer', 201, 403),
    },
    {
      variant: "in feed on search's model",
      send: (c) =>
        as(c).call('POST', '/experiments', {
          kind: 'subtract',
          businessLine: 'feed',
          name: unique('e'),
          spec: { model: { model: ids.search.model } },
        }),
      expect: expected('engineer', 403),
    },
  ],
  'GET /api/v1/experiments': perLine((l) => (c) => as(c).call('GET', `/experiments?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/experiments/:id': perLine((l) => (c) => as(c).call('GET', `/experiments/${ids[l].experiment}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'GET /api/v1/experiments/:id/results': perLine((l) => (c) => as(c).call('GET', `/experiments/${ids[l].experiment}/results`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'POST /api/v1/experiments/:id/cancel': perLine(
    (l) => async (c) => as(c).call('POST', `/experiments/${await freshExperiment(l)}/cancel`),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'POST /api/v1/keys': [
    {
      variant: '-',
      send: (c) => as(c).call('POST', '/keys', { name: unique('k'), role: 'viewer', lines: ['feed'] }),
      expect: expected('admin', 201),
    },
  ],
  'GET /api/v1/keys': [{ variant: '-', send: (c) => as(c).call('GET', '/keys'), expect: expected('admin', 200) }],
  'GET /api/v1/keys/me': [{ variant: '-', send: (c) => as(c).call('GET', '/keys/me'), expect: expected('viewer', 200) }],
  'POST /api/v1/keys/:id/revoke': [
    {
      variant: '-',
      send: async (c) => {
        const k = await ok(admin.call('POST', '/keys', { name: unique('k'), role: 'viewer', lines: ['feed'] }));
        return as(c).call('POST', `/keys/${k.id}/revoke`);
      },
      expect: expected('admin', 200),
    },
  ],
  'GET /api/v1/audit': [{ variant: '-', send: (c) => as(c).call('GET', '/audit'), expect: expected('admin', 200) }],
  'POST /api/v1/serving': perLine((l) => (c) => as(c).call('POST', '/serving', serving(l)), {
    feed: expected('engineer', 201),
    search: expected('engineer', 201, 403),
    mall: expected('engineer', 201, 403),
  }),
  'GET /api/v1/serving': perLine((l) => (c) => as(c).call('GET', `/serving?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  ...Object.fromEntries(
    ['', '/active', '/log'].map((suffix) => [
      `GET /api/v1/serving/:id${suffix}`,
      perLine((l) => (c) => as(c).call('GET', `/serving/${ids[l].serving}${suffix}`), {
        feed: expected('viewer', 200),
        search: expected('viewer', 200, 404),
        mall: expected('viewer', 200, 404),
      }),
    ]),
  ),
  'POST /api/v1/serving/:id/signals': perLine(
    (l) => (c) => as(c).call('POST', `/serving/${ids[l].serving}/signals`, { cpu: 0.5 }),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'POST /api/v1/serving/:id/pin': perLine(
    (l) => (c) => as(c).call('POST', `/serving/${ids[l].serving}/pin`, { tier: 0, reason: unique('r') }),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'DELETE /api/v1/serving/:id/pin': perLine((l) => (c) => as(c).call('DELETE', `/serving/${ids[l].serving}/pin`), {
    feed: expected('engineer', 200),
    search: expected('engineer', 200, 404),
    mall: expected('engineer', 200, 404),
  }),
  'POST /api/v1/report-schedules': perLine(
    // the line's second model "m2" has no schedule yet; each call after the first success is a 409
    (l) => (c) => as(c).call('POST', '/report-schedules', { model: `sched-${c}`, businessLine: l }),
    { feed: expected('engineer', 201), search: expected('engineer', 201, 403), mall: expected('engineer', 201, 403) },
  ),
  'GET /api/v1/report-schedules': perLine((l) => (c) => as(c).call('GET', `/report-schedules?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  'GET /api/v1/report-schedules/:id': perLine((l) => (c) => as(c).call('GET', `/report-schedules/${ids[l].schedule}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200, 404),
    mall: expected('viewer', 200, 404),
  }),
  'PATCH /api/v1/report-schedules/:id': perLine(
    (l) => (c) => as(c).call('PATCH', `/report-schedules/${ids[l].schedule}`, { cron: '0 7 * * 1' }),
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'DELETE /api/v1/report-schedules/:id': perLine(
    (l) => async (c) => {
      // a fresh schedule per call (its own model), so every allowed delete has something to delete
      const model = unique('del');
      await ok(admin.call('POST', '/models', { name: model, businessLine: l, sampleSetId: ids[l].sampleSet }));
      const s = await ok(admin.call('POST', '/report-schedules', { model, businessLine: l }));
      return as(c).call('DELETE', `/report-schedules/${s.id}`);
    },
    { feed: expected('engineer', 200), search: expected('engineer', 200, 404), mall: expected('engineer', 200, 404) },
  ),
  'POST /api/v1/reports/run': perLine((l) => (c) => as(c).call('POST', '/reports/run', { model: 'base', businessLine: l }), {
    feed: expected('engineer', 201),
    search: expected('engineer', 201, 403),
    mall: expected('engineer', 201, 403),
  }),
  'GET /api/v1/reports': perLine((l) => (c) => as(c).call('GET', `/reports?businessLine=${l}`), {
    feed: expected('viewer', 200),
    search: expected('viewer', 200),
    mall: expected('viewer', 200),
  }),
  ...Object.fromEntries(
    ['', '/html'].map((suffix) => [
      `GET /api/v1/reports/:id${suffix}`,
      perLine((l) => (c) => as(c).call('GET', `/reports/${ids[l].report}${suffix}`), {
        feed: expected('viewer', 200),
        search: expected('viewer', 200, 404),
        mall: expected('viewer', 200, 404),
      }),
    ]),
  ),
};

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  for (const line of LINES) await ok(admin.call('POST', '/business-lines', { name: line }));
  await saveTrainedCheckpoint(path.join(env.dataDir, CHECKPOINT));
  for (const line of LINES) {
    const ss = await ok(
      admin.upload('/sample-sets', csv(`${line}-base`), {
        name: `${line}-base`,
        businessLine: line,
        label: 'click',
        time: 'ts',
        ...(line === 'mall' ? { shareWith: 'feed' } : {}),
      }),
    );
    const feature = await ok(admin.call('POST', '/features', { name: `${line}_ctr`, businessLine: line, kind: 'numeric' }));
    const model = await ok(admin.call('POST', '/models', { name: 'base', businessLine: line, sampleSetId: ss.id }));
    // tier 0 of "base", as divide publishes tiers
    await ds.query(`UPDATE models SET tier = 0 WHERE id = $1`, [model.id]);
    const served = await ok(admin.call('POST', '/serving', serving(line)));
    const experiment = await ok(admin.call('POST', '/experiments', scoreOn(line, ss.id)));
    // a shared embedding of the line (multiply creates them; here registered directly), mall's shared with feed
    const rel = path.join('embeddings', `access-${line}`, 'embedding.safetensors');
    fs.mkdirSync(path.dirname(path.join(env.dataDir, rel)), { recursive: true });
    await writeSafetensors(
      path.join(env.dataDir, rel),
      [{ name: 'embedding.color', shape: [2, 2], data: new Float32Array([0, 0, 1, 2]) }],
      { format: 'abacus-shared-embedding', dim: '2', 'idspace.color': JSON.stringify({ kind: 'dictionary', values: ['red'] }) },
    );
    const emb = await new EmbeddingService(ds).register({
      name: `${line}.access`,
      businessLine: line,
      owner: 'test',
      dim: 2,
      slots: [{ name: 'color', rows: 2, idSpace: 'dictionary' }],
      sources: [],
      sharingPolicy: { shareWith: line === 'mall' ? ['feed'] : [] },
      file: rel,
      bytes: fs.statSync(path.join(env.dataDir, rel)).size,
      sha256: 'test',
      experimentId: null,
      originKey: `access-${line}`,
      provenance: {},
    });
    // the line's model version has a trained checkpoint (the worker sets checkpoint_path after training)
    await ds.query('UPDATE models SET checkpoint_path = $1 WHERE id = $2', [CHECKPOINT, model.id]);
    // models whose report schedules the POST row creates (one per credential that may), a schedule of "base",
    // and a finished report (stored as the worker writes it; no worker runs here)
    for (const c of CREDS)
      await ok(admin.call('POST', '/models', { name: `sched-${c}`, businessLine: line, sampleSetId: ss.id }));
    const schedule = await ok(admin.call('POST', '/report-schedules', { model: 'base', businessLine: line }));
    const [report] = (await ds.query(
      `INSERT INTO reports (business_line, model_name, model_id, trigger, fire_at, status, experiment_id, owner, content, summary, html)
       VALUES ($1, 'base', $2, 'manual', now(), 'succeeded', gen_random_uuid(), 'test', '{}', '{}', '<!doctype html><p>report</p>')
       RETURNING id`,
      [line, model.id],
    )) as { id: string }[];
    ids[line] = {
      schedule: schedule.id,
      report: report.id,
      sampleSet: ss.id,
      feature: feature.id,
      model: model.id,
      experiment: experiment.id,
      embedding: `${emb.name}@${emb.version}`,
      serving: served.id,
    };
  }
  const key = async (name: string, role: string) =>
    ok(admin.call('POST', '/keys', { name, role, lines: ['feed'] })) as Promise<{ id: string; secret: string }>;
  secrets.admin = env.adminKey;
  secrets.viewer = (await key('feed-viewer', 'viewer')).secret;
  secrets.engineer = (await key('feed-engineer', 'engineer')).secret;
  const revoked = await key('feed-revoked', 'engineer');
  await ok(admin.call('POST', `/keys/${revoked.id}/revoke`), 200);
  secrets.revoked = revoked.secret;
  const expiring = await ok(
    admin.call('POST', '/keys', { name: 'feed-expired', role: 'engineer', lines: ['feed'], expiresInDays: 1 }),
  );
  await ds.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expiring.id]);
  secrets.expired = expiring.secret;
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

describe('access control: every endpoint × credential × business line', () => {
  it('has a row for every route the API serves, and every route declares its access level', () => {
    const routes = describeRoutes(CONTROLLERS, 'api/v1');
    expect(routes.filter((r) => !r.access).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(Object.keys(TABLE).sort());
  });

  for (const [endpoint, cases] of Object.entries(TABLE)) {
    it(endpoint, async () => {
      const got: string[] = [];
      const want: string[] = [];
      for (const c of cases) {
        for (const cred of CREDS) {
          const res = await c.send(cred);
          got.push(`${c.variant} ${cred}: ${res.status}`);
          want.push(`${c.variant} ${cred}: ${c.expect(cred)}`);
        }
      }
      expect(got).toEqual(want);
    });
  }
});

describe('access control: what the answers say', () => {
  it('401 says why: missing, malformed, unknown, revoked, expired', async () => {
    const none = await as('none').call('GET', '/sample-sets');
    expect(none.body.message).toMatch(/missing API key.*abacus login --key/);
    const malformed = await fetch(`${api.url}/api/v1/sample-sets`, { headers: { authorization: 'Bearer nope' } });
    expect(((await malformed.json()) as { message: string }).message).toMatch(/malformed API key/);
    const unknown = await fetch(`${api.url}/api/v1/sample-sets`, { headers: { authorization: `Bearer abk_${'A'.repeat(43)}` } });
    expect(unknown.status).toBe(401);
    expect(((await unknown.json()) as { message: string }).message).toMatch(/unknown API key abk_AAAAAAAA/);
    expect((await as('revoked').call('GET', '/sample-sets')).body.message).toMatch(/\(feed-revoked\) was revoked at/);
    expect((await as('expired').call('GET', '/sample-sets')).body.message).toMatch(/\(feed-expired\) expired at/);
  });

  it('403 names the role or the line; cross-line specs name the sample set or model and the lines', async () => {
    const viewer = await as('viewer').call('POST', '/features', { name: 'x', businessLine: 'feed', kind: 'numeric' });
    expect(viewer.body.message).toMatch(/role viewer may not POST \/api\/v1\/features \(needs engineer or above\)/);
    const line = await as('engineer').call('POST', '/features', { name: 'x', businessLine: 'search', kind: 'numeric' });
    expect(line.body.message).toMatch(/not scoped to business line "search" \(its lines: feed\)/);
    const cross = await as('engineer').call('POST', '/experiments', scoreOn('feed', ids.search.sampleSet));
    expect(cross.body.message).toMatch(
      /sample set "search-base" belongs to business line "search" and is not shared with "feed"/,
    );
    const model = await as('admin').call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { model: ids.search.model } },
    });
    expect(model.status).toBe(403);
    expect(model.body.message).toMatch(/model "base" \(v1\) belongs to business line "search"/);
  });

  it('model export: safetensors is the checkpoint file, ONNX runs in onnxruntime and predicts like the runtime, 404 without a checkpoint', async () => {
    const dir = path.join(env.dataDir, CHECKPOINT);
    const st = await fetch(`${api.url}/api/v1/models/${ids.feed.model}/export?format=safetensors`, {
      headers: { authorization: `Bearer ${secrets.viewer}` },
    });
    expect(st.status).toBe(200);
    expect(st.headers.get('content-disposition')).toBe('attachment; filename="base-v1.safetensors"');
    expect(Buffer.from(await st.arrayBuffer()).equals(fs.readFileSync(path.join(dir, 'model.safetensors')))).toBe(true);

    const res = await fetch(`${api.url}/api/v1/models/${ids.feed.model}/export?format=onnx`, {
      headers: { authorization: `Bearer ${secrets.viewer}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="base-v1.onnx"');
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(fs.existsSync(path.join(dir, 'model.onnx'))).toBe(true); // cached beside the checkpoint
    const session = await ort.InferenceSession.create(bytes);
    const d = exportData(40);
    const out = await session.run({
      numeric: new ort.Tensor('float32', d.numeric, [40, 1]),
      site: new ort.Tensor(
        'int64',
        BigInt64Array.from(d.slots[0]!.ids, (x) => BigInt(x)),
        [40, 1],
      ),
    });
    await session.release();
    // the runtime's predict may run the MLP in bf16 on AVX512-BF16 / AMX CPUs: compare with FP32
    const precision = process.env.ABACUS_CPU_EVAL_PRECISION;
    process.env.ABACUS_CPU_EVAL_PRECISION = 'fp32';
    let expectedP: Float32Array;
    try {
      expectedP = await (await RuntimeModel.load(dir, { backend: 'cpu', threads: 1 })).predict(d);
    } finally {
      if (precision === undefined) delete process.env.ABACUS_CPU_EVAL_PRECISION;
      else process.env.ABACUS_CPU_EVAL_PRECISION = precision;
    }
    const got = out.probability!.data as Float32Array;
    for (let i = 0; i < 40; i++) expect(Math.abs(got[i]! - expectedP[i]!)).toBeLessThanOrEqual(1e-5);

    // the CLI writes the same bytes (to a temporary name, then renamed)
    const outFile = path.join(env.dataDir, 'cli-export', 'base.onnx');
    fs.mkdirSync(path.dirname(outFile), { recursive: true });
    const cliEnv = { ...env.env, ABACUS_API_URL: api.url, ABACUS_API_KEY: secrets.viewer };
    const r = await cli(['models', 'export', ids.feed.model, '--format', 'onnx', '-o', outFile], cliEnv, 120_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/base v1 \(onnx\): \d+ bytes written to/);
    expect(Buffer.from(bytes).equals(fs.readFileSync(outFile))).toBe(true);
    expect(fs.readdirSync(path.dirname(outFile))).toEqual(['base.onnx']);
    const badFlag = await cli(['models', 'export', ids.feed.model, '--format', 'pt'], cliEnv, 120_000);
    expect(badFlag.code).toBe(1);
    expect(badFlag.stderr).toMatch(/invalid models export options: --format: must be onnx or safetensors/);
    const badId = await cli(['models', 'export', 'nope', '--format', 'onnx'], cliEnv, 120_000);
    expect(badId.stderr).toMatch(/<id>: must be a model id/);

    const bare = await ok(
      admin.call('POST', '/models', { name: 'untrained', businessLine: 'feed', sampleSetId: ids.feed.sampleSet }),
    );
    const none = await admin.call('GET', `/models/${bare.id}/export?format=onnx`);
    expect(none.status).toBe(404);
    expect(none.body.message).toMatch(/"untrained" v1\) has no checkpoint/);
    const cliNone = await cli(['models', 'export', bare.id, '--format', 'safetensors', '-o', outFile], cliEnv, 120_000);
    expect(cliNone.code).toBe(1);
    expect(cliNone.stderr).toMatch(/has no checkpoint/);
    const bad = await admin.call('GET', `/models/${ids.feed.model}/export?format=pt`);
    expect(bad.status).toBe(400);
  });

  it('an admin scoped to some lines creates keys for those lines only', async () => {
    const scoped = await ok(admin.call('POST', '/keys', { name: 'feed-admin', role: 'admin', lines: ['feed'] }));
    const feedAdmin = apiClient(
      () => api.url,
      () => scoped.secret as string,
    );
    const wide = await feedAdmin.call('POST', '/keys', { name: 'x', role: 'admin', lines: ['*'] });
    expect(wide.status).toBe(403);
    expect(wide.body.message).toMatch(/scoped to business lines feed and may not create keys for "\*"/);
    expect((await feedAdmin.call('POST', '/keys', { name: 'x', role: 'viewer', lines: ['feed', 'search'] })).status).toBe(403);
    expect((await feedAdmin.call('POST', '/keys', { name: 'x', role: 'viewer', lines: ['feed'] })).status).toBe(201);
    // it sees and revokes keys within its lines only, and the audit entries of its lines and its own
    const keys = (await ok(feedAdmin.call('GET', '/keys'), 200)) as unknown as { name: string; lines: string[] }[];
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys)
      expect(
        k.lines.every((l) => l === 'feed'),
        k.name,
      ).toBe(true);
    const other = await ok(admin.call('POST', '/keys', { name: unique('search-k'), role: 'viewer', lines: ['search'] }));
    expect((await feedAdmin.call('POST', `/keys/${other.id}/revoke`)).status).toBe(404);
    const allKeys = (await ok(admin.call('GET', '/keys'), 200)) as unknown as { id: string }[];
    expect(allKeys.map((k) => k.id)).toContain(other.id);
    expect(keys.map((k) => k.name)).not.toContain(other.name);
    const audit = (await ok(feedAdmin.call('GET', '/audit?pageSize=500'), 200)).items as {
      businessLine: string | null;
      actorKeyId: string;
    }[];
    expect(audit.length).toBeGreaterThan(0);
    for (const a of audit) expect(a.businessLine === 'feed' || a.actorKeyId === scoped.id, JSON.stringify(a)).toBe(true);
    const all = (await ok(admin.call('GET', '/audit?pageSize=500'), 200)).items as { businessLine: string | null }[];
    expect(all.some((a) => a.businessLine === 'search')).toBe(true);
  });

  it('lists only what the key may see: its lines, plus sample sets shared with them', async () => {
    const lines = (await as('viewer').call('GET', '/business-lines')).body as unknown as { name: string }[];
    expect(lines.map((l) => l.name)).toEqual(['feed']);
    const sets = (await as('viewer').call('GET', '/sample-sets?pageSize=500')).body.items as { businessLine: string }[];
    expect(new Set(sets.map((s) => s.businessLine))).toEqual(new Set(['feed', 'mall']));
    const setsOfSearch = await as('viewer').call('GET', '/sample-sets?businessLine=search');
    expect(setsOfSearch.body.total).toBe(0);
    for (const route of ['/features?pageSize=500', '/models?pageSize=500', '/experiments?pageSize=500']) {
      const items = (await as('viewer').call('GET', route)).body.items as { businessLine: string }[];
      expect(items.length, route).toBeGreaterThan(0);
      expect(new Set(items.map((i) => i.businessLine)), route).toEqual(new Set(['feed']));
    }
    const tables = (await as('viewer').call('GET', '/feature-tables')).body as unknown as { businessLine: string }[];
    expect(tables.every((t) => t.businessLine === 'feed')).toBe(true);
    const all = (await admin.call('GET', '/experiments?pageSize=500')).body.items as { businessLine: string }[];
    expect(new Set(all.map((i) => i.businessLine))).toEqual(new Set(['feed', 'search', 'mall']));
  });

  it('key listings never carry secrets or hashes; whoami describes the calling key', async () => {
    const list = await admin.call('GET', '/keys');
    const text = JSON.stringify(list.body);
    expect(text).not.toMatch(/"hash"|"secret"/);
    for (const s of Object.values(secrets)) expect(text).not.toContain(s);
    const me = await as('engineer').call('GET', '/keys/me');
    expect(me.body).toMatchObject({ name: 'feed-engineer', role: 'engineer', lines: ['feed'] });
    expect(JSON.stringify(me.body)).not.toMatch(/"hash"|"secret"/);
    const stored = await ds.query(`SELECT hash, prefix FROM api_keys WHERE name = 'feed-engineer'`);
    expect(stored[0].hash).toMatch(/^[0-9a-f]{64}$/);
    expect(secrets.engineer.startsWith(stored[0].prefix)).toBe(true);
    expect(JSON.stringify(await ds.query('SELECT * FROM api_keys'))).not.toContain(secrets.engineer);
  });
});
