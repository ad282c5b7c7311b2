import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeCalibrationWorld, type CalibrationWorld } from '@abacus/samples';
import { S3Store } from '@abacus/store';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';
import { startLocalS3, type LocalS3 } from '../support/local-s3';

// Sample sets registered by reference: a hive-partitioned Parquet folder on a local S3 endpoint and
// on a shared path, registered without copying, versioned by its object list, refused with the
// object and the reason when it cannot be used, and run through subtract by the worker's cache.

const BUCKET = 'ads-logs';
let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let s3: LocalS3;
let bucket: S3Store;
let world: CalibrationWorld;
let shared = '';
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);

/** the world's table as dt=YYYY-MM-DD/ partitions (four days by time), one Parquet file each */
async function partition(file: string, out: string): Promise<string[]> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run(`SET preserve_insertion_order = true`);
  await con.run(
    `COPY (SELECT *, strftime(DATE '2026-11-20' + CAST(floor(4 * (ts - (SELECT min(ts) FROM read_parquet('${file}'))) / ((SELECT max(ts) - min(ts) FROM read_parquet('${file}')) + 1)) AS INTEGER), '%Y-%m-%d') AS dt
      FROM read_parquet('${file}')) TO '${out}' (FORMAT parquet, PARTITION_BY (dt))`,
  );
  con.closeSync();
  db.closeSync();
  const files: string[] = [];
  for (const d of fs.readdirSync(out).sort()) for (const f of fs.readdirSync(path.join(out, d))) files.push(path.join(d, f));
  return files;
}

async function register(body: Record<string, unknown>) {
  return http.call('POST', '/sample-sets/register', { businessLine: 'ads', label: 'click', time: 'ts', ...body });
}

async function count(): Promise<number> {
  return Number((await http.call('GET', '/sample-sets?pageSize=500')).body.total);
}

beforeAll(async () => {
  s3 = await startLocalS3([BUCKET]);
  const stores = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-stores-')), 'stores.json');
  fs.writeFileSync(
    stores,
    JSON.stringify({
      [`s3://${BUCKET}/`]: { endpoint: s3.endpoint, ...s3.credentials },
      's3://no-such-bucket/': { endpoint: s3.endpoint, ...s3.credentials },
      's3://down-store/': { endpoint: 'http://127.0.0.1:1', ...s3.credentials },
      's3://no-keys/': { endpoint: s3.endpoint },
    }),
  );
  env = await createTestEnv({ ABACUS_STORES_FILE: stores, ABACUS_CACHE_GB: '1' });
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  await http.call('POST', '/business-lines', { name: 'ads' });
  world = await writeCalibrationWorld(4242, 30_000, path.join(env.dataDir, 'world'));
  shared = path.join(env.dataDir, 'shared', 'clicks');
  fs.mkdirSync(path.dirname(shared), { recursive: true });
  const files = await partition(world.file, shared);
  bucket = new S3Store(BUCKET, { endpoint: s3.endpoint, ...s3.credentials });
  for (const f of files) await bucket.upload(`daily/clicks/${f}`, fs.createReadStream(path.join(shared, f)));
  await bucket.upload('daily/clicks/_SUCCESS', Buffer.alloc(0));
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
  await s3?.stop();
});

