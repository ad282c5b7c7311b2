import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import type { GroundTruth } from '@abacus/samples';
import { createTestEnv, queueKeys, waitUntil, type TestEnv } from '../support/test-env';
import { cli, freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { listDir, writeMalformedCsv, writeSmallCsv } from '../support/fixtures';

let env: TestEnv;
let ds: DataSource;
let api: Proc;
let worker: Proc;
let cliEnv: Record<string, string>;
let world: string;
let truth: GroundTruth;

const count = async (table: string) => Number((await ds.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

beforeAll(async () => {
  const port = await freePort();
  env = await createTestEnv({ ABACUS_API_PORT: String(port), ABACUS_API_URL: `http://127.0.0.1:${port}` });
  // as in the quick start: the CLI's key comes from `abacus keys bootstrap`, not from the environment
  cliEnv = { ...env.env, ABACUS_API_KEY: '' };
  ds = createDataSource(env.config);
  await ds.initialize();
  api = startProcess('dist/apps/api/src/main.js', env.env);
  worker = startProcess('dist/apps/worker/src/main.js', env.env);
  await waitForApi(api, `http://127.0.0.1:${port}`);
  const boot = await cli(['keys', 'bootstrap'], cliEnv);
  expect(boot.code, boot.stderr).toBe(0);
  expect(boot.stdout).toMatch(/created admin key/);
  world = path.join(env.dataDir, 'world');
  const sim = await cli(['sim', '--seed', '11', '--rows', '60000', '--out', world], cliEnv);
  expect(sim.code, sim.stderr).toBe(0);
  truth = JSON.parse(fs.readFileSync(path.join(world, 'ground_truth.json'), 'utf8')) as GroundTruth;
  const demo = await cli(['demo', '--dir', world], cliEnv);
  expect(demo.code, demo.stderr).toBe(0);
  expect(demo.stdout).toMatch(/sample set feed\/demo-feed/);
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  await api?.stop();
  await ds?.destroy();
  await env?.teardown();
});

function writeSpec(name: string, body: unknown): string {
  const file = path.join(env.dataDir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(body));
  return file;
}

describe('e2e: api + worker + CLI on the simulator world', () => {
  it('registering the demo world twice is a no-op the second time', async () => {
    const again = await cli(['demo', '--dir', world], cliEnv);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/already registered/);
    expect(await count('sample_sets')).toBe(truth.domains.length);
  });

  it('runs a score experiment submitted with --wait; planted strong features outrank pure noise', async () => {
    const spec = writeSpec('score', { kind: 'score', businessLine: 'feed', name: 'e2e score', spec: { sampleSet: 'demo-feed' } });
    const r = await cli(['experiment', 'submit', spec, '--wait', '--json'], cliEnv);
    expect(r.code, r.stderr + worker.output()).toBe(0);
    const out = JSON.parse(r.stdout) as {
      id: string;
      status: string;
      results: { featureName: string; scorer: string; value: number }[];
    };
    expect(out.status).toBe('succeeded');

    const stored: { feature_name: string; value: number }[] = await ds.query(
      `SELECT feature_name, value FROM feature_results WHERE experiment_id = $1 AND scorer = 'iv'`,
      [out.id],
    );
    const iv = new Map(stored.map((s) => [s.feature_name, s.value]));
    expect(out.results.filter((x) => x.scorer === 'iv')).toHaveLength(stored.length);
    const inFile = (n: string) => iv.has(n);
    const strong = truth.features.filter((f) => f.role === 'strong' && inFile(f.name)).map((f) => f.name);
    const noise = truth.features.filter((f) => f.role === 'noise' && inFile(f.name)).map((f) => f.name);
    expect(strong.length).toBeGreaterThan(0);
    expect(noise.length).toBeGreaterThan(0);
    const minStrong = Math.min(...strong.map((n) => iv.get(n)!));
    const maxNoise = Math.max(...noise.map((n) => iv.get(n)!));
    expect(minStrong).toBeGreaterThan(maxNoise);

    const show = await cli(['experiment', 'show', out.id], cliEnv);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/features by information value/);
    expect(show.stdout).toContain(strong[0]);
    const list = await cli(['experiment', 'list', '--json', '--kind', 'score'], cliEnv);
    expect((JSON.parse(list.stdout) as { items: { id: string }[] }).items.map((e) => e.id)).toContain(out.id);
  });

  it('finishes an experiment whose worker is killed mid-trial, without duplicated results', async () => {
    const spec = writeSpec('crash', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'demo-feed', featuresPerTrial: 100 },
    });
    const sub = await cli(['experiment', 'submit', spec, '--json'], cliEnv);
    expect(sub.code, sub.stderr).toBe(0);
    const id = (JSON.parse(sub.stdout) as { id: string }).id;
    // a score trial on these rows runs for a few hundred milliseconds: poll often enough not to miss it
    await waitUntil(
      async () => {
        const rows: { status: string }[] = await ds.query(`SELECT status FROM trials WHERE experiment_id = $1`, [id]);
        if (rows.length && rows.every((r) => r.status === 'succeeded'))
          throw new Error('the score trial finished before it was seen running: nothing left to kill');
        return rows.some((r) => r.status === 'running');
      },
      60_000,
      'a running trial',
      10,
    );
    await worker.stop('SIGKILL');
    // the dead worker cannot have finished the row: it is still 'running', owned by a lock that will expire
    const orphaned: { id: string }[] = await ds.query(`SELECT id FROM trials WHERE experiment_id = $1 AND status = 'running'`, [
      id,
    ]);
    expect(orphaned).toHaveLength(1);
    worker = startProcess('dist/apps/worker/src/main.js', env.env);
    const done = await cli(['experiment', 'show', id, '--json'], cliEnv);
    expect(done.code).toBe(0);
    const e = await waitUntil(
      async () => {
        const rows: { status: string }[] = await ds.query('SELECT status FROM experiments WHERE id = $1', [id]);
        return rows[0].status === 'succeeded' || rows[0].status === 'failed' ? rows[0] : null;
      },
      120_000,
      'recovered experiment',
    );
    expect(e.status, worker.output()).toBe('succeeded');
    const attempts: { attempts: number; status: string }[] = await ds.query('SELECT attempts, status FROM trials WHERE id = $1', [
      orphaned[0].id,
    ]);
    expect(attempts).toEqual([{ attempts: 2, status: 'succeeded' }]);
    const features = (await ds.query('SELECT spec FROM experiments WHERE id = $1', [id]))[0].spec.features as string[];
    const dup = await ds.query(
      `SELECT feature_name, count(*) FROM feature_results WHERE experiment_id = $1 GROUP BY feature_name, scorer HAVING count(*) > 1`,
      [id],
    );
    expect(dup).toEqual([]);
    expect(
      await ds.query(`SELECT count(*)::int AS n FROM feature_results WHERE experiment_id = $1 AND scorer = 'iv'`, [id]),
    ).toEqual([{ n: features.length }]);
  });

  it('finishes a subtract experiment whose worker is killed mid-trial, with no duplicated results', async () => {
    const features = truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
    const spec = writeSpec('subtract', {
      kind: 'subtract',
      businessLine: 'feed',
      // two seeds a check: the recovery is the point here, not the checks' power (subtract-truth has that)
      spec: { model: { sampleSet: 'demo-feed', features }, seed: 2, retrainSeeds: 2 },
    });
    const sub = await cli(['experiment', 'submit', spec, '--json'], cliEnv);
    expect(sub.code, sub.stderr).toBe(0);
    const id = (JSON.parse(sub.stdout) as { id: string }).id;
    // the prune trial is the longest (it retrains): kill the worker while it runs
    await waitUntil(
      async () =>
        (await ds.query(`SELECT 1 FROM trials WHERE experiment_id = $1 AND kind = 'prune' AND status = 'running'`, [id])).length >
        0,
      120_000,
      'the prune trial to run',
    );
    await worker.stop('SIGKILL');
    const orphaned: { id: string }[] = await ds.query(`SELECT id FROM trials WHERE experiment_id = $1 AND status = 'running'`, [
      id,
    ]);
    expect(orphaned).toHaveLength(1);
    worker = startProcess('dist/apps/worker/src/main.js', env.env);
    const show = await cli(['experiment', 'show', id], cliEnv);
    expect(show.code).toBe(0);
    const e = await waitUntil(
      async () => {
        const rows: { status: string }[] = await ds.query('SELECT status FROM experiments WHERE id = $1', [id]);
        return ['succeeded', 'failed'].includes(rows[0].status) ? rows[0] : null;
      },
      300_000,
      'the recovered subtract experiment',
    );
    expect(e.status, worker.output()).toBe('succeeded');
    const trials: { kind: string; status: string; attempts: number; id: string }[] = await ds.query(
      'SELECT id, kind, status, attempts FROM trials WHERE experiment_id = $1 ORDER BY seq',
      [id],
    );
    expect(trials.map((t) => [t.kind, t.status])).toEqual([
      ['train', 'succeeded'],
      ['ablate', 'succeeded'],
      ['score', 'succeeded'],
      ['prune', 'succeeded'],
      ['train', 'succeeded'],
    ]);
    expect(trials.find((t) => t.id === orphaned[0].id)?.attempts).toBe(2);
    const dup = await ds.query(
      `SELECT feature_name, scorer, count(*) FROM feature_results WHERE experiment_id = $1 GROUP BY feature_name, scorer HAVING count(*) > 1`,
      [id],
    );
    expect(dup).toEqual([]);
    const perScorer: { scorer: string; n: number }[] = await ds.query(
      `SELECT scorer, count(*)::int AS n FROM feature_results WHERE experiment_id = $1 GROUP BY scorer ORDER BY scorer`,
      [id],
    );
    expect(perScorer).toEqual([
      { scorer: 'iv', n: features.length },
      { scorer: 'prune_rank', n: features.length },
      { scorer: 'shuffle_auc', n: features.length },
    ]);
    const shown = await cli(['experiment', 'show', id], cliEnv);
    expect(shown.stdout).toMatch(/removable: \d+ of \d+ features/);
    expect(shown.stdout).toMatch(/pruning curve:/);
  });

  it('registers a partitioned Parquet folder on a shared path by reference and runs subtract on it from the CLI', async () => {
    // the world's feed samples as two days of a "shared" path: dt=.../part-0.parquet
    const shared = path.join(env.dataDir, 'shared', 'feed');
    const src = path.join(world, 'samples', 'feed.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    for (const [day, cond] of [
      ['2026-11-20', '<'],
      ['2026-11-21', '>='],
    ]) {
      fs.mkdirSync(path.join(shared, `dt=${day}`), { recursive: true });
      await con.run(
        `COPY (SELECT * FROM read_parquet('${src}') WHERE ts ${cond} (SELECT median(ts) FROM read_parquet('${src}'))) TO '${path.join(shared, `dt=${day}`, 'part-0.parquet')}' (FORMAT parquet)`,
      );
    }
    con.closeSync();
    db.closeSync();
    const reg = await cli(
      [
        'samples',
        'register',
        `file://${shared}/`,
        '--name',
        'feed-shared',
        '--domain',
        'feed',
        '--label',
        'click',
        '--time',
        'ts',
        '--json',
      ],
      cliEnv,
    );
    expect(reg.code, reg.stderr).toBe(0);
    const ss = JSON.parse(reg.stdout) as { rowCount: number; location: string; objects: unknown[] };
    expect(ss.location).toBe(`file://${shared}/`);
    expect(ss.objects).toHaveLength(2);
    expect(ss.rowCount).toBe(Number((await ds.query(`SELECT row_count FROM sample_sets WHERE name = 'demo-feed'`))[0].row_count));
    const features = truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
    const spec = writeSpec('subtract-shared', {
      kind: 'subtract',
      businessLine: 'feed',
      // warm checks (fine-tunes of the trained model): the by-reference read is the point here, not
      // the checks' power (subtract-truth has that); from scratch this subtract took 94 s on 2 cores
      spec: { model: { sampleSet: 'feed-shared', features }, seed: 3, retrainSeeds: 3, retrain: 'warm', warmEpochs: 3 },
    });
    const sub = await cli(['experiment', 'submit', spec, '--wait', '--json'], cliEnv);
    expect(sub.code, sub.stderr).toBe(0);
    const e = JSON.parse(sub.stdout) as { status: string; result: { removable: { feature?: string; name?: string }[] } };
    expect(e.status).toBe('succeeded');
    const removed = e.result.removable.map((f) => f.feature ?? f.name);
    for (const strong of truth.features.filter((f) => f.role === 'strong' && features.includes(f.name))) {
      expect(removed).not.toContain(strong.name);
    }
    // bad references: a CLI message naming the field, non-zero exit, nothing registered
    const before = await count('sample_sets');
    const missing = await cli(
      ['samples', 'register', 'file:///nonexistent/abacus/', '--name', 'x', '--domain', 'feed', '--label', 'click'],
      cliEnv,
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/url: file:\/\/\/nonexistent\/abacus\/: no such directory/);
    const mixed = path.join(env.dataDir, 'shared', 'mixed');
    fs.mkdirSync(mixed, { recursive: true });
    fs.copyFileSync(src, path.join(mixed, 'feed.parquet'));
    fs.writeFileSync(path.join(mixed, 'notes.txt'), 'not data');
    const notParquet = await cli(
      ['samples', 'register', `file://${mixed}/`, '--name', 'x', '--domain', 'feed', '--label', 'click'],
      cliEnv,
    );
    expect(notParquet.code).toBe(1);
    expect(notParquet.stderr).toMatch(/url: file:\/\/.*\/mixed\/notes\.txt is not a Parquet object/);
    const range = await cli(
      ['samples', 'register', `file://${shared}/`, '--name', 'x', '--domain', 'feed', '--label', 'click', '--from', '2026-11-21'],
      cliEnv,
    );
    expect(range.code).toBe(1);
    expect(range.stderr).toMatch(/--from \/ --to need --partition <column>/);
    expect(await count('sample_sets')).toBe(before);
  });

  it('`npx abacus` prints nothing but its own output (no npm warnings on stderr)', () => {
    const r = spawnSync('npx', ['abacus', '--help'], { cwd: process.cwd(), env: process.env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: abacus/);
    expect(r.stderr).toBe('');
  });

  it('prints a local WOE/IV report with `abacus iv --json`, sorted by IV', async () => {
    const r = await cli(['iv', path.join(world, 'samples', 'mall.parquet'), '--label', 'click', '--json'], cliEnv);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout) as {
      features: {
        name: string;
        kind: string;
        iv: number;
        bins: { range_or_values: unknown; count: number; events: number; woe: number }[];
      }[];
    };
    expect(rep.features.length).toBeGreaterThan(5);
    for (let i = 1; i < rep.features.length; i++) expect(rep.features[i - 1].iv).toBeGreaterThanOrEqual(rep.features[i].iv);
    expect(Object.keys(rep.features[0].bins[0])).toEqual(expect.arrayContaining(['range_or_values', 'count', 'events', 'woe']));
    const bad = await cli(['iv', path.join(world, 'samples', 'mall.parquet'), '--label', 'clik'], cliEnv);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/clik/);
  });
});

