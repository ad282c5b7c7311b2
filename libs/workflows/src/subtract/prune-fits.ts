import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Logger } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { TrialEntity } from '@abacus/data';
import { QueueName, type FitCheckJob, type JobContext, type QueueService } from '@abacus/queue';
import { materialize, type ColumnarDataset } from '@abacus/runtime';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { foldOrder, sampleRows } from '../model/dataset-subset';
import type { BuiltSet } from '../model/built-samples.cache';
import type { FineTuneLanes, FineTuneResult, TrainedModel } from '../model/model-trainer';
import { trainTrialParamsSchema } from '../trials/train-trial.schema';
import { trialBySeq, type WorkflowContext } from '../trials/workflow-context';
import { recipeInit } from '../embeddings/recipe-init';
import { pruneTrialParamsSchema, WARM_MIN_STEPS, type PruneTrialParams } from './subtract-experiment.schema';

type Recipe = ReturnType<typeof trainTrialParamsSchema.parse>['recipe'];

/**
 * What a prune's retraining checks read, opened the same way by the prune itself and by any worker
 * that takes one of its checks (fit.check jobs): the samples, the trained model, the decision rows
 * laid fold after fold, and the rows a warm fine-tune trains on. Every part is deterministic for the
 * trial's parameters, so a check gives the same AUC on whichever worker runs it.
 */
export interface PruneFitState {
  trialId: string;
  p: PruneTrialParams;
  names: string[];
  features: ResolvedFeature[];
  recipe: Recipe & { features: ResolvedFeature[] };
  built: BuiltSet;
  trained: TrainedModel;
  /** the decision rows (the validation split or a seeded sample of it), fold after fold */
  validation: ColumnarDataset;
  /** fold k is rows [bounds[k], bounds[k+1]) of validation */
  bounds: number[];
  stepsPerEpoch: number;
  mode: 'warm' | 'scratch';
  seeds: number[];
  /** rows a capped warm fine-tune reads (Infinity: the whole training split) */
  capRows: number;
  /** whether a warm fine-tune reads a per-seed sample of the training split */
  sampled: boolean;
  trainRowsOf(seed: number): Promise<ColumnarDataset>;
  /** lane models restored in place (warm checks on cpu / cuda with ABACUS_FINE_TUNE_IN_PLACE); null otherwise */
  lanes: FineTuneLanes | null;
  device: number | undefined;
}

/** Opens a prune trial's checks' inputs on `device` (see PruneFitState). */
export async function openPruneFits(
  w: WorkflowContext,
  trial: Pick<TrialEntity, 'id' | 'experimentId' | 'params'>,
  device: number | undefined,
): Promise<PruneFitState> {
  const p = pruneTrialParamsSchema.parse(trial.params);
  const modelTrial = await trialBySeq(w.ds, trial.experimentId, p.modelSeq);
  const mp = trainTrialParamsSchema.parse(modelTrial.params);
  const names = modelTrial.metrics!.features as string[];
  const features = names.map((n) => mp.recipe.features.find((f) => f.name === n)!) as ResolvedFeature[];
  const recipe = { ...mp.recipe, features };
  const built = await w.samples.get(recipe, features);
  const trained = await w.trainer.trainOrReuse(
    built,
    recipe.architecture,
    recipe.training,
    { device },
    recipeInit(w.dataDir, recipe, built),
  );
  // the decisions' rows: the validation split, or a seeded sample of decisionRows of a larger one,
  // in memory once, laid out fold after fold: each fold is a range of it (no second copy), and the
  // warm checks' switched-off copies are of it
  const sampledValidation = p.decisionRows !== undefined && built.validation.rows > p.decisionRows;
  const laid = foldOrder(
    built.validation.rows,
    p.folds,
    p.seed + 7,
    sampledValidation ? sampleRows(built.validation.rows, p.decisionRows!, p.seed + 29) : undefined,
  );
  const validation = await materialize(built.validation, laid.order);
  // retraining checks: warm (fine-tuned copies of the trained model) or from scratch (see the spec)
  const stepsPerEpoch = Math.floor((built.train.rows * (1 - recipe.training.validationFraction)) / recipe.training.batchSize);
  const mode: 'warm' | 'scratch' = p.retrain === 'auto' ? (stepsPerEpoch >= WARM_MIN_STEPS ? 'warm' : 'scratch') : p.retrain;
  const seeds = mode === 'warm' ? p.retrainSeeds.slice(0, p.warmSeeds ?? p.retrainSeeds.length) : p.retrainSeeds;
  // a capped warm fine-tune reads warmMaxSteps batches: on a larger training split those rows are
  // drawn per seed (the same rows for the reference and every set on that seed), and only they are
  // switched off and handed to the model — not the whole split (at 10M rows that upload and copy
  // was most of a fine-tune)
  const capRows = mode === 'warm' && p.warmMaxSteps > 0 ? p.warmMaxSteps * recipe.training.batchSize : Infinity;
  const sampled = built.train.rows > capRows;
  const rowsOfSeed = new Map<number, Promise<ColumnarDataset>>();
  const trainRowsOf = (seed: number): Promise<ColumnarDataset> => {
    let d = rowsOfSeed.get(seed);
    if (!d) rowsOfSeed.set(seed, (d = materialize(built.train, sampleRows(built.train.rows, capRows, seed))));
    return d;
  };
  // warm checks in place (cpu / cuda): lane models restored from the trained model's state and the
  // set switched off inside the model, over the same rows for every set (no copies; on the GPU the
  // rows stay resident across fits); ABACUS_FINE_TUNE_IN_PLACE=false: a checkpoint load and
  // switched-off copies of the rows per fit
  const lanes = mode === 'warm' && w.devices.fineTuneInPlace ? w.trainer.fineTuneLanes(trained) : null;
  return {
    trialId: trial.id,
    p,
    names,
    features,
    recipe,
    built,
    trained,
    validation,
    bounds: laid.bounds,
    stepsPerEpoch,
    mode,
    seeds,
    capRows,
    sampled,
    trainRowsOf,
    lanes,
    device,
  };
}

