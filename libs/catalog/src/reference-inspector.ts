import { createHash } from 'node:crypto';
import { parquetMetadataAsync, type FileMetaData, type SchemaElement } from 'hyparquet';
import type { ColumnSchema, LabelStats, ReferencedObjectRecord } from '@abacus/data';
import { InvalidInputError } from '@abacus/core';
import { StoreError, objectUrl, type ObjectInfo, type ObjectStore, type StoreLocation, type StoreRegistry } from '@abacus/store';
import { columnKind } from './table-inspector';

/** One object of a registered sample set, as listed at registration (the set's version pins these). */
export type ReferencedObject = ReferencedObjectRecord;

/** Which partitions to take: those whose `column` value is within [from, to] (inclusive; numbers or ISO dates compare as such). */
export interface PartitionRange {
  column: string;
  from?: string;
  to?: string;
}

export interface InspectedReference {
  location: StoreLocation;
  objects: ReferencedObject[];
  /** data columns, then the partition columns (VARCHAR) */
  schema: ColumnSchema[];
  partitionColumns: string[];
  rowCount: number;
  labelStats: LabelStats;
  timeRange: { min: number; max: number } | null;
  dataVersion: string;
}

const HIDDEN = /^[_.]/; // _SUCCESS, _metadata, .crc files: written beside the data, never data
const PARQUET = /\.(parquet|pq)$/i;

/** DuckDB's name for a Parquet column type (the worker reads with DuckDB, so both must agree on kinds). */
export function duckdbTypeOf(el: SchemaElement): string {
  const lt = el.logical_type;
  const ct = el.converted_type;
  if (lt?.type === 'STRING' || lt?.type === 'ENUM' || lt?.type === 'JSON' || ct === 'UTF8' || ct === 'ENUM' || ct === 'JSON')
    return 'VARCHAR';
  if (lt?.type === 'UUID') return 'UUID';
  if (lt?.type === 'DATE' || ct === 'DATE') return 'DATE';
  if (lt?.type === 'TIMESTAMP')
    return lt.unit === 'NANOS' ? 'TIMESTAMP_NS' : lt.isAdjustedToUTC ? 'TIMESTAMP WITH TIME ZONE' : 'TIMESTAMP';
  if (ct === 'TIMESTAMP_MILLIS' || ct === 'TIMESTAMP_MICROS' || el.type === 'INT96') return 'TIMESTAMP';
  if (lt?.type === 'DECIMAL' || ct === 'DECIMAL')
    return `DECIMAL(${lt?.type === 'DECIMAL' ? lt.precision : el.precision},${lt?.type === 'DECIMAL' ? lt.scale : el.scale})`;
  if (lt?.type === 'INTEGER') {
    const names: Record<number, [string, string]> = {
      8: ['TINYINT', 'UTINYINT'],
      16: ['SMALLINT', 'USMALLINT'],
      32: ['INTEGER', 'UINTEGER'],
      64: ['BIGINT', 'UBIGINT'],
    };
    return names[lt.bitWidth]?.[lt.isSigned ? 0 : 1] ?? 'BIGINT';
  }
  const conv: Partial<Record<string, string>> = {
    INT_8: 'TINYINT',
    INT_16: 'SMALLINT',
    INT_32: 'INTEGER',
    INT_64: 'BIGINT',
    UINT_8: 'UTINYINT',
    UINT_16: 'USMALLINT',
    UINT_32: 'UINTEGER',
    UINT_64: 'UBIGINT',
  };
  if (ct && conv[ct]) return conv[ct]!;
  switch (el.type) {
    case 'BOOLEAN':
      return 'BOOLEAN';
    case 'INT32':
      return 'INTEGER';
    case 'INT64':
      return 'BIGINT';
    case 'FLOAT':
      return 'FLOAT';
    case 'DOUBLE':
      return 'DOUBLE';
    default:
      return 'BLOB';
  }
}

