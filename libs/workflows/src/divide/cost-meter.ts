import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';
import type { FeatureKind } from '@abacus/data';
import { RuntimeModel, resolveBackend, type BackendChoice, type ColumnarDataset, type ModelSpecInput } from '@abacus/runtime';
import { bestOf, bytesPerValue, medianInterval, pairedShare, type ColumnStats, type PairedShare } from './cost-rules';

/** A small seeded generator for the synthetic batch (Mulberry32). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** A column to measure in one file set (a feature table's or a sample set's Parquet files). */
export interface ColumnToMeasure {
  column: string;
  kind: FeatureKind;
  /** the stored type (ColumnSchema.sourceType) */
  sourceType: string;
}

export interface StorageMeasurement {
  bytes: number;
  stats: ColumnStats;
  how: string;
}

const fmt = (x: number, digits = 1) =>
  x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * Storage of columns of one table, by DuckDB over its stored Parquet files: per column the row count,
 * the non-null count, the mean UTF-8 length of text values, the mean list length of multi-id lists
 * (a missing list counts as empty) and an approximate distinct count; the bytes per value follow
 * `bytesPerValue`.
 */
export async function measureStorage(
  files: string[],
  tableLabel: string,
  columns: ColumnToMeasure[],
): Promise<Map<string, StorageMeasurement>> {
  const out = new Map<string, StorageMeasurement>();
  if (!columns.length) return out;
  const src = `read_parquet([${files.map(lit).join(', ')}])`;
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const conn = await db.connect();
  try {
    const q = async (sql: string) => (await conn.runAndReadAll(sql)).getRows() as unknown[][];
    for (const c of columns) {
      const col = ident(c.column);
      let stats: ColumnStats;
      if (c.kind === 'multi_id') {
        const [row] = await q(`SELECT count(*), count(${col}), avg(coalesce(len(${col}), 0)) FROM ${src}`);
        const [d] = await q(`SELECT approx_count_distinct(x) FROM (SELECT unnest(${col}) AS x FROM ${src})`);
        stats = {
          rows: Number(row![0]),
          nonNull: Number(row![1]),
          meanListLength: Number(row![2] ?? 0),
          distinct: Number(d![0] ?? 0),
        };
      } else {
        const text = c.kind === 'categorical' && /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i.test(c.sourceType.trim());
        const [row] = await q(
          `SELECT count(*), count(${col}), ${text ? `avg(strlen(${col}))` : 'NULL'}, ${
            c.kind === 'categorical' ? `approx_count_distinct(${col})` : 'NULL'
          } FROM ${src}`,
        );
        stats = {
          rows: Number(row![0]),
          nonNull: Number(row![1]),
          ...(text ? { meanTextBytes: Number(row![2] ?? 0) } : {}),
          ...(c.kind === 'categorical' ? { distinct: Number(row![3] ?? 0) } : {}),
        };
      }
      const bytes = bytesPerValue(c.kind, c.sourceType, stats);
      const over = `over ${stats.rows.toLocaleString('en-US')} rows of table ${tableLabel}`;
      const how =
        c.kind === 'numeric'
          ? `numeric: 4 bytes (float32) per value ${over}`
          : c.kind === 'multi_id'
            ? `multi-id: 4 + 4 × mean list length ${fmt(stats.meanListLength ?? 0, 2)} = ${fmt(bytes, 2)} bytes ${over}`
            : stats.meanTextBytes !== undefined
              ? `categorical text: mean ${fmt(bytes)} bytes (UTF-8) ${over}`
              : `categorical id: 4 bytes (int32) per value ${over}`;
      out.set(c.column, { bytes, stats, how });
    }
  } finally {
    conn.closeSync();
    db.closeSync();
  }
  return out;
}

/** One input of the model whose forward is timed. */
export interface ComputeInput {
  name: string;
  kind: FeatureKind;
  /** slots: ids drawn from [0, vocab) */
  vocab?: number;
  /** multi-id slots: ids per row (rounded mean list length, at least 1) */
  listLength?: number;
}

