import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { DuckDBInstance } from '@duckdb/node-api';
import { createDataSource } from '@abacus/data';
import { readTable } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, queueKeys, type TestEnv } from '../support/test-env';
import { listDir, writeMalformedCsv, writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { cli } from '../support/processes';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
/** inputs live outside the data directory, so "nothing left behind" can look at all of it */
let inDir: string;

const { call, upload } = apiClient(
  () => api.url,
  () => env.adminKey,
);
const MAX_CATEGORIES = 50;

const count = async (table: string) => Number((await ds.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

/** Everything an import could leave behind: rows, files in the data directory (spool included), queue keys. */
async function snapshot() {
  return {
    sampleSets: await count('sample_sets'),
    featureTables: await count('feature_tables'),
    features: await count('features'),
    experiments: await count('experiments'),
    dataDir: listDir(env.dataDir),
    jobs: (await queueKeys(env.config)).filter((k) => !k.endsWith(':meta')).sort(),
  };
}

function write(name: string, text: string): string {
  const f = path.join(inDir, name);
  fs.writeFileSync(f, text);
  return f;
}

async function duck(sql: string): Promise<void> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    await con.run(sql);
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

beforeAll(async () => {
  env = await createTestEnv({
    ABACUS_MAX_CATEGORIES: String(MAX_CATEGORIES),
    ABACUS_JSON_LIMIT_KB: '1024',
    ABACUS_UPLOAD_LIMIT_MB: '1',
  });
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  inDir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-hostile-in-'));
  expect((await call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
  if (inDir) fs.rmSync(inDir, { recursive: true, force: true });
});

interface Case {
  name: string;
  file: () => Promise<string> | string;
  /** the file name the client sends (default: the file's own) */
  sendAs?: string;
  fields?: Record<string, string>;
  path: string;
  message: RegExp;
}

/** Inputs shared by both import routes: the file itself is bad. */
const fileCases = (): Case[] => [
  {
    name: 'malformed CSV (ragged row)',
    file: () => (writeMalformedCsv(path.join(inDir, 'ragged.csv')), path.join(inDir, 'ragged.csv')),
    path: 'file',
    message: /ragged\.csv: line 4 has 5 field\(s\) where the header has 3/,
  },
  {
    name: 'CSV whose lines have different numbers of fields (a short line first)',
    file: () => write('uneven.csv', 'ts,strong,click\n1,0.5,1\n2,0.1\n3,0.7,1,9\n'),
    path: 'file',
    message: /uneven\.csv: line 3 has 2 field\(s\) where the header has 3/,
  },
  {
    name: 'malformed Parquet (magic bytes, garbage inside)',
    file: () => write('broken.parquet', `PAR1${'x'.repeat(200)}PAR1`),
    path: 'file',
    message: /cannot read Parquet broken\.parquet/,
  },
  {
    name: 'a text file named .parquet',
    file: () => write('notes.parquet', 'just some text\nnot parquet\n'),
    path: 'file',
    message: /notes\.parquet is not a Parquet file/,
  },
  { name: 'empty file', file: () => write('empty.csv', ''), path: 'file', message: /empty\.csv is empty/ },
  { name: 'header only', file: () => write('header.csv', 'user_id,x,click\n'), path: 'file', message: /header but no rows/ },
  {
    name: 'NaN and Infinity in a numeric column',
    file: () => write('nan.csv', 'user_id,x,click\n1,0.5,0\n2,NaN,1\n3,inf,0\n4,1.5,1\n'),
    path: 'file',
    message: /column "x" has 2 non-finite value\(s\).*first in data row 2.*allowNonFinite/,
  },
  {
    name: 'duplicate column names',
    file: () => write('dup.csv', 'user_id,a,a,click\n1,1,2,0\n2,3,4,1\n'),
    path: 'file',
    message: /duplicate column name "a" \(columns 2 and 3\)/,
  },
  {
    name: 'column names that differ only in case',
    file: () => write('case.csv', 'user_id,Age,age,click\n1,1,2,0\n2,3,4,1\n'),
    path: 'file',
    message: /"Age" and "age" differ only in case/,
  },
  {
    name: '5,000 columns',
    file: () => {
      const cols = Array.from({ length: 4998 }, (_, i) => `c${i}`);
      return write('wide.csv', `user_id,${cols.join(',')},click\n1,${cols.map(() => '1').join(',')},0\n`);
    },
    path: 'file',
    message: /5000 columns, more than the limit of 2000 \(ABACUS_MAX_COLUMNS\)/,
  },
  {
    name: 'huge categorical cardinality',
    file: () => {
      const rows = Array.from({ length: 400 }, (_, i) => `${i},item_${i * 7919},${i % 2}`);
      return write('wide-cat.csv', `user_id,item,click\n${rows.join('\n')}\n`);
    },
    path: 'file',
    message: /column "item" has about \d+ distinct values, more than the limit of 50 \(ABACUS_MAX_CATEGORIES\)/,
  },
  {
    name: 'a file name with ../',
    file: () => {
      writeSmallCsv(path.join(inDir, 'fine.csv'), 50);
      return path.join(inDir, 'fine.csv');
    },
    sendAs: '../../escape.csv',
    path: 'file',
    message: /must be a plain name without directories/,
  },
  {
    name: 'an unsupported extension',
    file: () => write('table.txt', 'user_id,click\n1,0\n'),
    path: 'file',
    message: /unsupported file type "\.txt"/,
  },
];

const sampleSetCases = (): Case[] => [
  ...fileCases(),
  {
    name: 'missing label column',
    file: () => write('nolabel.csv', 'user_id,x,clicked\n1,1,0\n2,2,1\n'),
    path: 'label',
    message: /column "click" is not in the file/,
  },
  {
    name: 'label column not numeric or boolean',
    file: () => write('textlabel.csv', 'user_id,x,click\n1,1,abc\n2,2,def\n'),
    path: 'label',
    message: /type VARCHAR; a label must be numeric \(0\/1\) or boolean/,
  },
  {
    name: 'non-binary label (3 and 7) without positive',
    file: () => write('label37.csv', 'user_id,x,click\n1,1,3\n2,2,7\n3,3,3\n'),
    path: 'label',
    message: /holds 3 and 7; a label must be 0\/1 or true\/false, or name the event value with "positive"/,
  },
  {
    name: 'label with three classes',
    file: () => write('label3.csv', 'user_id,x,click\n1,1,0\n2,2,1\n3,3,2\n'),
    path: 'label',
    message: /exactly 2 classes, found 3 \(0, 1, 2\)/,
  },
  {
    name: 'label with missing values',
    file: () => write('labelnull.csv', 'user_id,x,click\n1,1,0\n2,2,\n3,3,1\n'),
    path: 'label',
    message: /1 missing or non-finite value/,
  },
  {
    name: 'positive that is not a label value',
    file: () => write('label37b.csv', 'user_id,x,click\n1,1,3\n2,2,7\n'),
    fields: { positive: '9' },
    path: 'positive',
    message: /"9" is not a value of label "click" \(values: 3, 7\)/,
  },
  {
    name: 'time column that is text',
    file: () => write('texttime.csv', 'user_id,ts,click\n1,abc,0\n2,def,1\n'),
    fields: { time: 'ts' },
    path: 'time',
    message: /neither numeric nor a timestamp/,
  },
  {
    name: 'an unknown form field',
    file: () => write('ok1.csv', 'user_id,x,click\n1,1,0\n2,2,1\n'),
    fields: { lable: 'click' },
    path: '(root)',
    message: /lable/,
  },
  {
    name: 'a bad share-with entry',
    file: () => write('ok2.csv', 'user_id,x,click\n1,1,0\n2,2,1\n'),
    fields: { shareWith: 'feed,Not A Line' },
    path: 'shareWith.1',
    message: /lower-case/,
  },
];

const featureTableCases = (): Case[] => [
  ...fileCases(),
  {
    name: 'missing entity key column',
    file: () => write('nokey.csv', 'uid,x\n1,1\n2,2\n'),
    path: 'entityKey',
    message: /column "user_id" is not in the file/,
  },
];

async function expectRejected(route: string, c: Case, fields: Record<string, string>): Promise<void> {
  const file = await c.file();
  const before = await snapshot();
  const r = await upload(route, file, { ...fields, ...c.fields }, c.sendAs);
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  const issue = r.body.issues?.find((i) => i.path === c.path);
  expect(issue, JSON.stringify(r.body)).toBeDefined();
  expect(issue!.message).toMatch(c.message);
  // no server path in any message: neither the data directory, nor the temp dir, nor any absolute path
  const text = JSON.stringify(r.body);
  expect(text).not.toContain(env.dataDir);
  expect(text).not.toContain(os.tmpdir());
  expect(text).not.toMatch(/[\s'"(]\/[a-z]+\//i);
  expect(await snapshot()).toEqual(before);
}

describe('hostile and malformed imports: a 400 naming the field, nothing left behind', () => {
  for (const c of sampleSetCases()) {
    it(`sample set: ${c.name}`, async () => {
      await expectRejected('/sample-sets', c, { name: 'hostile', businessLine: 'feed', label: 'click' });
    });
  }
  for (const c of featureTableCases()) {
    it(`feature table: ${c.name}`, async () => {
      await expectRejected('/feature-tables', c, { name: 'hostile', businessLine: 'feed', entityKey: 'user_id' });
    });
  }

  it('nothing was written by any of them, and the spool directory is empty', async () => {
    expect(await count('sample_sets')).toBe(0);
    expect(await count('feature_tables')).toBe(0);
    expect(listDir(path.join(env.dataDir, 'tmp'))).toEqual([]);
    expect(listDir(path.join(env.dataDir, 'sample-sets'))).toEqual([]);
    expect(fs.existsSync(path.resolve(env.dataDir, 'tmp', '../../escape.csv'))).toBe(false);
  });
});

describe('labels: checked at import and again at submit', () => {
  it('imports a 3/7 label with positive=7 (label = value == 7) and scores it with that event value', async () => {
    const f = write(
      'label37-ok.csv',
      `ts,x,click\n${Array.from({ length: 40 }, (_, i) => `${i},${i % 5},${i % 3 === 0 ? 7 : 3}`).join('\n')}\n`,
    );
    const r = await upload('/sample-sets', f, {
      name: 'sevens',
      businessLine: 'feed',
      label: 'click',
      positive: '7',
      time: 'ts',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.labelStats).toEqual({
      binary: true,
      classes: ['3', '7'],
      positive: '7',
      explicitPositive: true,
      events: 14,
      nonEvents: 26,
    });
    const e = await call('POST', '/experiments', { kind: 'score', businessLine: 'feed', spec: { sampleSet: 'sevens' } });
    expect(e.status, JSON.stringify(e.body)).toBe(201);
    const trials = e.body.trials as { params: { positive?: string } }[];
    expect(trials.every((t) => t.params.positive === '7')).toBe(true);
  });

  it('refuses at submit a sample set whose stored label stats are missing or not binary, naming the spec field', async () => {
    const f = path.join(inDir, 'small.csv');
    writeSmallCsv(f, 100);
    const r = await upload('/sample-sets', f, { name: 'legacy', businessLine: 'feed', label: 'click' });
    expect(r.status).toBe(201);
    expect(r.body.labelStats).toMatchObject({ binary: true, classes: ['0', '1'], positive: '1', explicitPositive: false });
    const experiments = await count('experiments');
    await ds.query(`UPDATE sample_sets SET label_stats = NULL WHERE name = 'legacy'`);
    const score = await call('POST', '/experiments', { kind: 'score', businessLine: 'feed', spec: { sampleSet: 'legacy' } });
    expect(score.status).toBe(400);
    expect(score.body.issues?.[0]).toMatchObject({ path: 'spec.sampleSet' });
    expect(score.body.issues?.[0].message).toMatch(/no label statistics.*import it again/);
    await ds.query(
      `UPDATE sample_sets SET label_stats = '{"binary":false,"classes":["3","7"],"positive":"7","explicitPositive":false,"events":1,"nonEvents":1}' WHERE name = 'legacy'`,
    );
    const sub = await call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'legacy' } },
    });
    expect(sub.status).toBe(400);
    expect(sub.body.issues?.[0]).toMatchObject({ path: 'spec.model.sampleSet' });
    expect(sub.body.issues?.[0].message).toMatch(/is not binary \(values: 3, 7\)/);
    const add = await call('POST', '/experiments', {
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'legacy', features: ['strong'] }, candidates: ['weak'] },
    });
    expect(add.status).toBe(400);
    expect(add.body.issues?.[0]).toMatchObject({ path: 'spec.base.sampleSet' });
    expect(await count('experiments')).toBe(experiments);
  });
});

describe('non-finite numbers allowed on request', () => {
  it('stores NaN / Infinity as missing values and says so in the response', async () => {
    const f = write('nan-ok.csv', 'user_id,x,y,click\n1,0.5,1,0\n2,NaN,2,1\n3,-inf,3,0\n4,1.5,Infinity,1\n');
    const r = await upload('/sample-sets', f, { name: 'nan-ok', businessLine: 'feed', label: 'click', allowNonFinite: 'true' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.warnings).toEqual([
      'column "x": 2 non-finite value(s) (NaN or Infinity) stored as missing, the first in data row 2',
      'column "y": 1 non-finite value(s) (NaN or Infinity) stored as missing, the first in data row 4',
    ]);
    const stored = path.join(env.dataDir, (r.body.files as string[])[0]);
    const t = await readTable(stored, { columns: ['x', 'y'] });
    const x = t.columns[0];
    const y = t.columns[1];
    if (x.kind !== 'numeric' || y.kind !== 'numeric') throw new Error('expected numeric columns');
    expect(Array.from(x.values).map((v) => (Number.isNaN(v) ? null : v))).toEqual([0.5, null, null, 1.5]);
    expect(Array.from(y.values).map((v) => (Number.isNaN(v) ? null : v))).toEqual([1, 2, 3, null]);
    // missing in the Parquet file, not NaN
    const nulls = path.join(inDir, 'nulls.json');
    await duck(`COPY (SELECT count(*) FILTER (WHERE x IS NULL) AS n FROM read_parquet('${stored}')) TO '${nulls}' (FORMAT json)`);
    expect(JSON.parse(fs.readFileSync(nulls, 'utf8').trim())).toEqual({ n: 2 });
  });

  it('a Parquet upload with non-finite values is rejected the same way', async () => {
    const f = path.join(inDir, 'nan.parquet');
    await duck(
      `COPY (SELECT * FROM (VALUES (1, 0.5::DOUBLE, 0), (2, 'nan'::DOUBLE, 1)) t(user_id, x, click)) TO '${f}' (FORMAT parquet)`,
    );
    const before = await snapshot();
    const r = await upload('/sample-sets', f, { name: 'nan-pq', businessLine: 'feed', label: 'click' });
    expect(r.status).toBe(400);
    expect(r.body.issues?.[0].message).toMatch(/column "x" has 1 non-finite value\(s\).*first in data row 2/);
    expect(await snapshot()).toEqual(before);
  });
});

describe('request bodies and parameters', () => {
  it('answers a 20 MB JSON body with 413 naming the limit, and writes nothing', async () => {
    const before = await snapshot();
    const lines = await count('business_lines');
    const res = await fetch(`${api.url}/api/v1/business-lines`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.adminKey}` },
      body: JSON.stringify({ name: 'big', description: 'x'.repeat(20 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { message: string; issues: { path: string }[] };
    expect(body.message).toMatch(/larger than the limit of 1024 KB \(ABACUS_JSON_LIMIT_KB\)/);
    expect(await count('business_lines')).toBe(lines);
    expect(await snapshot()).toEqual(before);
  });

  it('answers an upload over ABACUS_UPLOAD_LIMIT_MB with 413 naming the limit, leaving no spooled file', async () => {
    const rows = Array.from({ length: 120_000 }, (_, i) => `${i},${i % 97},${i % 2}`);
    const f = write('big.csv', `user_id,x,click\n${rows.join('\n')}\n`);
    expect(fs.statSync(f).size).toBeGreaterThan(1024 * 1024);
    const before = await snapshot();
    const r = await upload('/sample-sets', f, { name: 'big', businessLine: 'feed', label: 'click' });
    expect(r.status).toBe(413);
    expect(r.body.message).toMatch(/larger than the limit of 1 MB \(ABACUS_UPLOAD_LIMIT_MB\)/);
    expect(await snapshot()).toEqual(before);
  });

  it('answers malformed JSON with 400, not 500', async () => {
    const res = await fetch(`${api.url}/api/v1/experiments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.adminKey}` },
      body: '{"kind": "score", "businessLine": ',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe('request body is not valid JSON');
  });

  it('names an unknown body field instead of dropping it', async () => {
    const r = await call('POST', '/business-lines', { name: 'search', descripton: 'typo' });
    expect(r.status).toBe(400);
    expect(r.body.issues?.[0].message).toMatch(/descripton/);
  });

  it('names a bad UUID path parameter', async () => {
    for (const route of ['/experiments/nope', '/experiments/nope/results', '/sample-sets/1', '/features/x', '/models/12345']) {
      const r = await call('GET', route);
      expect(r.status, route).toBe(400);
      expect(r.body.issues, route).toEqual([{ path: 'id', message: 'must be a UUID', code: 'invalid_format' }]);
    }
    const cancel = await call('POST', '/experiments/not-a-uuid/cancel');
    expect(cancel.status).toBe(400);
    expect(cancel.body.issues?.[0].path).toBe('id');
    const line = await call('GET', '/business-lines/Bad%20Line');
    expect(line.status).toBe(400);
    expect(line.body.issues?.[0].path).toBe('name');
  });

  it('names unknown and bad query parameters', async () => {
    const r = await call('GET', '/sample-sets?pagesize=10');
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.issues)).toMatch(/pagesize/);
    const k = await call('GET', '/experiments?kind=multiply-everything');
    expect(k.status).toBe(400);
    expect(k.body.issues?.[0].path).toBe('kind');
    const f = await call('GET', '/features?featureTableId=zzz');
    expect(f.body.issues?.[0]).toMatchObject({ path: 'featureTableId', message: 'must be a UUID' });
  });
});

describe('CLI flags: a bad value names the flag and exits non-zero', () => {
  const cases: { args: string[]; message: RegExp }[] = [
    {
      args: ['samples', 'import', 'x.csv', '--name', 'bad name', '--domain', 'feed', '--label', 'click'],
      message: /--name: letters, digits/,
    },
    {
      args: ['samples', 'import', 'x.csv', '--name', 'ok', '--domain', 'Feed!', '--label', 'click'],
      message: /--domain: lower-case letters/,
    },
    { args: ['features', 'import-table', 'x.csv', '--name', 'u', '--domain', 'feed', '--key', ''], message: /--key: / },
    { args: ['experiment', 'show', 'not-a-uuid'], message: /<id>: must be a UUID/ },
    { args: ['experiment', 'cancel', '12'], message: /<id>: must be a UUID/ },
    { args: ['experiment', 'list', '--page-size', '0'], message: /--page-size: / },
    { args: ['experiment', 'list', '--status', 'done'], message: /--status: / },
    { args: ['experiment', 'submit', 'x.json', '--timeout', 'soon'], message: /--timeout: / },
    { args: ['lines', 'create', 'Bad Line'], message: /<name>: lower-case letters/ },
    { args: ['iv', 'x.csv', '--label', 'y', '--min-bin-share', '0.9'], message: /--min-bin-share: / },
    { args: ['sim', '--seed', '-1', '--rows', '5000', '--out', 'x'], message: /--seed: / },
  ];
  for (const c of cases) {
    it(`abacus ${c.args.join(' ')}`, async () => {
      // no API behind this URL: a flag error must come before any request
      const r = await cli(c.args, { ...env.env, ABACUS_API_URL: 'http://127.0.0.1:9' }, 60_000);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(c.message);
      expect(r.stderr).not.toMatch(/cannot reach/);
    });
  }

  it('imports through the CLI with --positive and reports the stored event value', async () => {
    const f = write('cli37.csv', `x,click\n${Array.from({ length: 20 }, (_, i) => `${i},${i % 4 === 0 ? 7 : 3}`).join('\n')}\n`);
    const r = await cli(
      [
        '--api',
        api.url,
        'samples',
        'import',
        f,
        '--name',
        'cli37',
        '--domain',
        'feed',
        '--label',
        'click',
        '--positive',
        '7',
        '--json',
      ],
      env.env,
      60_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).labelStats).toMatchObject({ positive: '7', explicitPositive: true, events: 5, nonEvents: 15 });
    const bad = await cli(
      ['--api', api.url, 'samples', 'import', f, '--name', 'cli37b', '--domain', 'feed', '--label', 'click'],
      env.env,
      60_000,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/label: column "click" holds 3 and 7.*--positive 7/);
  });
});