describe('registering a Parquet folder by reference', () => {
  it('reads the schema, rows and partitions from the footers, the same version from S3 and from a shared path', async () => {
    const r = await register({ url: `s3://${BUCKET}/daily/clicks/`, name: 'clicks-s3' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ location: `s3://${BUCKET}/daily/clicks/`, rowCount: world.truth.rows, format: 'parquet' });
    expect((r.body.objects as unknown[]).length).toBe(4);
    expect((r.body.schema as { name: string }[]).map((c) => c.name)).toEqual(
      expect.arrayContaining(['click', 'ts', 'dt', ...world.truth.base]),
    );
    expect(r.body.labelStats).toMatchObject({ binary: true, classes: ['0', '1'], positive: '1', events: null });
    expect(r.body.dataVersion).toMatch(/^objects:[0-9a-f]{16}$/);
    const f = await register({ url: `file://${shared}/`, name: 'clicks-shared' });
    expect(f.status, JSON.stringify(f.body)).toBe(201);
    expect(f.body.rowCount).toBe(world.truth.rows);
    // nothing was copied into the data directory
    expect(fs.existsSync(path.join(env.dataDir, 'sample-sets'))).toBe(false);
  });

  it('takes a partition range; a changed partition is a new version', async () => {
    const two = await register({
      url: `s3://${BUCKET}/daily/clicks/`,
      name: 'clicks-2days',
      partitions: { column: 'dt', from: '2026-11-21', to: '2026-11-22' },
    });
    expect(two.status, JSON.stringify(two.body)).toBe(201);
    expect((two.body.objects as { partition: { dt: string } }[]).map((o) => o.partition.dt)).toEqual([
      '2026-11-21',
      '2026-11-22',
    ]);
    expect(two.body.rowCount).toBeLessThan(world.truth.rows);
    const none = await register({
      url: `s3://${BUCKET}/daily/clicks/`,
      name: 'clicks-none',
      partitions: { column: 'dt', from: '2027-01-01' },
    });
    expect(none.status).toBe(400);
    expect(none.body.issues![0]).toMatchObject({
      path: 'partitions',
      message: expect.stringMatching(/no partition of dt in \[2027-01-01, …\] \(there are 4: 2026-11-20 … 2026-11-23\)/),
    });
  });

  it('refuses, naming the object and the reason, and registers nothing', async () => {
    const before = await count();
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ url: 's3://no-such-bucket/x/' }, 'url', /s3:\/\/no-such-bucket\/: no such bucket/],
      [{ url: `s3://${BUCKET}/daily/nothing/` }, 'url', /s3:\/\/ads-logs\/daily\/nothing\/: no objects there/],
      [{ url: 's3://down-store/x/' }, 'url', /s3:\/\/down-store\/: the endpoint cannot be reached \(ECONNREFUSED\)/],
      [{ url: 's3://no-keys/x/' }, 'url', /s3:\/\/no-keys\/: no credentials for this store/],
      [{ url: 'file:///nonexistent/abacus/path/' }, 'url', /no such directory/],
      [
        { url: `s3://${BUCKET}/daily/clicks/`, label: 'nope' },
        'label',
        /column "nope" is not in s3:\/\/ads-logs\/daily\/clicks\/dt=2026-11-20\//,
      ],
      [{ url: 'http://example.com/x' }, 'url', /expected s3:\/\/bucket\/prefix\/ or file:\/\/\/absolute\/path\//],
    ];
    for (const [body, field, message] of cases) {
      const r = await register({ name: 'bad', ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.issues![0].path).toBe(field);
      expect(r.body.issues![0].message).toMatch(message);
    }
    // a CSV beside the Parquet files
    await bucket.upload(
      'mixed/dt=2026-11-20/a.parquet',
      fs.readFileSync(
        path.join(shared, fs.readdirSync(shared)[0], fs.readdirSync(path.join(shared, fs.readdirSync(shared)[0]))[0]),
      ),
    );
    await bucket.upload('mixed/dt=2026-11-21/b.csv', Buffer.from('click,ts\n1,2\n'));
    const mixed = await register({ url: `s3://${BUCKET}/mixed/`, name: 'bad' });
    expect(mixed.body.issues![0].message).toMatch(/s3:\/\/ads-logs\/mixed\/dt=2026-11-21\/b\.csv is not a Parquet object/);
    // schema drift: one partition with a column of another type; one without the label
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const tmp = path.join(env.dataDir, 'drift');
    fs.mkdirSync(tmp, { recursive: true });
    const first = path.join(shared, 'dt=2026-11-20');
    const src = path.join(first, fs.readdirSync(first)[0]);
    const col = world.truth.features.find((f) => f.kind === 'numeric' && world.truth.base.includes(f.name))!.name;
    await con.run(
      `COPY (SELECT * REPLACE (CAST(${col} AS VARCHAR) AS ${col}) FROM read_parquet('${src}', hive_partitioning = false)) TO '${tmp}/drift.parquet' (FORMAT parquet)`,
    );
    await con.run(
      `COPY (SELECT * EXCLUDE (click) FROM read_parquet('${src}', hive_partitioning = false)) TO '${tmp}/nolabel.parquet' (FORMAT parquet)`,
    );
    con.closeSync();
    db.closeSync();
    await bucket.upload('drift/dt=2026-11-20/a.parquet', fs.readFileSync(src));
    await bucket.upload('drift/dt=2026-11-21/a.parquet', fs.readFileSync(`${tmp}/drift.parquet`));
    const drift = await register({ url: `s3://${BUCKET}/drift/`, name: 'bad' });
    expect(drift.body.issues![0].message).toMatch(
      new RegExp(
        `schema drift: column "${col}" is (DOUBLE|INTEGER|BIGINT|FLOAT) in s3://ads-logs/drift/dt=2026-11-20/a.parquet but VARCHAR in s3://ads-logs/drift/dt=2026-11-21/a.parquet`,
      ),
    );
    await bucket.upload('nolabel/dt=2026-11-20/a.parquet', fs.readFileSync(src));
    await bucket.upload('nolabel/dt=2026-11-21/a.parquet', fs.readFileSync(`${tmp}/nolabel.parquet`));
    const nolabel = await register({ url: `s3://${BUCKET}/nolabel/`, name: 'bad' });
    expect(nolabel.body.issues![0]).toMatchObject({
      path: 'label',
      message: expect.stringMatching(/column "click" is not in s3:\/\/ads-logs\/nolabel\/dt=2026-11-21\/a\.parquet/),
    });
    expect(await count()).toBe(before);
  });
});