/** A warm check's fine-tune on `seed`: a row sample is one pass of warmMaxSteps steps; else warmEpochs, capped at warmMaxSteps. */
export function warmFitOptions(
  s: Pick<PruneFitState, 'p' | 'sampled'>,
  seed: number,
): { epochs: number; seed: number; maxSteps?: number } {
  return { epochs: s.sampled ? 1 : s.p.warmEpochs, seed, ...(s.p.warmMaxSteps > 0 ? { maxSteps: s.p.warmMaxSteps } : {}) };
}

/** One warm check in place: the trained model restored on a lane, `set` switched off, fine-tuned on `seed`, evaluated on the decision rows. */
export async function fitCheckInPlace(
  w: WorkflowContext,
  s: PruneFitState,
  set: string[],
  seed: number,
  device: number | undefined,
  signal?: AbortSignal,
): Promise<FineTuneResult> {
  if (!s.lanes) throw new Error('fitCheckInPlace: the prune checks do not fine-tune in place');
  const data = { train: s.sampled ? await s.trainRowsOf(seed) : s.built.train, validation: s.validation, off: set };
  return w.trainer.fineTune(s.trained, data, s.recipe.training, warmFitOptions(s, seed), { signal, device, lanes: s.lanes });
}

/** A check's outcome as a fit.check job returns it. */
export interface FitCheckResult {
  auc: number;
  loadMs: number;
  trainMs: number;
  evalMs: number;
  queuedMs: number;
  setupMs: number;
  /** opening the prune's samples and model on the worker, when this check waited for it (0: it was open) */
  openMs: number;
  /** the worker that fitted it (host:pid/instance) */
  worker: string;
}

/**
 * Prune fit states open in one worker process, by prune trial: the prune's own (held while it runs)
 * and those opened for checks taken from the queue (dropped when idle for `idleMs`, their samples,
 * model and lane models freed with them).
 */
export class PruneFitStates {
  private readonly states = new Map<string, { state: Promise<PruneFitState>; held: boolean; timer: NodeJS.Timeout | null }>();
  private opened = 0;
  /** this worker, as fit results name it: host:pid and an instance tag (several workers may share a process) */
  readonly worker = `${os.hostname()}:${process.pid}/${randomBytes(3).toString('hex')}`;

  constructor(private readonly idleMs = 60_000) {}

  /** the prune's own state, shared with the checks this process takes, until release */
  hold(trialId: string, state: Promise<PruneFitState>): void {
    const had = this.states.get(trialId);
    if (had?.timer) clearTimeout(had.timer);
    this.states.set(trialId, { state, held: true, timer: null });
  }

  release(trialId: string): void {
    const s = this.states.get(trialId);
    if (s?.held) this.states.delete(trialId);
  }

  /** the open state of a trial, or one opened with `open` (shared by the checks that ask meanwhile) */
  async get(trialId: string, open: () => Promise<PruneFitState>): Promise<{ state: PruneFitState; opened: boolean }> {
    let s = this.states.get(trialId);
    let opened = false;
    if (!s) {
      opened = true;
      this.opened += 1;
      s = { state: open(), held: false, timer: null };
      this.states.set(trialId, s);
      // a failed opening is not kept: the next check tries again
      s.state.catch(() => {
        if (this.states.get(trialId) === s) this.states.delete(trialId);
      });
    }
    if (!s.held) {
      if (s.timer) clearTimeout(s.timer);
      const entry = s;
      entry.timer = setTimeout(() => {
        if (this.states.get(trialId) === entry) this.states.delete(trialId);
      }, this.idleMs);
      entry.timer.unref();
    }
    return { state: await s.state, opened };
  }

  /** trials with an open state here */
  get size(): number {
    return this.states.size;
  }

  /** states this process opened for checks (not its own prunes') */
  get openedForChecks(): number {
    return this.opened;
  }

