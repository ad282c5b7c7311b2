import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTable } from '../io/table-reader';
import type { CategoricalTableColumn, MultiIdTableColumn, NumericTableColumn, Table } from '../io/table.types';
import { FEATURE_CATALOG } from '../simulator/feature-catalog';
import { simulateWorld } from '../simulator/simulator.service';
import { writeWorld } from '../simulator/world-writer';
import type { BuiltSamples, EncodedSplit, FeatureDef, SampleBuildRequest } from './sample-build.types';
import { buildSamples } from './sample-builder';

const TABLE = {
  user: { file: 'users.parquet', key: 'user_id', time: 'ts' },
  item: { file: 'items.parquet', key: 'item_id', time: null },
  context: { file: 'contexts.parquet', key: 'context_id', time: null },
} as const;

let dir: string;
let testFrom: number;
let built: BuiltSamples;
let flat: Table;
let request: SampleBuildRequest;
const LINE = 'search';

beforeAll(async () => {
  const world = simulateWorld({ seed: 11, rows: 30_000 });
  testFrom = world.groundTruth.testFrom;
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-build-sim-'));
  await writeWorld(world, dir);
  // every catalog feature, joined from the raw tables by key (users point-in-time on ts)
  const features: FeatureDef[] = FEATURE_CATALOG.map((spec) => {
    const t = TABLE[spec.table];
    return {
      name: spec.name,
      kind: spec.kind,
      source: { kind: 'table', file: path.join(dir, t.file), entityKey: t.key, sampleKey: t.key, timeColumn: t.time },
    };
  });
  request = {
    samples: { file: path.join(dir, 'impressions.parquet'), label: 'click', time: 'ts', groupKey: 'impression_id' },
    features,
    split: { testFrom },
    filter: { column: 'domain', values: [LINE] },
  };
  built = await buildSamples(request);
  // the simulator's own flat, point-in-time joined samples of the line
  flat = await readTable(path.join(dir, `samples/${LINE}.parquet`));
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('buildSamples on the simulated world', () => {
  it('joins impressions to users (ASOF on ts), items and contexts exactly as the simulator flat samples', () => {
    const column = (name: string) => flat.columns.find((c) => c.name === name)!;
    const impId = (column('impression_id') as NumericTableColumn).values;
    const ts = (column('ts') as NumericTableColumn).values;
    const click = (column('click') as NumericTableColumn).values;
    const rowOfImp = new Map<number, number>();
    impId.forEach((id, k) => rowOfImp.set(id, k));
    const isTrain = (k: number): boolean => ts[k] < testFrom;

    // rows of each split → row of the flat file (matched by impression_id); together they cover the file once
    const rowsOf = (s: EncodedSplit): number[] => Array.from(s.keys!.impression_id, (id) => rowOfImp.get(id)!);
    const trainRows = rowsOf(built.train);
    const testRows = rowsOf(built.test);
    expect(trainRows.length + testRows.length).toBe(flat.rowCount);
    expect(new Set([...trainRows, ...testRows]).size).toBe(flat.rowCount);
    expect(trainRows.every(isTrain)).toBe(true);
    expect(testRows.every((k) => !isTrain(k))).toBe(true);
    expect(built.train.rows).toBeGreaterThan(1000);
    expect(built.test.rows).toBeGreaterThan(200);
    expect(Array.from(built.train.labels)).toEqual(trainRows.map((k) => click[k]));
    expect(Array.from(built.test.labels)).toEqual(testRows.map((k) => click[k]));

    let checked = 0;
    for (const spec of FEATURE_CATALOG) {
      const c = column(spec.name);
      const feature = built.features.find((x) => x.name === spec.name)!;
      if (c.kind === 'numeric') {
        let sum = 0;
        let count = 0;
        for (let k = 0; k < flat.rowCount; k++) {
          if (isTrain(k) && !Number.isNaN(c.values[k])) {
            sum += c.values[k];
            count++;
          }
        }
        const mean = sum / count;
        const expected = (k: number): number => Math.fround(Number.isNaN(c.values[k]) ? mean : c.values[k]);
        for (const [split, rows] of [
          [built.train, trainRows],
          [built.test, testRows],
        ] as const) {
          const j = split.numericNames.indexOf(spec.name);
          const width = split.numericNames.length;
          const got = rows.map((_, r) => split.numeric[r * width + j]);
          expect(got, spec.name).toEqual(rows.map(expected));
        }
      } else if (c.kind === 'categorical') {
        const cat = c as CategoricalTableColumn;
        const trainValues = new Set<string>();
        for (let k = 0; k < flat.rowCount; k++)
          if (isTrain(k) && cat.codes[k] >= 0) trainValues.add(cat.dictionary[cat.codes[k]]);
        const sorted = [...trainValues].sort();
        const idOf = new Map(sorted.map((v, i) => [v, i + 1]));
        const expected = (k: number): number => (cat.codes[k] < 0 ? -1 : (idOf.get(cat.dictionary[cat.codes[k]]) ?? 0));
        expect(feature.vocab, spec.name).toBe(sorted.length + 1);
        for (const [split, rows] of [
          [built.train, trainRows],
          [built.test, testRows],
        ] as const) {
          const slot = split.slots.find((s) => s.name === spec.name)!;
          expect(Array.from(slot.ids), spec.name).toEqual(rows.map(expected));
        }
      } else {
        const multi = c as MultiIdTableColumn;
        let maxId = -1;
        for (const id of multi.ids) maxId = Math.max(maxId, id);
        expect(feature.vocab, spec.name).toBe(maxId + 1);
        for (const [split, rows] of [
          [built.train, trainRows],
          [built.test, testRows],
        ] as const) {
          const slot = split.slots.find((s) => s.name === spec.name)!;
          const got = rows.map((_, r) => Array.from(slot.ids.subarray(slot.offsets[r], slot.offsets[r + 1])));
          expect(got, spec.name).toEqual(rows.map((k) => Array.from(multi.ids.subarray(multi.offsets[k], multi.offsets[k + 1]))));
        }
      }
      checked++;
    }
    expect(checked).toBe(32);
    expect(built.inputs.numeric.length + built.inputs.slots.length).toBe(32);
  });

  it('encodes the same set whatever the ranges and however little memory DuckDB has (it spills)', async () => {
    const { timings: _t, ...whole } = built;
    for (const [rangeRows, duckdbMemoryMb] of [
      [997, 64],
      [4096, 1024],
    ] as const) {
      const { timings, ...other } = await buildSamples(request, { rangeRows, duckdbMemoryMb });
      expect(other).toEqual(whole);
      expect(timings.encodeMs).toBeGreaterThan(0);
    }
  }, 60_000);

  it('is the same build whatever DuckDB’s thread count (a thread per 256 MiB of its memory cap)', async () => {
    // 256 MiB: one thread; 1 GiB: four (as many as the cores allow)
    const one = await buildSamples(request, { duckdbMemoryMb: 256 });
    const more = await buildSamples(request, { duckdbMemoryMb: 1024 });
    const { timings: t1, ...a } = one;
    const { timings: t2, ...b } = more;
    expect(t1.readMs + t2.readMs).toBeGreaterThan(0);
    expect(b).toEqual(a);
    expect(b.split).toEqual(built.split);
  }, 120_000);
});