/** The top-level columns of a file's schema as (name, DuckDB type); lists as `T[]`, other nesting as STRUCT/MAP. */
export function columnsOf(meta: FileMetaData): { name: string; type: string }[] {
  const els = meta.schema;
  const out: { name: string; type: string }[] = [];
  let i = 1;
  // walks one element and its subtree; returns the index after it
  const skip = (k: number): number => {
    let next = k + 1;
    for (let c = 0; c < (els[k].num_children ?? 0); c++) next = skip(next);
    return next;
  };
  while (i < els.length) {
    const el = els[i];
    if (!el.num_children) {
      out.push({ name: el.name, type: el.repetition_type === 'REPEATED' ? `${duckdbTypeOf(el)}[]` : duckdbTypeOf(el) });
      i += 1;
      continue;
    }
    const isList = el.logical_type?.type === 'LIST' || el.converted_type === 'LIST';
    if (isList) {
      // LIST -> repeated group (list) -> element
      let leaf = i + 1;
      while (leaf < els.length && els[leaf].num_children) leaf += 1;
      const nestedDepth = leaf - i;
      out.push({ name: el.name, type: nestedDepth === 2 ? `${duckdbTypeOf(els[leaf])}[]` : 'STRUCT' });
    } else out.push({ name: el.name, type: el.logical_type?.type === 'MAP' || el.converted_type === 'MAP' ? 'MAP' : 'STRUCT' });
    i = skip(i);
  }
  return out;
}

/** hive partition values (key=value segments) of a key below the prefix */
function partitionOf(relative: string): Record<string, string> {
  const out: Record<string, string> = {};
  const segments = relative.split('/').slice(0, -1);
  for (const s of segments) {
    const eq = s.indexOf('=');
    if (eq > 0) out[decodeURIComponent(s.slice(0, eq))] = decodeURIComponent(s.slice(eq + 1));
  }
  return out;
}

const compareValues = (a: string, b: string): number => {
  const x = Number(a);
  const y = Number(b);
  if (a.trim() !== '' && b.trim() !== '' && Number.isFinite(x) && Number.isFinite(y)) return x - y;
  return a < b ? -1 : a > b ? 1 : 0;
};