  clear(): void {
    for (const s of this.states.values()) if (s.timer) clearTimeout(s.timer);
    this.states.clear();
  }
}

/**
 * Runs the fit.check jobs this worker takes: opens the prune's state once per trial (or uses the
 * prune's own when it runs in this process) and fine-tunes one set on one seed. A check of a prune
 * that is no longer running (cancelled, failed, finished) is refused: nothing waits for it.
 */
export class FitCheckHandler {
  private readonly logger = new Logger(FitCheckHandler.name);
  private nextDevice = 0;

  constructor(
    private readonly w: WorkflowContext,
    readonly states: PruneFitStates,
  ) {}

  private device(): number | undefined {
    if (this.w.devices.size === 0) return undefined;
    return this.nextDevice++ % this.w.devices.size;
  }

  private async trialOf(payload: Pick<FitCheckJob, 'trialId' | 'experimentId'>): Promise<TrialEntity> {
    const trial = await this.w.ds.getRepository(TrialEntity).findOneBy({ id: payload.trialId });
    if (!trial || trial.experimentId !== payload.experimentId || trial.kind !== 'prune') {
      throw new UnrecoverableError(
        `fit check: trial ${payload.trialId} is not a prune trial of experiment ${payload.experimentId}`,
      );
    }
    if (trial.status !== 'running') {
      throw new UnrecoverableError(
        `fit check: prune trial ${payload.trialId} is ${trial.status}, no longer running; its check is not needed`,
      );
    }
    return trial;
  }

  /** Opens a running prune's state ahead of its first check (announced by the prune); errors are logged. */
  prepare(payload: Pick<FitCheckJob, 'trialId' | 'experimentId'>): void {
    void (async () => {
      const trial = await this.trialOf(payload);
      await this.states.get(trial.id, () => openPruneFits(this.w, trial, this.device()));
    })().catch((err: unknown) =>
      this.logger.warn(`could not open prune ${payload.trialId} ahead of its checks: ${(err as Error)?.message ?? err}`),
    );
  }

  async handle(payload: FitCheckJob, ctx: JobContext): Promise<FitCheckResult> {
    const t0 = Date.now();
    const trial = await this.trialOf(payload);
    const { state, opened } = await this.states.get(trial.id, () => openPruneFits(this.w, trial, this.device()));
    const openMs = opened ? Date.now() - t0 : 0;
    const unknown = payload.set.filter((n: string) => !state.names.includes(n));
    if (unknown.length) throw new UnrecoverableError(`fit check: ${unknown.join(', ')} not inputs of the prune's model`);
    const r = await fitCheckInPlace(this.w, state, payload.set, payload.seed, state.device, ctx.signal);
    return {
      auc: r.validation.auc,
      loadMs: r.loadMs,
      trainMs: r.trainMs,
      evalMs: r.evalMs,
      queuedMs: r.queuedMs,
      setupMs: r.setupMs,
      openMs,
      worker: this.states.worker,
    };
  }
}

/** How a prune hands its checks to the workers of its backend (the worker's QueueService behind it). */
export interface FitDispatch {
  /** whether a prune on this backend spreads its checks: forced on / off, or `auto` (GPU and ≥ 2 workers listening) */
  shouldSpread(gpu: boolean): Promise<{ spread: boolean; workers: number | null }>;
  /** tells the workers to open the prune's state now, ahead of its first check */
  announce(gpu: boolean, check: Pick<FitCheckJob, 'trialId' | 'experimentId'>): Promise<void>;
  /** runs the checks on whichever workers take them; results in the checks' order */
  run(gpu: boolean, checks: FitCheckJob[], signal?: AbortSignal): Promise<FitCheckResult[]>;
}

/**
 * FitDispatch over the worker's queues. `mode`: ABACUS_PRUNE_SPREAD (`auto`: a prune on the GPU
 * spreads its checks when at least two workers listen on the GPU fits queue; true: any backend, even
 * with one worker; false: never).
 */
export class QueueFitDispatch implements FitDispatch {
  constructor(
    private readonly queue: QueueService,
    private readonly mode: 'auto' | boolean,
  ) {}

  async shouldSpread(gpu: boolean): Promise<{ spread: boolean; workers: number | null }> {
    if (this.mode === false) return { spread: false, workers: null };
    const workers = await this.queue.workersOn(gpu ? QueueName.FitsGpu : QueueName.Fits);
    if (this.mode === true) return { spread: true, workers };
    return { spread: gpu && workers !== null && workers >= 2, workers };
  }

  announce(gpu: boolean, check: Pick<FitCheckJob, 'trialId' | 'experimentId'>): Promise<void> {
    return this.queue.announceFits(gpu, check);
  }

  async run(gpu: boolean, checks: FitCheckJob[], signal?: AbortSignal): Promise<FitCheckResult[]> {
    return (await this.queue.runFitChecks(gpu, checks, signal)) as FitCheckResult[];
  }
}
