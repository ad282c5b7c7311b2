import { performance } from 'node:perf_hooks';
import type { FeatureKind } from '@abacus/data';
import { RuntimeModel, resolveBackend, type BackendChoice, type ColumnarDataset, type ModelSpecInput } from '@abacus/runtime';
import {
  bestOf,
  computeUnits,
  fitComputeModel,
  medianInterval,
  pairedShare,
  type ComputeDesign,
  type PairedShare,
} from './cost-rules';

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

const fmt = (x: number, digits = 1) =>
  x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

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
  /** rows of the fixed synthetic batch (default: `defaultComputeRows` of the backend) */
  rows?: number;
  /** rounds of timings, the median taken (default 9) */
  repeats?: number;
  /**
   * fitted (default): random subsets of the inputs timed beside the full model, and a cost model of the
   * inputs' structure fitted to them (`fitComputeModel`); paired: each input's model without it timed
   * beside the full model, the share its own median
   */
  design?: 'fitted' | 'paired';
  /** fitted design: how many subset models are timed (default 32) */
  designs?: number;
  architecture?: { embeddingDim?: number; pooling?: 'sum' | 'mean'; hidden?: number[]; wide?: boolean };
  seed?: number;
  /** each timing repeats the forward until the full model has run at least this long (default 25 ms on the CPU, 100 ms on a GPU) */
  minMs?: number;
  /** the full model's forwards before any timing, for this long (default 200 ms on the CPU, 2 s on a GPU) */
  warmMs?: number;
  /**
   * wall: elapsed time; cpu: the process's CPU time (user + system, every thread): what the forward
   * costs the host, not counting time the process waited for a core (a busy or shared machine).
   * device: the GPU time of the forward's kernels (CUDA events), without the host's dispatch of each
   * call or the copy of the predictions back: what the forward costs the card.
   * Default: cpu on the CPU backend, device on a GPU.
   */
  clock?: 'wall' | 'cpu' | 'device';
  onProgress?: (done: number, total: number) => void;
}

export interface ComputeMeasurement extends PairedShare {
  design: 'fitted' | 'paired';
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
 * Rows of the synthetic batch by default: 4096 on the CPU; 65,536 on a GPU, where a forward of a few
 * thousand rows is mostly fixed cost and a single input's share cannot be told from the timing noise.
 */
export const defaultComputeRows = (o: ComputeOptions): number => o.rows ?? (resolveBackend(o.backend) === 'cpu' ? 4096 : 65_536);
const defaultMinMs = (o: ComputeOptions): number => o.minMs ?? (resolveBackend(o.backend) === 'cpu' ? 25 : 100);

/** The clock a measurement times with (see `ComputeOptions.clock`). */
export const clockOf = (o: ComputeOptions): 'wall' | 'cpu' | 'device' => o.clock ?? (resolveBackend(o.backend) === 'cpu' ? 'cpu' : 'device');

type Timer = ((model: RuntimeModel | null, data: ColumnarDataset | null, n: number) => Promise<number>) & { inner: number };

/**
 * Times `n` forwards of a model over a batch (ms per forward; a model without inputs takes none), on the
 * options' clock; `inner` is how many forwards one timing takes: enough for the full model to run
 * `minMs` (short forwards are all noise). Warms the full model up first.
 */
async function timer(fullModel: RuntimeModel, full: ColumnarDataset, rows: number, o: ComputeOptions): Promise<Timer> {
  const minMs = defaultMinMs(o);
  const clock = clockOf(o);
  // warm-up: forwards of the full model for warmMs (a GPU raises its clocks under load, a CPU fills its
  // caches; timings of a cold device are slower at first and pull the first designs' ratios apart),
  // then the median of 5 forwards sets how many make one timing (a first call can be slow)
  const warmUntil = performance.now() + (o.warmMs ?? (resolveBackend(o.backend) === 'cpu' ? 200 : 2000));
  do await fullModel.predict(full, { batchSize: rows });
  while (performance.now() < warmUntil);
  const probe: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    await fullModel.predict(full, { batchSize: rows });
    probe.push(performance.now() - t0);
  }
  const one = [...probe].sort((a, b) => a - b)[2]!;
  const inner = Math.max(1, Math.min(1000, Math.ceil(minMs / Math.max(0.01, one))));
  const time = async (model: RuntimeModel | null, data: ColumnarDataset | null, n: number): Promise<number> => {
    if (!model || !data) return 0;
    if (clock === 'device') {
      let ms = 0;
      for (let k = 0; k < n; k++) {
        await model.predict(data, { batchSize: rows });
        if (model.lastPredictDeviceMs === null) throw new Error('the device clock needs the CUDA backend (it reports no GPU time)');
        ms += model.lastPredictDeviceMs;
      }
      return ms / n;
    }
    if (clock === 'cpu') {
      const c1 = process.cpuUsage();
      for (let k = 0; k < n; k++) await model.predict(data, { batchSize: rows });
      const c = process.cpuUsage(c1);
      return (c.user + c.system) / 1000 / n;
    }
    const t1 = performance.now();
    for (let k = 0; k < n; k++) await model.predict(data, { batchSize: rows });
    return (performance.now() - t1) / n;
  };
  return Object.assign(time, { inner });
}