describe('subtract on sets registered by reference', () => {
  const run = async (name: string) => {
    const list = (await http.call('GET', '/sample-sets?pageSize=500')).body.items as { id: string; name: string }[];
    const ss = list.find((s) => s.name === name)!;
    const r = await http.call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'ads',
      name: `subtract on ${name}`,
      spec: { model: { sampleSet: ss.id, features: world.truth.base }, seed: 7 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return http.finished(String(r.body.id), 600_000, `subtract on ${name}`);
  };

  it('runs from S3 and from the shared path with the same verdicts, keeping every strong feature', async () => {
    const a = await run('clicks-s3');
    expect(a.status, JSON.stringify(a.error ?? a.trials?.filter((t: { status: string }) => t.status !== 'succeeded'))).toBe(
      'succeeded',
    );
    const b = await run('clicks-shared');
    expect(b.status).toBe('succeeded');
    const removed = (e: Record<string, any>) =>
      (e.result.removable as { feature?: string; name?: string }[]).map((f) => f.feature ?? f.name).sort();
    expect(removed(a)).toEqual(removed(b));
    const strong = world.truth.features.filter((f) => f.role === 'strong').map((f) => f.name);
    for (const s of strong) expect(removed(a)).not.toContain(s);
    expect(removed(a).length).toBeGreaterThan(0);
    // the score trial read the S3 set through this host's cache: fetched once, then served from disk
    const fetched = (e: Record<string, any>) =>
      (e.trials as { kind: string; metrics: { store?: { fetchedBytes: number; objects: number } } }[]).find(
        (t) => t.kind === 'score',
      )!.metrics.store!;
    expect(fetched(a)).toMatchObject({ objects: 4 });
    expect(fetched(a).fetchedBytes).toBeGreaterThan(0);
    const again = await run('clicks-s3');
    expect(again.status).toBe('succeeded');
    expect(fetched(again)).toEqual({ objects: 4, fetchedBytes: 0 });
    expect(removed(again)).toEqual(removed(a));
  });

  it('an object changed since registration fails the experiment with what to do', async () => {
    const reg = await register({
      url: `s3://${BUCKET}/daily/clicks/`,
      name: 'clicks-then-changed',
      partitions: { column: 'dt', to: '2026-11-21' },
    });
    expect(reg.status).toBe(201);
    const key = (reg.body.objects as { key: string }[])[1].key;
    const other = path.join(shared, 'dt=2026-11-23');
    await bucket.upload(key, fs.readFileSync(path.join(other, fs.readdirSync(other)[0])));
    const e = await run('clicks-then-changed');
    expect(e.status).toBe('failed');
    expect(JSON.stringify(e)).toMatch(/changed since it was registered .*register it again for a new data version/);
    const again = await register({
      url: `s3://${BUCKET}/daily/clicks/`,
      name: 'clicks-changed-v2',
      partitions: { column: 'dt', to: '2026-11-21' },
    });
    expect(again.body.dataVersion).not.toBe(reg.body.dataVersion);
  });
});

describe('the cost ledger on a set registered by reference', () => {
  it("measures its columns' storage through the host's cache: the counts of the same rows read directly", async () => {
    // the shared path's copy: the S3 folder had a partition replaced above
    const reg = await register({ url: `file://${shared}/`, name: 'clicks-costs' });
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    const picked = ['numeric', 'categorical'].map((k) => world.truth.features.find((f) => f.kind === k)!);
    for (const f of picked) {
      const r = await http.call('POST', '/features', { name: f.name, businessLine: 'ads', kind: f.kind });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const m = await http.call('POST', '/features/costs/measure', {
      businessLine: 'ads',
      features: picked.map((f) => f.name),
      compute: false,
    });
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    expect(m.body.measurement.skipped).toEqual([]);
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    try {
      for (const f of picked) {
        const e = (m.body.features as { name: string; storage: { source: string; value: number; how: string } }[]).find(
          (x) => x.name === f.name,
        )!;
        expect(e.storage.source).toBe('measured');
        expect(e.storage.how).toContain(
          `over ${world.truth.rows.toLocaleString('en-US')} rows of table clicks-costs (sample set by reference)`,
        );
        // the rule of the ledger (cost-rules.ts) applied to the same rows read directly: a float32 a
        // number; a category stored as text its mean UTF-8 length, as an integer an int32
        const [[type]] = (
          await con.runAndReadAll(`SELECT typeof("${f.name}") FROM read_parquet('${world.file}') LIMIT 1`)
        ).getRows();
        const [[meanText]] = (
          await con.runAndReadAll(`SELECT avg(strlen(CAST("${f.name}" AS VARCHAR))) FROM read_parquet('${world.file}')`)
        ).getRows();
        const expected = f.kind === 'numeric' || !/VARCHAR/i.test(String(type)) ? 4 : Number(meanText);
        expect(e.storage.value, f.name).toBeCloseTo(expected, 6);
      }
    } finally {
      con.closeSync();
      db.closeSync();
    }
  });
});
