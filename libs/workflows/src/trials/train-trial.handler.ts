import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { runTrial, type TrialScope } from './trial-runner';
import { trainTrialParamsSchema } from './train-trial.schema';
import { trialBySeq, withDevice, type WorkflowContext } from './workflow-context';
import { onDevices } from '../model/device-pool';
import { recipeInit } from '../embeddings/recipe-init';
import { foldInterval } from '../stats/fold-interval';
import type { BuiltSet, StreamedSet } from '../model/built-samples.cache';

/** Trains one model of an experiment (or reuses an identical earlier training) and evaluates it. */
export class TrainTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.TrainTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress, signal, logger }: TrialScope, device: number | undefined) {
    const params = trainTrialParamsSchema.parse(trial.params);
    let features = params.recipe.features as ResolvedFeature[];
    let dropped: string[] = [];
    if (params.dropRemovableOf !== undefined) {
      const prune = await trialBySeq(this.w.ds, experiment.id, params.dropRemovableOf);
      dropped = (prune.metrics?.removable as string[] | undefined) ?? [];
      features = features.filter((f) => !dropped.includes(f.name));
    }
    const recipe = { ...params.recipe, features };
    const seeds = params.seeds ?? [recipe.training.seed];
    const runs = [
      { label: 'model', features },
      ...(params.compareWithFull ? [{ label: 'full model', features: params.recipe.features as ResolvedFeature[] }] : []),
    ];
    const total = runs.length * seeds.length;
    const timings: { buildMs: number; trainMs: number; build?: unknown } = { buildMs: 0, trainMs: 0 };
    // an in-order first epoch on samples built here starts as the build writes them (one feature set,
    // no shared embedding to start from: that reads the whole set's id spaces)
    const streamable = recipe.training.firstEpoch === 'inOrder' && runs.length === 1 && !recipe.init;
    // when the build ended and the first epoch's first chunk began, from the trial's start of building (ms)
    const stream: { buildEndMs?: number; firstChunkMs?: number } = {};
    let buildStart = 0;
    // the sample sets first (one per feature set), then every (set, seed) fit as one batch of
    // independent fits: several at a time on the GPU (and its free peers), ABACUS_HOST_FITS at a time on the CPU, each on its share of the cores
    const sets: { label: string; built: BuiltSet | StreamedSet }[] = [];
    const noteBuild = (built: BuiltSet, k: number) => {
      // a build done here: its stages (read, join + statistics, encode; ranges and threads)
      if (!built.cached && k === 0) timings.build = (built.meta as { timings?: unknown }).timings;
    };
    for (const [k, run] of runs.entries()) {
      const t0 = Date.now();
      buildStart = t0;
      const onBuild = (f: number, m: string) => void progress(0.02 + (0.1 * (k + f)) / runs.length, m).catch(() => undefined);
      // the whole recipe, not the pruned one: a subset is then cut from the whole set's columns
      // (in memory, or built on disk by another worker) instead of being built again
      const built = streamable
        ? await this.w.samples.stream(params.recipe as typeof recipe, run.features, onBuild)
        : await this.w.samples.get(params.recipe as typeof recipe, run.features, onBuild);
      if ('streamed' in built) {
        // the fits start now; the build's time is its own, to its end
        void built.done.then(
          (whole) => {
            stream.buildEndMs = Date.now() - t0;
            timings.buildMs += stream.buildEndMs;
            noteBuild(whole, k);
          },
          () => undefined,
        );
      } else {
        timings.buildMs += Date.now() - t0;
        noteBuild(built, k);
      }
      sets.push({ label: run.label, built });
    }
    checkpoint();
    let finished = 0;
    const t0 = Date.now();
    // the seeds in rounds: all at once, or (stopWhenDecided) the first minSeeds, then one at a time
    // until the validation split decides the drop against maxDrop
    const stopRule = params.compareWithFull ? params.stopWhenDecided : undefined;
    const rounds =
      stopRule && seeds.length > stopRule.minSeeds
        ? [seeds.slice(0, stopRule.minSeeds), ...seeds.slice(stopRule.minSeeds).map((s) => [s])]
        : [seeds];
    type Fit = {
      label: string;
      seed: number;
      built: (typeof sets)[number]['built'];
      metrics: Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>>['metrics'];
      cached: boolean;
      trained: Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>> | null;
    };
    const done: Fit[] = [];
    let stop: { split: 'validation'; seeds: number; drop: number; ciLow: number; ciHigh: number; decided: boolean } | null =
      null;
    for (const round of rounds) {
      const fits = await onDevices(
        this.w.devices,
        device,
        sets.flatMap(({ label, built }, k) =>
          round.map((seed) => async (dev: number | undefined): Promise<Fit> => {
            checkpoint();
            const trained = await this.w.trainer.trainOrReuse(
              built,
              recipe.architecture,
              { ...recipe.training, seed },
              {
                signal,
                device: dev,
                // the trial's fits are a batch when it plans more than one (the same for every round)
                batch: total > 1,
                onChunk: (c) => {
                  if (c === 0 && stream.firstChunkMs === undefined) stream.firstChunkMs = Date.now() - buildStart;
                },
                onProgress: (f, m) =>
                  void progress(0.12 + (0.85 * (finished + f)) / total, `${label}, seed ${seed}: ${m}`).catch(() => undefined),
              },
              'streamed' in built ? undefined : recipeInit(this.w.dataDir, recipe, built),
            );
            finished += 1;
            checkpoint();
            // metrics only: a model (and its GPU memory) is kept for the first fit alone
            const first = k === 0 && seed === seeds[0];
            return { label, seed, built, metrics: trained.metrics, cached: trained.cached, trained: first ? trained : null };
          }),
        ),
      );
      done.push(...fits);
      if (!stopRule) continue;
      const used = seeds.filter((s) => done.some((f) => f.seed === s));
      const auc = (label: string, seed: number) => done.find((f) => f.label === label && f.seed === seed)!.metrics.validation.auc;
      const est = foldInterval(
        used.map((s) => auc('full model', s) - auc('model', s)),
        stopRule.alpha,
      );
      const decided = est.ciHigh <= stopRule.maxDrop || est.ciLow > stopRule.maxDrop;
      stop = { split: 'validation', seeds: used.length, drop: est.mean, ciLow: est.ciLow, ciHigh: est.ciHigh, decided };
      if (decided) break;
    }
    timings.trainMs += Date.now() - t0;
    const usedSeeds = seeds.filter((s) => done.some((f) => f.seed === s));
    // in the order of the sets, then of the seeds
    const fits = sets.flatMap(({ label }) => usedSeeds.map((s) => done.find((f) => f.label === label && f.seed === s)!));
    const results = fits.map(({ label, seed, metrics, cached }) => ({
      label,
      seed,
      auc: metrics.auc,
      logloss: metrics.logloss,
      calibration: metrics.calibration,
      validationAuc: metrics.validation.auc,
      validationLogloss: metrics.validation.logloss,
      cached,
      // where a fit trained here spent its time: training (data to the device included), the forward
      // passes over the test and validation splits, writing the model
      ...(cached
        ? {}
        : {
            trainMs: metrics.trainMs,
            evalMs: metrics.evalMs ?? null,
            saveMs: metrics.saveMs ?? null,
            steps: metrics.steps,
            epochs: metrics.epochs,
            ...(metrics.trainPhases ? { trainPhases: metrics.trainPhases } : {}),
          }),
    }));
    const mean = (label: string, k: 'auc' | 'logloss' | 'calibration' | 'validationAuc' | 'validationLogloss') => {
      const xs = results.filter((r) => r.label === label).map((r) => r[k]);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const { trained } = fits[0];
    if (!trained) throw new Error('the first fit kept no model');
    const first = fits[0].built;
    const built = 'streamed' in first ? await first.done : first;
    logger.log(
      `${params.role} model: ${features.length} features, test AUC ${mean('model', 'auc').toFixed(4)} over ${usedSeeds.length} seed(s)`,
    );
    return {
      backend: trained.backend,
      metrics: {
        role: params.role,
        candidate: params.candidate ?? null,
        features: features.map((f) => f.name),
        dropped,
        // auc, logloss, calibration (and fullAuc, aucDrop): the test split, read only for reporting
        split: 'test',
        auc: mean('model', 'auc'),
        logloss: mean('model', 'logloss'),
        calibration: mean('model', 'calibration'),
        validation: {
          split: 'validation',
          auc: mean('model', 'validationAuc'),
          logloss: mean('model', 'validationLogloss'),
          rows: built.validation.rows,
        },
        // the seeds fitted (stopWhenDecided: possibly fewer than planned) and the planned ones
        seeds: usedSeeds,
        seedsPlanned: seeds,
        ...(stopRule ? { stopWhenDecided: { ...stopRule, ...stop } } : {}),
        perSeed: results,
        ...(params.compareWithFull
          ? {
              fullAuc: mean('full model', 'auc'),
              fullLogloss: mean('full model', 'logloss'),
              aucDrop: mean('full model', 'auc') - mean('model', 'auc'),
            }
          : {}),
        testRows: built.test.rows,
        validationRows: built.validation.rows,
        // the training split; models fit on fitRows of it (the rest is the validation split)
        trainRows: built.train.rows + built.validation.rows,
        fitRows: built.train.rows,
        steps: trained.metrics.steps,
        epochs: trained.metrics.epochs,
        stoppedEarly: trained.metrics.stoppedEarly,
        trainMs: trained.metrics.trainMs,
        // cuda: the embedding tables trained in host memory through a device cache (too large for the budget)
        ...(trained.metrics.embeddingTables ? { embeddingTables: trained.metrics.embeddingTables } : {}),
        samplesKey: built.key,
        samplesCached: built.cached,
        modelKey: trained.key,
        modelDir: trained.dir,
        modelCached: results.every((r) => r.cached),
        // the first epoch read the samples as they were built: when its first chunk began and the build ended
        ...(stream.firstChunkMs !== undefined && stream.buildEndMs !== undefined
          ? { streamedBuild: { firstChunkMs: stream.firstChunkMs, buildEndMs: stream.buildEndMs } }
          : {}),
        // the shared embedding the model started from, and the rows it carried per slot
        ...(trained.init !== undefined ? { init: trained.init } : {}),
        timings,
      },
    };
  }
}