/**
 * Each input's share of one prediction: the runtime's forward (predict) over a fixed synthetic batch is
 * timed for the full model and for `designs` models of random halves of the inputs, each subset timed
 * right beside the full model (order alternating, designs shuffled each round) in `repeats` rounds, and
 * the median ratio t(subset) / t(all) taken per design; the A/A pairs of the full model are a design of
 * their own. A cost model of the inputs' structure (`computeUnits`: numeric column, slot, lookups,
 * cache) is fitted to the ratios (`fitComputeModel`), and an input's share is what the fit gives its
 * structure, with a bootstrap interval. A share under the measurement's resolution (the median interval
 * half-width), or whose interval reaches 0, is below resolution and counts as 0.
 */
export async function measureCompute(inputs: ComputeInput[], o: ComputeOptions): Promise<Map<string, ComputeMeasurement>> {
  if ((o.design ?? 'fitted') === 'paired') return measurePaired(inputs, o);
  const out = new Map<string, ComputeMeasurement>();
  if (!inputs.length) return out;
  const rows = defaultComputeRows(o);
  const repeats = o.repeats ?? 9;
  const nDesigns = o.designs ?? 32;
  const backend = resolveBackend(o.backend);
  const create = { backend, ...(o.threads > 0 ? { threads: o.threads } : {}) };
  const full = syntheticBatch(inputs, rows, o.seed ?? 7);
  const fullModel = RuntimeModel.create(specOf(inputs, o), create);
  const r = mulberry32((o.seed ?? 7) + 1);
  const designs: { members: number[]; model: RuntimeModel | null; data: ColumnarDataset | null; ratios: number[] }[] = [];
  // few inputs: every proper subset once; else random halves
  const n = inputs.length;
  const every = n > 1 && 2 ** n - 2 <= nDesigns;
  const subsets: number[][] = [];
  if (every) {
    for (let mask = 1; mask < 2 ** n - 1; mask++) subsets.push(inputs.map((_, i) => i).filter((i) => mask & (1 << i)));
  } else {
    for (let d = 0; d < nDesigns && n > 1; d++) {
      let members: number[] = [];
      while (members.length === 0 || members.length === n) members = inputs.map((_, i) => i).filter(() => r() < 0.5);
      subsets.push(members);
    }
  }
  for (const members of subsets) {
    const names = new Set(members.map((i) => inputs[i]!.name));
    const subset = inputs.filter((x) => names.has(x.name));
    designs.push({ members, model: RuntimeModel.create(specOf(subset, o), create), data: only(full, names), ratios: [] });
  }
  const time = await timer(fullModel, full, rows, o);
  for (const d of designs) await time(d.model, d.data, 1); // warm-up
  const aa: number[] = [];
  const fullTimes: number[] = [];
  const total = repeats * (designs.length + 1);
  let done = 0;
  for (let round = 0; round < repeats; round++) {
    const a1 = await time(fullModel, full, time.inner);
    const a2 = await time(fullModel, full, time.inner);
    aa.push(a1 > 0 ? a2 / a1 : 1);
    fullTimes.push(a1, a2);
    o.onProgress?.(++done, total);
    const order = designs.map((_, i) => i).sort(() => r() - 0.5);
    for (const [k, i] of order.entries()) {
      const d = designs[i]!;
      let tAll: number;
      let tSub: number;
      if ((round + k) % 2 === 0) {
        tAll = await time(fullModel, full, time.inner);
        tSub = await time(d.model, d.data, time.inner);
      } else {
        tSub = await time(d.model, d.data, time.inner);
        tAll = await time(fullModel, full, time.inner);
      }
      fullTimes.push(tAll);
      d.ratios.push(tAll > 0 ? tSub / tAll : 0);
      o.onProgress?.(++done, total);
    }
  }
  const units = inputs.map(computeUnits);
  const timed: ComputeDesign[] = [
    { members: inputs.map((_, i) => i), ratio: medianInterval(aa).median },
    ...designs.map((d) => ({ members: d.members, ratio: medianInterval(d.ratios).median })),
  ];
  const fit = inputs.length === 1 ? null : fitComputeModel(units, timed, { seed: o.seed ?? 7 });
  const tAll = medianInterval(fullTimes).median;
  const spread = bestOf(fullTimes).spread;
  const pct = (x: number) => `${fmt(x * 100)}%`;
  const coefText = fit
    ? fit.fitted.map((u) => (u === 'input' ? `every input ${pct(fit.coef.numeric)}` : `${u} ${pct(fit.coef[u])}`)).join(', ') +
      `; intercept ${pct(fit.intercept)}, R² ${fmt(fit.r2, 3)}`
    : '';
  inputs.forEach((input, i) => {
    // a model of one input: the input is the whole forward
    const p = fit ? fit.perInput[i]! : { share: 1, ciLow: 1, ciHigh: 1 };
    const resolution = fit ? fit.resolution : 0;
    const belowResolution = p.share <= resolution || p.ciLow <= 0;
    const verdict = belowResolution
      ? `below resolution (fitted ${pct(p.share)}, interval [${pct(p.ciLow)}, ${pct(p.ciHigh)}], resolution ${pct(resolution)}): counted as 0`
      : `share ${pct(p.share)}, interval [${pct(p.ciLow)}, ${pct(p.ciHigh)}] (95%), resolution ${pct(resolution)}`;
    out.set(input.name, {
      design: 'fitted',
      share: belowResolution ? 0 : Math.min(1, p.share),
      median: p.share,
      ciLow: p.ciLow,
      ciHigh: p.ciHigh,
      coverage: 0.95,
      resolution,
      belowResolution,
      tAllMs: tAll,
      tWithoutMs: tAll * (1 - p.share),
      spread,
      allMs: fullTimes,
      withoutMs: [],
      how: `forward of ${rows.toLocaleString('en-US')} synthetic rows on ${backend} (${clockOf(o)} time): ${every ? `every one of the ${designs.length} proper subsets` : `${designs.length} models of random halves`} of the ${inputs.length} inputs timed beside the full model (${fmt(tAll, 2)} ms) in ${repeats} rounds of ${time.inner} forward${time.inner > 1 ? 's' : ''}, a cost model of the inputs' structure fitted to them (${coefText}): ${verdict}`,
    });
  });
  return out;
}