export interface ComputeOptions {
  backend: BackendChoice;
  /** CPU threads; 0 = the runtime's default (all) */
  threads: number;
  /** rows of the fixed synthetic batch (default 4096) */
  rows?: number;
  /** rounds of paired timings per input, the median taken (default 9) */
  repeats?: number;
  architecture?: { embeddingDim?: number; pooling?: 'sum' | 'mean'; hidden?: number[]; wide?: boolean };
  seed?: number;
  /** each timing repeats the forward until the full model has run at least this long (default 25 ms) */
  minMs?: number;
  /**
   * wall: elapsed time; cpu: the process's CPU time (user + system, every thread): what the forward
   * costs the host, not counting time the process waited for a core (a busy or shared machine)
   */
  clock?: 'wall' | 'cpu';
  onProgress?: (done: number, total: number) => void;
}

export interface ComputeMeasurement extends PairedShare {
  /** median time of a forward with all inputs / without this one (ms) */
  tAllMs: number;
  tWithoutMs: number;
  /** the larger relative spread (max - min) / min of the two sides' timings */
  spread: number;
  how: string;
  /** the rounds' timings (ms), with all inputs and without this one (not stored in the ledger) */
  allMs: number[];
  withoutMs: number[];
}

const MAX_VOCAB = 1 << 20;

/** The fixed synthetic batch: Gaussian numerics, uniform ids (multi-id slots of their measured length). */
export function syntheticBatch(inputs: ComputeInput[], rows: number, seed = 7): ColumnarDataset {
  const r = mulberry32(seed);
  const numericInputs = inputs.filter((i) => i.kind === 'numeric');
  const numeric = new Float32Array(rows * numericInputs.length);
  for (let j = 0; j < numeric.length; j++)
    numeric[j] = Math.sqrt(-2 * Math.log(Math.max(r(), 1e-300))) * Math.cos(2 * Math.PI * r());
  const slots = inputs
    .filter((i) => i.kind !== 'numeric')
    .map((i) => {
      const len = i.kind === 'multi_id' ? Math.max(1, Math.round(i.listLength ?? 1)) : 1;
      const vocab = slotVocab(i);
      const ids = new Int32Array(rows * len);
      for (let j = 0; j < ids.length; j++) ids[j] = Math.floor(r() * vocab);
      const offsets = new Int32Array(rows + 1);
      for (let k = 0; k <= rows; k++) offsets[k] = k * len;
      return { name: i.name, ids, offsets };
    });
  return { rows, numericNames: numericInputs.map((i) => i.name), numeric, slots, labels: new Float32Array(rows) };
}

const slotVocab = (i: ComputeInput) => Math.min(MAX_VOCAB, Math.max(2, Math.round(i.vocab ?? 1000)));

function specOf(inputs: ComputeInput[], o: ComputeOptions): ModelSpecInput {
  const a = o.architecture ?? {};
  return {
    numeric: inputs.filter((i) => i.kind === 'numeric').map((i) => i.name),
    slots: inputs.filter((i) => i.kind !== 'numeric').map((i) => ({ name: i.name, vocab: slotVocab(i) })),
    embeddingDim: a.embeddingDim ?? 8,
    pooling: a.pooling ?? 'mean',
    hidden: a.hidden ?? [64, 32],
    wide: a.wide ?? true,
    seed: o.seed ?? 1,
  };
}

/**
 * Each input's share of one prediction: the runtime's forward (predict) over a fixed synthetic batch
 * is timed for the model of all inputs and for the model without each input, in `repeats` rounds of
 * pairs (the full model timed right beside each reduced one, order alternating), after a warm-up;
 * each timing averages enough forwards for the full model to run `minMs`. Each round also times the
 * full model twice (A/A), the noise floor. Per input the share is the median over the rounds of the
 * pair's (t_all - t_without) / t_all, with its order-statistic interval; a median under the noise
 * floor, or an interval reaching 0, is reported below resolution and counts as 0 (`pairedShare`).
 * The spread is the larger relative spread of the two sides' timings. A model left without inputs
 * takes no time.
 */
