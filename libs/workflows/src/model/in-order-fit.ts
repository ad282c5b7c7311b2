import { isShardDataset, materialize, shardRanges, type RuntimeData, type RuntimeModel, type TrainResult } from '@abacus/runtime';
import type { Training } from './model-recipe.schema';
import { hashUnit } from './validation-split';

/** Row ranges [from, to) of a split, in order, not overlapping. */
export type RowRanges = [number, number][];

/**
 * The rows a fit reads, by ranges: a split at hand, or one still being built (BuiltSamplesCache.stream:
 * `ranges` then waits until the build has written every row asked for).
 */
export interface RowSource {
  rows: number;
  ranges(ranges: RowRanges): Promise<RuntimeData>;
}

export function isRowSource(x: RuntimeData | RowSource): x is RowSource {
  return typeof (x as RowSource).ranges === 'function';
}

/** A split at hand as a RowSource: ranges of shards are views, of rows in memory copies. */
export function rowSourceOf(data: RuntimeData): RowSource {
  return {
    rows: data.rows,
    ranges: async (ranges) => {
      if (isShardDataset(data)) return shardRanges(data, ranges);
      const idx: number[] = [];
      for (const [from, to] of ranges) for (let i = from; i < to; i++) idx.push(i);
      return materialize(data, idx);
    },
  };
}

/** Fitted rows a chunk of an in-order first epoch holds: at least 65,536, and at most 16 chunks. */
export function inOrderChunkRows(fitRows: number): number {
  return Math.max(65_536, Math.ceil(fitRows / 16));
}

/** Rows per block of the early-stopping holdout: 16 to 4,096, about 2,048 blocks. */
function holdoutBlockRows(rows: number): number {
  return Math.min(4096, Math.max(16, Math.ceil(rows / 2048)));
}

/**
 * The early-stopping holdout of an in-order fit: seeded blocks of consecutive rows, about `fraction`
 * of them (the last block where the hash took none or all), and the fitted rest, both as ranges of the rows.
 * Blocks, not single rows, so that both are views of the shards (and a chunk of the first epoch needs
 * only the rows before its end).
 */
export function holdoutRanges(rows: number, fraction: number, seed: number): { fit: RowRanges; holdout: RowRanges } {
  if (!(fraction > 0) || rows < 2) return { fit: rows ? [[0, rows]] : [], holdout: [] };
  const size = holdoutBlockRows(rows);
  const blocks = Math.ceil(rows / size);
  const fit: RowRanges = [];
  const holdout: RowRanges = [];
  const push = (to: RowRanges, lo: number, hi: number) => {
    const prev = to[to.length - 1];
    if (prev && prev[1] === lo) prev[1] = hi;
    else to.push([lo, hi]);
  };
  let held = 0;
  for (let b = 0; b < blocks; b++) {
    const lo = b * size;
    const hi = Math.min(rows, lo + size);
    const take = hashUnit(b, seed + 101) < fraction;
    push(take ? holdout : fit, lo, hi);
    if (take) held++;
  }
  if (held === 0 || held === blocks) {
    // the hash took none or all: the last block (or, with a single block, its last `fraction` of rows)
    const lo = blocks > 1 ? (blocks - 1) * size : Math.max(1, rows - Math.max(1, Math.round(rows * fraction)));
    return { fit: [[0, lo]], holdout: [[lo, rows]] };
  }
  return { fit, holdout };
}

/** Rows [from, to) of the sequence of rows `ranges` covers, as ranges of the underlying rows. */
export function subRanges(ranges: RowRanges, from: number, to: number): RowRanges {
  const out: RowRanges = [];
  let at = 0;
  for (const [lo, hi] of ranges) {
    const a = Math.max(from, at);
    const b = Math.min(to, at + (hi - lo));
    if (a < b) out.push([lo + (a - at), lo + (b - at)]);
    at += hi - lo;
    if (at >= to) break;
  }
  return out;
}

const count = (ranges: RowRanges) => ranges.reduce((a, [lo, hi]) => a + hi - lo, 0);

/**
 * Trains `model` with an in-order first epoch (training.firstEpoch 'inOrder'): the fitted rows less
 * the early-stopping holdout, chunk after chunk in row order (each chunk one shuffled pass, the
 * numeric inputs normalised on the first), then the other epochs shuffled over all of them, early
 * stopping on the holdout with the first epoch's score as the one to beat (evaluateFirst). Each chunk
 * starts as soon as its rows are there, so over a source still being built the first epoch runs
 * beside the build. The same rows, order and seeds whether the source is complete or not: the same
 * model either way.
 */
