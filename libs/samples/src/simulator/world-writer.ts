import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { loadColumns, quoteIdent, quoteLiteral, type LoadColumn } from '../io/column-loader';
import { FEATURE_CATALOG } from './feature-catalog';
import type { EntityTableColumns, SimWorld } from './sim-world.types';

export interface ManifestFile {
  path: string;
  rows: number;
  /** bytes on disk */
  bytes: number;
  schema: { name: string; type: string }[];
}

export interface WorldManifest {
  seed: number;
  rows: number;
  testFrom: number;
  domains: string[];
  files: ManifestFile[];
}

const TABLE_ALIAS = { user: 'u', item: 'it', context: 'c' } as const;

/**
 * Writes the world as Parquet (+ ground_truth.json, manifest.json) under `dir`. The raw tables are bulk-loaded
 * into an in-memory DuckDB; each line's samples/<domain>.parquet is built there by a point-in-time ASOF join
 * (latest user snapshot with snapshot ts <= impression ts), i.e. the same join `flat` holds in memory.
 */
export async function writeWorld(world: SimWorld, dir: string): Promise<WorldManifest> {
  await mkdir(path.join(dir, 'samples'), { recursive: true });
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    const imp = world.impressions;
    await loadColumns(con, 'impressions_raw', [
      { name: 'impression_id', type: 'INTEGER', data: imp.impressionId },
      { name: 'ts', type: 'INTEGER', data: Int32Array.from(imp.ts) },
      { name: 'domain_index', type: 'INTEGER', data: imp.domainIndex },
      { name: 'user_id', type: 'INTEGER', data: imp.userId },
      { name: 'item_id', type: 'INTEGER', data: imp.itemId },
      { name: 'context_id', type: 'INTEGER', data: imp.contextId },
      { name: 'click', type: 'INTEGER', data: imp.click },
      ...(imp.derived
        ? ([
            { name: 'd_region', type: 'INTEGER', data: imp.derived.region },
            { name: 'd_slot', type: 'INTEGER', data: imp.derived.slot },
            { name: 'd_spend', type: 'DOUBLE', data: imp.derived.spend },
            { name: 'd_visits', type: 'DOUBLE', data: imp.derived.visits },
          ] satisfies LoadColumn[])
        : []),
    ]);
    // the derived effects' columns (simulateWorld's derivedEffects): categories as text
    const derivedCols = imp.derived
      ? `, 'r' || d_region AS d_region, 's' || d_slot AS d_slot, d_spend, d_visits`
      : '';
    const domainList = `[${imp.domains.map(quoteLiteral).join(', ')}]`;
    await con.run(
      `CREATE TABLE impressions AS SELECT impression_id, ts, ${domainList}[domain_index + 1] AS domain, user_id, item_id, context_id, click${derivedCols}
       FROM impressions_raw ORDER BY impression_id`,
    );
    await loadEntity(con, world.users);
    await loadEntity(con, world.items);
    await loadEntity(con, world.contexts);

    const files: ManifestFile[] = [];
    const copy = async (select: string, rel: string): Promise<void> => {
      const file = path.join(dir, rel);
      await con.run(`COPY (${select}) TO ${quoteLiteral(file)} (FORMAT parquet, COMPRESSION zstd)`);
      files.push(await describeParquet(con, file, rel));
    };
    await copy('SELECT * FROM impressions ORDER BY impression_id', 'impressions.parquet');
    await copy('SELECT * FROM users ORDER BY user_id, ts', 'users.parquet');
    await copy('SELECT * FROM items ORDER BY item_id', 'items.parquet');
    await copy('SELECT * FROM contexts ORDER BY context_id', 'contexts.parquet');

    const featureCols = FEATURE_CATALOG.map((f) => `${TABLE_ALIAS[f.table]}.${quoteIdent(f.name)}`).join(', ');
    for (const domain of imp.domains) {
      await copy(
        `SELECT i.impression_id, i.ts, i.domain, i.user_id, i.item_id, i.context_id, i.click, ${featureCols}${imp.derived ? ', i.d_region, i.d_slot, i.d_spend, i.d_visits' : ''}
         FROM impressions i
         ASOF JOIN users u ON i.user_id = u.user_id AND i.ts >= u.ts
         JOIN items it ON i.item_id = it.item_id
         JOIN contexts c ON i.context_id = c.context_id
         WHERE i.domain = ${quoteLiteral(domain)}
         ORDER BY i.impression_id`,
        `samples/${domain}.parquet`,
      );
    }
    const gt = world.groundTruth;
    await writeFile(path.join(dir, 'ground_truth.json'), JSON.stringify(gt, null, 2) + '\n');
    const manifest: WorldManifest = { seed: gt.seed, rows: gt.rows, testFrom: gt.testFrom, domains: [...imp.domains], files };
    await writeFile(path.join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    return manifest;
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/**
 * Loads one entity table: scalar columns through the appender, each multi-id column as (row, k, id) triples
 * aggregated back into an ordered LIST(INTEGER) (empty list, never NULL). Categorical ids are written as
 * VARCHAR ('17'), so readers see them as categories rather than numbers; missing ids are NULL.
 */
async function loadEntity(con: DuckDBConnection, table: EntityTableColumns): Promise<void> {
  const rowIndex = new Int32Array(table.rows);
  for (let r = 0; r < table.rows; r++) rowIndex[r] = r;
  const cols: LoadColumn[] = [
    { name: '__row', type: 'INTEGER', data: rowIndex },
    { name: table.key, type: 'INTEGER', data: table.keys },
  ];
  if (table.snapshotTs) cols.push({ name: 'ts', type: 'INTEGER', data: Int32Array.from(table.snapshotTs) });
  for (const c of table.numeric) cols.push({ name: c.name, type: 'DOUBLE', data: c.values, nullWhen: 'nan' });
  for (const c of table.categorical) cols.push({ name: c.name, type: 'INTEGER', data: c.ids, nullWhen: 'negative' });
  await loadColumns(con, `${table.name}_base`, cols);

  const selects = [`b.${quoteIdent(table.key)}`];
  if (table.snapshotTs) selects.push('b.ts');
  const joins: string[] = [];
  const specOrder = FEATURE_CATALOG.map((f) => f.name);
  const kindOf = new Map<string, 'numeric' | 'categorical' | 'multi'>();
  for (const c of table.numeric) kindOf.set(c.name, 'numeric');
  for (const c of table.categorical) kindOf.set(c.name, 'categorical');
  for (const c of table.multiId) kindOf.set(c.name, 'multi');
  for (const [m, col] of table.multiId.entries()) {
    const total = col.offsets[table.rows];
    const row = new Int32Array(total);
    const k = new Int32Array(total);
    for (let r = 0; r < table.rows; r++) for (let j = col.offsets[r]; j < col.offsets[r + 1]; j++) row[j] = r;
    for (let j = 0; j < total; j++) k[j] = j;
    const t = `${table.name}_m${m}`;
    await loadColumns(con, t, [
      { name: '__row', type: 'INTEGER', data: row },
      { name: '__k', type: 'INTEGER', data: k },
      { name: 'id', type: 'INTEGER', data: col.ids },
    ]);
    joins.push(`LEFT JOIN (SELECT __row, list(id ORDER BY __k) AS l FROM ${t} GROUP BY __row) m${m} ON m${m}.__row = b.__row`);
  }
  const multiIndex = new Map(table.multiId.map((c, m) => [c.name, m]));
  for (const name of specOrder) {
    const kind = kindOf.get(name);
    if (kind === 'numeric') selects.push(`b.${quoteIdent(name)}`);
    else if (kind === 'categorical') selects.push(`CAST(b.${quoteIdent(name)} AS VARCHAR) AS ${quoteIdent(name)}`);
    else if (kind === 'multi') {
      const m = multiIndex.get(name)!;
      selects.push(`coalesce(m${m}.l, []::INTEGER[]) AS ${quoteIdent(name)}`);
    }
  }
  await con.run(
    `CREATE TABLE ${quoteIdent(table.name)} AS SELECT ${selects.join(', ')} FROM ${table.name}_base b ${joins.join(' ')} ORDER BY b.__row`,
  );
}

async function describeParquet(con: DuckDBConnection, file: string, rel: string): Promise<ManifestFile> {
  const schema = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${quoteLiteral(file)})`);
  const count = await con.runAndReadAll(`SELECT count(*) FROM read_parquet(${quoteLiteral(file)})`);
  const { size } = await stat(file);
  return {
    path: rel,
    rows: Number(count.getRows()[0][0]),
    bytes: size,
    schema: schema.getRowObjectsJS().map((r) => ({ name: String(r.column_name), type: String(r.column_type) })),
  };
}
