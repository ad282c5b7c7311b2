import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { cli } from '../support/processes';

/** Registering expression features through the API: checked against the set, 400 at the path inside the expression. */
let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
const { call, upload } = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  await call('POST', '/business-lines', { name: 'feed' });
  const csv = path.join(env.dataDir, 'in', 'small.csv');
  writeSmallCsv(csv, 300);
  expect((await upload('/sample-sets', csv, { name: 'small', businessLine: 'feed', label: 'click', time: 'ts' })).status).toBe(201);
  expect((await upload('/sample-sets', csv, { name: 'untimed', businessLine: 'feed', label: 'click' })).status).toBe(201);
});
afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

const count = async () => Number((await ds.query('SELECT count(*)::int AS n FROM features'))[0].n);
const jobs = async () => Number((await ds.query('SELECT count(*)::int AS n FROM experiments'))[0].n);

describe('expression features in the registry', () => {
  it('registers an expression from text or JSON with its kind, text and lineage', async () => {
    const r = await call('POST', '/features', {
      name: 'color_rate_7d',
      businessLine: 'feed',
      sampleSet: 'small',
      expressionText: 'rate(by: color, over: 7d)',
      description: 'click rate of the colour over the week before',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      kind: 'numeric',
      sourceColumn: null,
      featureTableId: null,
      expression: {
        text: 'rate(by: color, over: 7d)',
        sampleSet: 'small',
        lineage: { columns: ['color'], refs: [], readsLabel: true, historySeconds: 604800 },
      },
    });
    const j = await call('POST', '/features', {
      name: 'strong_x_color',
      businessLine: 'feed',
      sampleSet: 'small',
      expression: { op: 'cross', args: [{ op: 'bucketize', arg: { col: 'strong' }, boundaries: [-0.5, 0, 0.5] }, { col: 'color' }], buckets: 64 },
    });
    expect(j.status, JSON.stringify(j.body)).toBe(201);
    expect(j.body).toMatchObject({ kind: 'categorical', expression: { text: 'cross(bucketize(strong, [-0.5, 0, 0.5]), color, buckets: 64)' } });
    // another expression may name it; its lineage follows the reference
    const ref = await call('POST', '/features', { name: 'rate_ratio', businessLine: 'feed', sampleSet: 'small', expressionText: '@color_rate_7d / (1 + weak)' });
    expect(ref.status, JSON.stringify(ref.body)).toBe(201);
    expect(ref.body.expression.lineage).toMatchObject({ columns: ['color', 'weak'], refs: ['color_rate_7d'] });
    const got = await call('GET', `/features/${ref.body.id}`);
    expect(got.body.expression.ast).toEqual({ op: 'div', args: [{ ref: 'color_rate_7d' }, { op: 'add', args: [{ num: 1 }, { col: 'weak' }] }] });
  });

  it.each([
    ['a missing column', { expressionText: 'mean(strong, by: colour, over: 7d)' }, 'expressionText', /at by\.0\.col: unknown column 'colour'/],
    ['a missing column (JSON)', { expression: { op: 'log', arg: { col: 'strenght' } } }, 'expression.arg.col', /unknown column 'strenght'/],
    ['a mean of a categorical', { expression: { op: 'window', agg: 'mean', by: [{ col: 'color' }], of: { col: 'color' }, over: '1d' } }, 'expression.of.col', /mean of a categorical column \('color'\)/],
    ['a window without a time column', { sampleSet: 'untimed', expression: { op: 'window', agg: 'count', by: [{ col: 'color' }], over: '1d' } }, 'expression.over', /needs the sample set's time column/],
    ['a cyclic definition', { name: 'loop', expressionText: '@loop + 1' }, 'expressionText', /cyclic definition: loop -> loop/],
    ['an over-large cross', { expression: { op: 'cross', args: [{ col: 'color' }, { col: 'color' }], buckets: 2 ** 30 } }, 'expression.buckets', /at most 16777216 buckets/],
    ['the label', { expression: { op: 'mul', args: [{ col: 'click' }, { num: 2 }] } }, 'expression.args.0.col', /'click' is the label/],
    ['a kind it does not give', { kind: 'categorical', expressionText: 'strong * 2' }, 'expressionText', /mul\(…\) is numeric, where a categorical value is needed/],
    ['a parse error', { expressionText: 'log(strong' }, 'expressionText', /at column 11: expected '\)'/],
    ['no sample set', { sampleSet: undefined, expressionText: 'log(strong)' }, 'sampleSet', /an expression is read over a sample set/],
    ['an unknown sample set', { sampleSet: 'nope', expressionText: 'log(strong)' }, 'sampleSet', /no sample set "nope"/],
    ['a name a column of the set has', { name: 'weak', expressionText: 'log(strong)' }, 'name', /has a column named "weak"/],
  ])('refuses %s with a 400 at its path, registering nothing', async (_what, body, field, message) => {
    const before = await count();
    const experiments = await jobs();
    const r = await call('POST', '/features', { name: 'bad_expr', businessLine: 'feed', sampleSet: 'small', ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.issues?.[0].path).toBe(field);
    expect(r.body.issues?.[0].message).toMatch(message);
    expect(await count()).toBe(before);
    expect(await jobs()).toBe(experiments);
  });

  it('reads feature-table features by reference, as of each impression, and says where a table cannot be joined', async () => {
    // per colour, a snapshot of a score every 100 seconds of the set's times
    const csv = path.join(env.dataDir, 'in', 'color-stats.csv');
    const lines = ['color,ts,score'];
    for (const [k, color] of ['red', 'green', 'blue'].entries()) for (let t = 1000; t < 1300; t += 100) lines.push(`${color},${t},${k * 10 + (t - 1000) / 100}`);
    fs.writeFileSync(csv, `${lines.join('\n')}\n`);
    const t = await upload('/feature-tables', csv, { name: 'color_stats', businessLine: 'feed', entityKey: 'color', time: 'ts' });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const r = await call('POST', '/features', { name: 'strong_x_score', businessLine: 'feed', sampleSet: 'small', expressionText: 'strong * @score' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.expression.lineage).toMatchObject({ columns: ['strong'], refs: ['score'], tables: [{ feature: 'score', table: 'color_stats' }] });
    const w = await call('POST', '/features', { name: 'score_mean_1d', businessLine: 'feed', sampleSet: 'small', expressionText: 'mean(@score, by: color, over: 1d)' });
    expect(w.status, JSON.stringify(w.body)).toBe(201);
    // its storage is measured from its values: the table joined as of each row
    const m = await call('POST', '/features/costs/measure', { businessLine: 'feed', features: ['strong_x_score'], repeats: 3 });
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    expect(m.body.measurement.skipped).toEqual([]);
    expect((m.body.features as { name: string; storage: { source: string | null } }[])[0].storage.source).toBe('measured');
    // a set without a time cannot join a point-in-time table; a number is no category
    const before = await count();
    const untimed = await call('POST', '/features', { name: 'x1', businessLine: 'feed', sampleSet: 'untimed', expression: { op: 'mul', args: [{ col: 'strong' }, { ref: 'score' }] } });
    expect(untimed.status).toBe(400);
    expect(untimed.body.issues?.[0]).toMatchObject({ path: 'expression.args.1.ref' });
    expect(untimed.body.issues?.[0].message).toMatch(/joined from table color_stats as of each impression's time, and sample set untimed has no time column/);
    const cross = await call('POST', '/features', { name: 'x2', businessLine: 'feed', sampleSet: 'small', kind: 'categorical', expressionText: 'cross(@score, color, buckets: 16)' });
    expect(cross.status).toBe(400);
    expect(cross.body.issues?.[0].message).toMatch(/at args\.0\.ref: feature 'score' \(joined from color_stats\) is a number, not categories/);
    expect(await count()).toBe(before);
    // the command line says where it is joined from
    const as = { ...env.env, ABACUS_API_URL: api.url, ABACUS_API_KEY: env.adminKey };
    const c = await cli(['features', 'expr', '--name', 'score_log', '--domain', 'feed', '--samples', 'small', '--expr', 'log(1 + @score)'], as);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/reads no columns, features score; the row only\n  joined as of each impression: score from table color_stats/);
  });

  it('abacus features expr registers one from the command line, and names the path of a bad one', async () => {
    const as = { ...env.env, ABACUS_API_URL: api.url, ABACUS_API_KEY: env.adminKey };
    const ok = await cli(['features', 'expr', '--name', 'strong_log', '--domain', 'feed', '--samples', 'small', '--expr', 'log(1 + strong)'], as);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/registered numeric feature feed\/strong_log = log\(1 \+ strong\)\n  reads strong; the row only/);
    const before = await count();
    const bad = await cli(['features', 'expr', '--name', 'c', '--domain', 'feed', '--samples', 'small', '--expr', 'mean(color, by: color, over: 1d)'], as);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expressionText: at of\.col: mean of a categorical column \('color'\)/);
    expect(await count()).toBe(before);
    const list = await cli(['features', 'list', '--domain', 'feed'], as);
    expect(list.stdout).toMatch(/strong_log +numeric .*log\(1 \+ strong\)/);
  });

  it('measures the costs of expression features like any feature: storage from their computed values, compute by timing', async () => {
    const r = await call('POST', '/features/costs/measure', { businessLine: 'feed', features: ['color_rate_7d', 'strong_x_color'], repeats: 3 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.measurement.skipped).toEqual([]);
    for (const name of ['color_rate_7d', 'strong_x_color']) {
      const f = (r.body.features as { name: string; storage: { value: number | null; source: string | null } }[]).find((x) => x.name === name)!;
      expect(f.storage.source, name).toBe('measured');
      expect(f.storage.value!, name).toBeGreaterThan(0);
    }
    const stored = (await call('GET', '/features?businessLine=feed&name=color_rate_7d')).body.items[0];
    expect(stored.costs.measured.storage.how).toMatch(/expressions computed over its 300 rows/);
  });
});