/** A statistics value as a number (epoch seconds for dates / timestamps), or null. */
function statNumber(v: unknown, type: string): number | null {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return v.getTime() / 1000;
  if (typeof v === 'bigint') return type.startsWith('TIMESTAMP') ? Number(v) / 1e6 : Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return type === 'DATE' ? v * 86400 : v;
  return null;
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

/** The footer of a Parquet object through explicit ranged reads (the store's `read`); null when it is not Parquet. */
export async function readParquetFooter(store: ObjectStore, info: ObjectInfo): Promise<FileMetaData | null> {
  if (info.size < 12) return null;
  const buffer = {
    byteLength: info.size,
    slice: async (start: number, end?: number): Promise<ArrayBuffer> => {
      const bytes = await store.read(info.key, start, end ?? info.size);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
  const magic = await store.read(info.key, 0, 4);
  if (Buffer.from(magic).toString('latin1') !== 'PAR1') return null;
  try {
    return await parquetMetadataAsync(buffer, { initialFetchSize: Math.min(info.size, 64 * 1024) });
  } catch (err) {
    if (err instanceof StoreError) throw err;
    return null;
  }
}

export interface ReferenceRequest {
  url: string;
  label: string;
  positive?: string;
  time?: string;
  keys: string[];
  partitions?: PartitionRange;
}

/**
 * Lists a sample set kept in a store (one Parquet object, or a folder of them, hive-partitioned or
 * not), reads every object's footer through ranged reads, and checks them: Parquet only, one schema
 * across partitions, the label (and time, keys) present everywhere, the label binary by its
 * statistics. Reads no data pages. Any problem is an InvalidInputError on the form field it comes
 * from, naming the object.
 */
export async function inspectReference(registry: StoreRegistry, req: ReferenceRequest): Promise<InspectedReference> {
  let resolved;
  try {
    resolved = registry.resolve(req.url);
  } catch (err) {
    if (err instanceof StoreError) throw new InvalidInputError('url', err.message);
    throw err;
  }
  const { store, prefix, location } = resolved;
  const fail = (field: string, err: unknown): never => {
    if (err instanceof StoreError) throw new InvalidInputError(field, err.message);
    throw err;
  };
  await store.check().catch((err: unknown) => fail('url', err));
  const listed = await store.list(prefix).catch((err: unknown) => fail('url', err));
  // "s3://b/logs" names the folder logs/ (or the one object logs), never logs2/
  const base = prefix === '' || prefix.endsWith('/') ? prefix : listed.some((o) => o.key === prefix) ? prefix : `${prefix}/`;
  // one object named exactly: that object alone (not data.parquet.bak beside it)
  const inside =
    base === prefix && !prefix.endsWith('/') && prefix !== ''
      ? listed.filter((o) => o.key === base)
      : listed.filter((o) => o.key.startsWith(base));
  const rel = (o: ObjectInfo) => (o.key === base ? o.key.split('/').pop()! : o.key.slice(base.length));
  const data = inside.filter(
    (o) =>
      !rel(o)
        .split('/')
        .some((s) => HIDDEN.test(s)),
  );
  if (data.length === 0) {
    throw new InvalidInputError(
      'url',
      `${location.url}: no objects there${inside.length ? ` (only ${inside.map(rel).slice(0, 3).join(', ')})` : ''}: is the prefix right?`,
    );
  }
  const nonParquet = data.find((o) => !PARQUET.test(o.key));
  if (nonParquet) {
    throw new InvalidInputError(
      'url',
      `${objectUrl(location, nonParquet.key)} is not a Parquet object (expected .parquet files only; CSV sets are uploaded)`,
    );
  }
  // partitions: the same keys in every path; the range on one of them
  const withParts = data.map((o) => ({ info: o, partition: partitionOf(rel(o)) }));
  const partitionColumns = Object.keys(withParts[0].partition);
  for (const p of withParts) {
    const keys = Object.keys(p.partition);
    if (keys.join('/') !== partitionColumns.join('/')) {
      throw new InvalidInputError(
        'url',
        `${objectUrl(location, p.info.key)} is partitioned by (${keys.join(', ') || 'nothing'}), ${objectUrl(location, withParts[0].info.key)} by (${partitionColumns.join(', ') || 'nothing'})`,
      );
    }
  }
  let chosen = withParts;
  const range = req.partitions;
  if (range) {
    if (!partitionColumns.includes(range.column)) {
      throw new InvalidInputError(
        'partitions.column',
        `"${range.column}" is not a partition column of ${location.url} (partition columns: ${partitionColumns.join(', ') || 'none'})`,
      );
    }
    chosen = withParts.filter(
      (p) =>
        (range.from === undefined || compareValues(p.partition[range.column], range.from) >= 0) &&
        (range.to === undefined || compareValues(p.partition[range.column], range.to) <= 0),
    );
    if (chosen.length === 0) {
      const values = [...new Set(withParts.map((p) => p.partition[range.column]))].sort(compareValues);
      throw new InvalidInputError(
        'partitions',
        `no partition of ${range.column} in [${range.from ?? '…'}, ${range.to ?? '…'}] (there are ${values.length}: ${values[0]} … ${values[values.length - 1]})`,
      );
    }
  }

  const metas = await mapLimit(chosen, 8, async (p) => {
    const meta = await readParquetFooter(store, p.info).catch((err: unknown) => fail('url', err));
    if (!meta)
      throw new InvalidInputError('url', `${objectUrl(location, p.info.key)} is not a Parquet file (no PAR1 header and footer)`);
    return meta;
  });

  // one schema everywhere; the label (and time, keys) in every object
  const first = columnsOf(metas[0]);
  const firstUrl = objectUrl(location, chosen[0].info.key);
  for (const [i, meta] of metas.entries()) {
    const cols = columnsOf(meta);
    const here = objectUrl(location, chosen[i].info.key);
    const need: [string, string][] = [
      ['label', req.label],
      ...(req.time ? [['time', req.time] as [string, string]] : []),
      ...req.keys.map((k, j) => [`keys.${j}`, k] as [string, string]),
    ];
    for (const [field, name] of need) {
      if (!cols.some((c) => c.name === name) && !partitionColumns.includes(name)) {
        throw new InvalidInputError(
          field,
          `column "${name}" is not in ${here} (columns: ${cols
            .map((c) => c.name)
            .slice(0, 30)
            .join(', ')})`,
        );
      }
    }
    if (i === 0) continue;
    const byName = new Map(cols.map((c) => [c.name, c.type]));
    for (const c of first) {
      const t = byName.get(c.name);
      if (t === undefined)
        throw new InvalidInputError('url', `schema drift: column "${c.name}" (${c.type}) of ${firstUrl} is missing from ${here}`);
      if (t !== c.type)
        throw new InvalidInputError('url', `schema drift: column "${c.name}" is ${c.type} in ${firstUrl} but ${t} in ${here}`);
    }
    const extra = cols.find((c) => !first.some((f) => f.name === c.name));
    if (extra)
      throw new InvalidInputError('url', `schema drift: column "${extra.name}" (${extra.type}) of ${here} is not in ${firstUrl}`);
  }
  for (const pc of partitionColumns) {
    if (first.some((c) => c.name === pc))
      throw new InvalidInputError('url', `partition column "${pc}" is also a column inside the files of ${location.url}`);
  }
  const schema: ColumnSchema[] = [
    ...first.map((c) => ({ name: c.name, kind: columnKind(c.type), sourceType: c.type })),
    ...partitionColumns.map((name) => ({ name, kind: 'categorical' as const, sourceType: 'VARCHAR' })),
  ];

  // statistics: label classes, nulls; time range
  const labelType = first.find((c) => c.name === req.label)?.type;
  if (labelType === undefined)
    throw new InvalidInputError('label', `"${req.label}" is a partition column; the label must be a column inside the files`);
  const isBool = labelType === 'BOOLEAN';
  if (
    !isBool &&
    !/^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL.*)$/.test(labelType)
  ) {
    throw new InvalidInputError(
      'label',
      `column "${req.label}" has type ${labelType}; a label must be numeric (0/1) or boolean (true/false)`,
    );
  }
  let lo = Infinity;
  let hi = -Infinity;
  let nulls = 0;
  let statsComplete = true;
  let tMin = Infinity;
  let tMax = -Infinity;
  const timeType = req.time ? first.find((c) => c.name === req.time)?.type : undefined;
  for (const meta of metas) {
    for (const rg of meta.row_groups) {
      for (const cc of rg.columns) {
        const md = cc.meta_data;
        if (!md || md.path_in_schema.length !== 1) continue;
        const name = md.path_in_schema[0];
        const st = md.statistics;
        if (name === req.label) {
          const mn = statNumber(st?.min_value ?? st?.min, labelType);
          const mx = statNumber(st?.max_value ?? st?.max, labelType);
          if (mn === null || mx === null || st?.null_count === undefined) statsComplete = false;
          else {
            lo = Math.min(lo, mn);
            hi = Math.max(hi, mx);
            nulls += Number(st.null_count);
          }
        } else if (timeType && name === req.time) {
          const mn = statNumber(st?.min_value ?? st?.min, timeType);
          const mx = statNumber(st?.max_value ?? st?.max, timeType);
          if (mn !== null) tMin = Math.min(tMin, mn);
          if (mx !== null) tMax = Math.max(tMax, mx);
        }
      }
    }
  }
  if (statsComplete && nulls > 0)
    throw new InvalidInputError('label', `label "${req.label}" has ${nulls} missing value(s) (by the files' statistics)`);
  if (statsComplete && (lo < 0 || hi > 1 || (lo === hi && lo !== 0 && lo !== 1))) {
    throw new InvalidInputError(
      'label',
      `label "${req.label}" ranges over [${lo}, ${hi}] by the files' statistics; expected 0/1 or false/true`,
    );
  }
  const classes = isBool ? ['false', 'true'] : ['0', '1'];
  const positive = req.positive ?? classes[1];
  if (!classes.includes(positive)) {
    throw new InvalidInputError(
      'positive',
      `positive value "${positive}" is not a class of label "${req.label}" (classes: ${classes.join(', ')})`,
    );
  }
  const rowsOf = (m: FileMetaData) => Number(m.num_rows);
  const objects: ReferencedObject[] = chosen.map((p, i) => ({
    key: p.info.key,
    size: p.info.size,
    etag: p.info.etag,
    rows: rowsOf(metas[i]),
    partition: p.partition,
  }));
  const rowCount = objects.reduce((a, o) => a + o.rows, 0);
  if (rowCount === 0) throw new InvalidInputError('url', `${location.url}: the Parquet files hold no rows`);
  const version = createHash('sha256');
  version.update(`${location.url}\n`);
  for (const o of objects) version.update(`${o.key}\t${o.size}\t${o.etag}\n`);
  return {
    location,
    objects,
    schema,
    partitionColumns,
    rowCount,
    labelStats: {
      binary: true,
      classes,
      positive,
      explicitPositive: req.positive !== undefined && !['1', 'true'].includes(req.positive),
      // counted when the samples are first built: registration reads no data pages
      events: null,
      nonEvents: null,
    },
    timeRange: req.time && tMin <= tMax ? { min: tMin, max: tMax } : null,
    dataVersion: `objects:${version.digest('hex').slice(0, 16)}`,
  };
}