describe('e2e: bad input through the CLI is rejected and nothing is written', () => {
  it('malformed CSV, unknown label column and an invalid spec', async () => {
    const before = {
      sampleSets: await count('sample_sets'),
      experiments: await count('experiments'),
      trials: await count('trials'),
      keys: (await queueKeys(env.config)).filter((k) => /:\w{8}-\w{4}-/.test(k)).length,
      files: listDir(path.join(env.dataDir, 'sample-sets')).length,
    };
    const bad = path.join(env.dataDir, 'bad.csv');
    writeMalformedCsv(bad);
    const r1 = await cli(['samples', 'import', bad, '--name', 'bad', '--domain', 'feed', '--label', 'click'], cliEnv);
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(/HTTP 400/);
    expect(r1.stderr).toMatch(/file: bad\.csv: line 4 has 5 field\(s\) where the header has 3/);

    const good = path.join(env.dataDir, 'good.csv');
    writeSmallCsv(good, 200);
    const r2 = await cli(['samples', 'import', good, '--name', 'good', '--domain', 'feed', '--label', 'clicked'], cliEnv);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/label: column "clicked" is not in the file/);

    const spec = writeSpec('invalid', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'demo-feed', binning: { maxBins: 1 }, extra: 1 },
    });
    const r3 = await cli(['experiment', 'submit', spec, '--wait'], cliEnv);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(/spec\.binning\.maxBins/);
    expect(r3.stderr).toMatch(/spec: Unrecognized key/i);

    const notJson = path.join(env.dataDir, 'broken.json');
    fs.writeFileSync(notJson, '{ "kind": ');
    const r4 = await cli(['experiment', 'submit', notJson], cliEnv);
    expect(r4.code).toBe(1);
    expect(r4.stderr).toMatch(/not valid JSON/);

    const r5 = await cli(['samples', 'import', good, '--name', 'good'], cliEnv);
    expect(r5.code).not.toBe(0);
    expect(r5.stderr).toMatch(/--domain/);

    expect({
      sampleSets: await count('sample_sets'),
      experiments: await count('experiments'),
      trials: await count('trials'),
      keys: (await queueKeys(env.config)).filter((k) => /:\w{8}-\w{4}-/.test(k)).length,
      files: listDir(path.join(env.dataDir, 'sample-sets')).length,
    }).toEqual(before);
  });
});