export async function measureCompute(inputs: ComputeInput[], o: ComputeOptions): Promise<Map<string, ComputeMeasurement>> {
  const out = new Map<string, ComputeMeasurement>();
  if (!inputs.length) return out;
  const rows = o.rows ?? 4096;
  const repeats = o.repeats ?? 9;
  const backend = resolveBackend(o.backend);
  const create = { backend, ...(o.threads > 0 ? { threads: o.threads } : {}) };
  const full = syntheticBatch(inputs, rows, o.seed ?? 7);
  const variants: { name: string | null; model: RuntimeModel | null; data: ColumnarDataset | null }[] = [
    { name: null, model: RuntimeModel.create(specOf(inputs, o), create), data: full },
  ];
  for (const i of inputs) {
    const rest = inputs.filter((x) => x !== i);
    variants.push({
      name: i.name,
      model: rest.length ? RuntimeModel.create(specOf(rest, o), create) : null,
      data: rest.length ? without(full, i.name) : null,
    });
  }
  // one timing = `inner` forwards, enough for the full model to take minMs (short forwards are all noise)
  const minMs = o.minMs ?? 25;
  const clock = o.clock ?? 'wall';
  await variants[0]!.model!.predict(full, { batchSize: rows });
  const t0 = performance.now();
  await variants[0]!.model!.predict(full, { batchSize: rows });
  const inner = Math.max(1, Math.min(1000, Math.ceil(minMs / Math.max(0.01, performance.now() - t0))));
  const time = async (v: (typeof variants)[number], n: number): Promise<number> => {
    if (!v.model || !v.data) return 0;
    if (clock === 'cpu') {
      const c1 = process.cpuUsage();
      for (let k = 0; k < n; k++) await v.model.predict(v.data, { batchSize: rows });
      const c = process.cpuUsage(c1);
      return (c.user + c.system) / 1000 / n;
    }
    const t1 = performance.now();
    for (let k = 0; k < n; k++) await v.model.predict(v.data, { batchSize: rows });
    return (performance.now() - t1) / n;
  };
  const fullVariant = variants[0]!;
  const total = (variants.length - 1) * repeats;
  let done = 0;
  for (const v of variants.slice(1)) await time(v, 1); // warm-up
  // paired timings: the full model right beside each reduced one (order alternating), so drift in the
  // machine's load falls on both sides of a pair
  const pairs = new Map<string, { all: number[]; without: number[] }>();
  // the noise floor: per round, two timings of the same full model side by side (A/A)
  const aa: [number, number][] = [];
  for (let round = 0; round < repeats; round++) {
    aa.push([await time(fullVariant, inner), await time(fullVariant, inner)]);
    for (const v of variants.slice(1)) {
      const p = pairs.get(v.name!) ?? { all: [], without: [] };
      if (round % 2 === 0) {
        p.all.push(await time(fullVariant, inner));
        p.without.push(await time(v, inner));
      } else {
        p.without.push(await time(v, inner));
        p.all.push(await time(fullVariant, inner));
      }
      pairs.set(v.name!, p);
      o.onProgress?.(++done, total);
    }
  }
  const pct = (x: number) => `${fmt(x * 100)}%`;
  for (const [name, p] of pairs) {
    const ps = pairedShare(p.all, p.without, aa);
    const spread = Math.max(bestOf(p.all).spread, bestOf(p.without).spread);
    const tAll = medianInterval(p.all).median;
    const tWithout = medianInterval(p.without).median;
    const verdict = ps.belowResolution
      ? `below resolution (median ${pct(ps.median)}, interval [${pct(ps.ciLow)}, ${pct(ps.ciHigh)}], noise floor ${pct(ps.resolution)}): counted as 0`
      : `share ${pct(ps.median)}, interval [${pct(ps.ciLow)}, ${pct(ps.ciHigh)}] (${Math.round(ps.coverage * 100)}%), noise floor ${pct(ps.resolution)}`;
    out.set(name, {
      ...ps,
      tAllMs: tAll,
      tWithoutMs: tWithout,
      spread,
      allMs: p.all,
      withoutMs: p.without,
      how: `forward of ${rows.toLocaleString('en-US')} synthetic rows on ${backend}, median of ${repeats} paired timings (each ${inner} forward${inner > 1 ? 's' : ''}; ${fmt(tAll, 2)} ms with all ${inputs.length} inputs, ${fmt(tWithout, 2)} ms without): ${verdict}`,
    });
  }
  return out;
}

/** The dataset without one input (numeric column or slot); arrays are copied or shared, never mutated. */
function without(d: ColumnarDataset, name: string): ColumnarDataset {
  const j = d.numericNames.indexOf(name);
  if (j < 0) return { ...d, slots: d.slots.filter((s) => s.name !== name) };
  const w = d.numericNames.length;
  const numeric = new Float32Array(d.rows * (w - 1));
  for (let r = 0; r < d.rows; r++) {
    let k = 0;
    for (let c = 0; c < w; c++) if (c !== j) numeric[r * (w - 1) + k++] = d.numeric[r * w + c]!;
  }
  return { ...d, numericNames: d.numericNames.filter((n) => n !== name), numeric };
}