/** The dataset with only the named inputs (numeric columns and slots); arrays are copied or shared, never mutated. */
function only(d: ColumnarDataset, names: Set<string>): ColumnarDataset {
  const keep = d.numericNames.map((n, j) => [n, j] as const).filter(([n]) => names.has(n));
  const w = d.numericNames.length;
  const numeric = new Float32Array(d.rows * keep.length);
  for (let r = 0; r < d.rows; r++) keep.forEach(([, j], k) => (numeric[r * keep.length + k] = d.numeric[r * w + j]!));
  return { ...d, numericNames: keep.map(([n]) => n), numeric, slots: d.slots.filter((s) => names.has(s.name)) };
}

/**
 * The paired design: each input's share from rounds of paired timings,
 * for the model of all inputs and for the model without each input, in `repeats` rounds of
 * pairs (the full model timed right beside each reduced one, order alternating), after a warm-up;
 * each timing averages enough forwards for the full model to run `minMs`. Each round also times the
 * full model twice (A/A), the noise floor. Per input the share is the median over the rounds of the
 * pair's (t_all - t_without) / t_all, with its order-statistic interval; a median under the noise
 * floor, or an interval reaching 0, is reported below resolution and counts as 0 (`pairedShare`).
 * The spread is the larger relative spread of the two sides' timings. A model left without inputs
 * takes no time.
 */
async function measurePaired(inputs: ComputeInput[], o: ComputeOptions): Promise<Map<string, ComputeMeasurement>> {
  const out = new Map<string, ComputeMeasurement>();
  if (!inputs.length) return out;
  const rows = defaultComputeRows(o);
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
  const time = await timer(variants[0]!.model!, full, rows, o);
  const inner = time.inner;
  const fullVariant = variants[0]!;
  const total = (variants.length - 1) * repeats;
  let done = 0;
  for (const v of variants.slice(1)) await time(v.model, v.data, 1); // warm-up
  // paired timings: the full model right beside each reduced one (order alternating), so drift in the
  // machine's load falls on both sides of a pair
  const pairs = new Map<string, { all: number[]; without: number[] }>();
  // the noise floor: per round, two timings of the same full model side by side (A/A)
  const aa: [number, number][] = [];
  for (let round = 0; round < repeats; round++) {
    aa.push([await time(fullVariant.model, fullVariant.data, inner), await time(fullVariant.model, fullVariant.data, inner)]);
    for (const v of variants.slice(1)) {
      const p = pairs.get(v.name!) ?? { all: [], without: [] };
      if (round % 2 === 0) {
        p.all.push(await time(fullVariant.model, fullVariant.data, inner));
        p.without.push(await time(v.model, v.data, inner));
      } else {
        p.without.push(await time(v.model, v.data, inner));
        p.all.push(await time(fullVariant.model, fullVariant.data, inner));
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
      design: 'paired',
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