export async function fitInOrder(
  model: RuntimeModel,
  source: RowSource,
  training: Training,
  ctx: {
    signal?: AbortSignal;
    onProgress?: (p: { step: number; totalSteps: number; loss: number; epoch: number }) => void;
    /** called as each chunk starts (tests, and the trial's own record of when the first epoch began) */
    onChunk?: (chunk: number, chunks: number) => void;
  } = {},
): Promise<TrainResult> {
  const { fit, holdout } = holdoutRanges(source.rows, training.validationFraction, training.seed);
  const fitRows = count(fit);
  if (fitRows === 0) throw new Error('no training rows');
  const size = inOrderChunkRows(fitRows);
  const chunks = Math.ceil(fitRows / size);
  const perEpoch = Math.ceil(fitRows / training.batchSize);
  const total = perEpoch * training.epochs;
  let steps = 0;
  let samples = 0;
  let seconds = 0;
  let setup = 0;
  let queued = 0;
  let lossSum = 0;
  let lossSteps = 0;
  let finalLoss = NaN;
  let cancelled = false;
  const t0 = performance.now();
  for (let c = 0; c < chunks && !cancelled; c++) {
    const rows = await source.ranges(subRanges(fit, c * size, Math.min(fitRows, (c + 1) * size)));
    if (ctx.signal?.aborted) throw new Error('training aborted');
    ctx.onChunk?.(c, chunks);
    const before = steps;
    const r = await model.train(
      rows,
      {
        epochs: 1,
        batchSize: training.batchSize,
        // each chunk its own shuffle
        seed: training.seed * 4099 + c + 1,
        validationFraction: 0,
        progressEvery: 100,
      },
      {
        signal: ctx.signal,
        onProgress: (p) => ctx.onProgress?.({ step: before + p.step, totalSteps: total, loss: p.loss, epoch: 0 }),
      },
    );
    steps += r.steps;
    samples += r.samples;
    seconds += r.seconds;
    setup += r.setupSeconds ?? 0;
    queued += r.queuedSeconds ?? 0;
    const l = r.history[0]?.trainLoss;
    if (l !== undefined && Number.isFinite(l)) {
      lossSum += l * r.steps;
      lossSteps += r.steps;
    }
    finalLoss = r.finalLoss;
    cancelled = r.cancelled;
    if (!cancelled && !Number.isFinite(r.finalLoss)) break;
  }
  const first = { epoch: 0, trainLoss: lossSteps ? lossSum / lossSteps : NaN, valAuc: NaN, valLogloss: NaN, seconds: (performance.now() - t0) / 1000 };
  const heldRows = count(holdout);
  const base: TrainResult = {
    backend: model.backend,
    steps,
    samples,
    epochs: 1,
    finalLoss,
    samplesPerSecond: seconds > 0 ? samples / seconds : 0,
    seconds,
    queuedSeconds: queued,
    setupSeconds: setup,
    evalSeconds: 0,
    stoppedEarly: false,
    cancelled,
    bestEpoch: -1,
    bestValAuc: 0,
    bestValLogloss: 0,
    trainRows: fitRows,
    validationRows: heldRows,
    history: [first],
  };
  if (cancelled || !Number.isFinite(finalLoss) || (training.epochs === 1 && heldRows === 0)) return base;
  const all = await source.ranges(fit);
  const validationData = heldRows ? await source.ranges(holdout) : undefined;
  if (training.epochs === 1) {
    // one epoch: its holdout score, as a shuffled one-epoch fit reports it
    const m = await model.evaluate(validationData!, { offThread: true });
    return { ...base, bestEpoch: 0, bestValAuc: m.auc, bestValLogloss: m.logloss, history: [{ ...first, valAuc: m.auc, valLogloss: m.logloss }] };
  }
  const r = await model.train(
    all,
    {
      epochs: training.epochs - 1,
      batchSize: training.batchSize,
      seed: training.seed,
      validationFraction: 0,
      ...(validationData
        ? { earlyStopping: { patience: training.patience, monitor: 'auc' as const, restoreBest: true }, evaluateFirst: true }
        : {}),
      progressEvery: 100,
    },
    {
      signal: ctx.signal,
      ...(validationData ? { validationData } : {}),
      onProgress: (p) => ctx.onProgress?.({ step: steps + p.step, totalSteps: total, loss: p.loss, epoch: p.epoch + 1 }),
    },
  );
  return {
    ...r,
    steps: steps + r.steps,
    samples: samples + r.samples,
    epochs: 1 + r.epochs,
    seconds: seconds + r.seconds,
    samplesPerSecond: seconds + r.seconds > 0 ? (samples + r.samples) / (seconds + r.seconds) : 0,
    queuedSeconds: queued + (r.queuedSeconds ?? 0),
    setupSeconds: setup + (r.setupSeconds ?? 0),
    bestEpoch: validationData ? r.bestEpoch + 1 : -1,
    trainRows: fitRows,
    validationRows: heldRows,
    history: [
      { ...first, valAuc: r.initialValAuc ?? NaN, valLogloss: r.initialValLogloss ?? NaN },
      ...r.history.map((h) => ({ ...h, epoch: h.epoch + 1 })),
    ],
  };
}
