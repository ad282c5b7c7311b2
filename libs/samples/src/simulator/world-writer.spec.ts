import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTable } from '../io/table-reader';
import type { CategoricalTableColumn, MultiIdTableColumn, NumericTableColumn } from '../io/table.types';
import { FEATURE_CATALOG } from './feature-catalog';
import { simulateWorld } from './simulator.service';
import { writeWorld, type WorldManifest } from './world-writer';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('writeWorld', () => {
  it('writes Parquet tables whose per-line samples equal the in-memory point-in-time join', async () => {
    const world = simulateWorld({ seed: 5, rows: 6_000 });
    const dir = await mkdtemp(path.join(tmpdir(), 'abacus-world-'));
    dirs.push(dir);
    const manifest = await writeWorld(world, dir);

    const onDisk = JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8')) as WorldManifest;
    expect(onDisk).toEqual(manifest);
    expect(manifest.files.map((f) => f.path)).toEqual([
      'impressions.parquet',
      'users.parquet',
      'items.parquet',
      'contexts.parquet',
      'samples/feed.parquet',
      'samples/search.parquet',
      'samples/mall.parquet',
    ]);
    const rowsOf = (p: string): number => manifest.files.find((f) => f.path === p)!.rows;
    expect(rowsOf('impressions.parquet')).toBe(6_000);
    expect(rowsOf('users.parquet')).toBe(world.users.rows);
    const gt = JSON.parse(await readFile(path.join(dir, 'ground_truth.json'), 'utf8'));
    expect(gt).toEqual(world.groundTruth);
    for (const d of world.groundTruth.domains) expect(rowsOf(`samples/${d.name}.parquet`)).toBe(d.impressions);

    const samples = manifest.files.find((f) => f.path === 'samples/mall.parquet')!;
    expect(samples.schema.slice(0, 7).map((c) => c.name)).toEqual([
      'impression_id',
      'ts',
      'domain',
      'user_id',
      'item_id',
      'context_id',
      'click',
    ]);
    expect(samples.schema.slice(7).map((c) => c.name)).toEqual(FEATURE_CATALOG.map((f) => f.name));
    expect(samples.schema.find((c) => c.name === 'u_recent_cats')!.type).toBe('INTEGER[]');

    const table = await readTable(path.join(dir, 'samples/mall.parquet'));
    const col = (name: string) => table.columns.find((c) => c.name === name)!;
    const ids = (col('impression_id') as NumericTableColumn).values;
    const { flat } = world;
    expect(table.rowCount).toBe(world.groundTruth.domains[2].impressions);
    for (let k = 0; k < table.rowCount; k++) {
      const r = ids[k];
      expect(flat.domain[r]).toBe('mall');
      expect((col('click') as NumericTableColumn).values[k]).toBe(flat.label[r]);
      expect((col('ts') as NumericTableColumn).values[k]).toBe(flat.time[r]);
      for (const c of flat.numeric) {
        const v = (col(c.name) as NumericTableColumn).values[k];
        if (Number.isNaN(c.values[r])) expect(v).toBeNaN();
        else expect(Math.fround(v)).toBe(c.values[r]);
      }
      for (const c of flat.categorical) {
        const t = col(c.name) as CategoricalTableColumn;
        expect(t.codes[k] < 0 ? -1 : Number(t.dictionary[t.codes[k]])).toBe(c.ids[r]);
      }
      for (const c of flat.multiId) {
        const t = col(c.name) as MultiIdTableColumn;
        expect(Array.from(t.ids.subarray(t.offsets[k], t.offsets[k + 1]))).toEqual(
          Array.from(c.ids.subarray(c.offsets[r], c.offsets[r + 1])),
        );
      }
    }
  });

  it('with the unrelated line: writes samples/ads.parquet and the other files exactly as the plain world does', async () => {
    const plainDir = await mkdtemp(path.join(tmpdir(), 'abacus-world-'));
    const withDir = await mkdtemp(path.join(tmpdir(), 'abacus-world-'));
    dirs.push(plainDir, withDir);
    await writeWorld(simulateWorld({ seed: 5, rows: 6_000 }), plainDir);
    const world = simulateWorld({ seed: 5, rows: 6_000, unrelatedLine: true });
    const manifest = await writeWorld(world, withDir);
    const ads = world.groundTruth.domains.find((d) => d.unrelated)!;
    expect(ads.name).toBe('ads');
    expect(manifest.domains).toEqual(['feed', 'search', 'mall', 'ads']);
    expect(manifest.files.find((f) => f.path === 'samples/ads.parquet')!.rows).toBe(ads.impressions);
    expect(manifest.files.find((f) => f.path === 'impressions.parquet')!.rows).toBe(6_000 + ads.impressions);
    for (const f of [
      'users.parquet',
      'items.parquet',
      'contexts.parquet',
      'samples/feed.parquet',
      'samples/search.parquet',
      'samples/mall.parquet',
    ]) {
      const same = (await readFile(path.join(plainDir, f))).equals(await readFile(path.join(withDir, f)));
      expect(same, f).toBe(true);
    }
    const table = await readTable(path.join(withDir, 'samples/ads.parquet'));
    expect(table.columns.map((c) => c.name).slice(7)).toEqual(FEATURE_CATALOG.map((f) => f.name));
    const ids = (table.columns.find((c) => c.name === 'impression_id') as NumericTableColumn).values;
    for (let k = 0; k < table.rowCount; k++) expect(world.flat.domain[ids[k]]).toBe('ads');
  });
});
