import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { FeatureResultEntity } from '@abacus/data';
import { sampleRows } from '../model/dataset-subset';
import { materialize, rowRange, type ColumnarDataset } from '@abacus/runtime';

/** rows the correlations between numeric inputs are measured on: all of a set this size, a sample of larger ones */
const CORRELATION_ROWS = 1_000_000;
import { foldInterval, type FoldEstimate } from '../stats/fold-interval';
import { groupDrops } from '../trials/group-ablation';
import { runTrial, type TrialScope } from '../trials/trial-runner';
import { trialBySeq, withDevice, type WorkflowContext } from '../trials/workflow-context';
import { onDevices } from '../model/device-pool';
import { featureCosts } from './feature-costs';
import { numericCorrelations } from './numeric-correlation';
import { nextRetrainChecks, pruneScan } from './prune-scan';
import { recipeInit } from '../embeddings/recipe-init';
import { fitCheckInPlace, openPruneFits, warmFitOptions, type PruneFitState } from './prune-fits';

export interface RankedFeature {
  feature: string;
  ivRank: number | null;
  shuffleRank: number | null;
  /** mean of the available ranks; 1 = least important */
  combinedRank: number;
}

/** Rank 1 = least important; ties broken by name so the order is reproducible. */
export function rankFeatures(features: string[], iv: Map<string, number>, shuffle: Map<string, number>): RankedFeature[] {
  const rankBy = (scores: Map<string, number>) => {
    const present = features.filter((f) => scores.has(f)).sort((a, b) => scores.get(a)! - scores.get(b)! || a.localeCompare(b));
    return new Map(present.map((f, i) => [f, i + 1]));
  };
  const ri = rankBy(iv);
  const rs = rankBy(shuffle);
  return features
    .map((f) => {
      const ranks = [ri.get(f), rs.get(f)].filter((r): r is number => r !== undefined);
      return {
        feature: f,
        ivRank: ri.get(f) ?? null,
        shuffleRank: rs.get(f) ?? null,
        combinedRank: ranks.length ? ranks.reduce((a, b) => a + b, 0) / ranks.length : features.length,
      };
    })
    .sort((a, b) => a.combinedRank - b.combinedRank || a.feature.localeCompare(b.feature));
}

/**
 * The pruning rounds: each round adds the next `batchSize` lowest-ranked features to the removed
 * group and verifies the whole group on the trained model (one permutation of the group per repeat,
 * per validation fold). A round whose estimated AUC drop exceeds maxDrop gets a second opinion from
 * retraining without the group (mean validation AUC over `retrainSeeds` seeds): permutation
 * overstates the loss of features the model leans on when others can stand in for them. Rounds go
 * on while accepted; the first rejected batch is tried one feature at a time (back-off), then the rest
 * of the ranking one feature at a time (retrained only where the estimate cannot tell). Then the
 * accepted set is checked by retraining as a whole (backing off to its largest prefix within the
 * limit), and the weaker of each strongly correlated numeric pair is tried on top, one at a time.
 * Retrained drops are taken against the best retrained model seen so far, not only the full one.
 * Every decision here reads the validation split only; the test split is left to the confirm step.
 */
export class PruneTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.PruneTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress, signal }: TrialScope, device: number | undefined) {
    const tStart = Date.now();
    // the samples, the trained model and the decision rows, shared with the checks this process
    // takes from the queue when the prune spreads them (prune-fits.ts)
    await progress(0.05, 'loading samples and model');
    const opening = openPruneFits(this.w, trial, device);
    this.w.fits?.states.hold(trial.id, opening);
    try {
      return await this.scan(await opening, { trial, experiment, checkpoint, progress, signal }, device, tStart);
    } finally {
      this.w.fits?.states.release(trial.id);
    }
  }

  private async scan(
    state: PruneFitState,
    { trial, experiment, checkpoint, progress, signal }: Omit<TrialScope, 'logger'>,
    device: number | undefined,
    tStart: number,
  ) {
    const {
      p,
      names,
      features,
      recipe,
      built,
      trained,
      validation,
      mode,
      seeds,
      sampled,
      trainRowsOf,
      lanes,
      stepsPerEpoch,
      capRows,
    } = state;
    const iv = new Map<string, number>();
    if (p.ivSeq !== null) {
      await trialBySeq(this.w.ds, experiment.id, p.ivSeq);
      const rows = await this.w.ds.getRepository(FeatureResultEntity).findBy({ experimentId: experiment.id, scorer: 'iv' });
      for (const r of rows) if (names.includes(r.featureName)) iv.set(r.featureName, r.value);
    }
    const shuffle = new Map<string, number>();
    if (p.shuffleSeq !== null) {
      const sh = await trialBySeq(this.w.ds, experiment.id, p.shuffleSeq);
      for (const g of sh.metrics!.groups as { inputs: string[]; mean: number }[]) shuffle.set(g.inputs[0], g.mean);
    }
    const ranking = rankFeatures(names, iv, shuffle);
    const order = ranking.map((r) => r.feature);
    const folds = state.bounds.slice(1).map((hi, k) => rowRange(validation, state.bounds[k]!, hi));
    // the checks on every worker of this backend (fit.check jobs) when the prune spreads them: warm
    // checks in place only (their inputs are the state above, opened the same way on any worker)
    const gpu = device !== undefined;
    const spreading = lanes && this.w.fits ? await this.w.fits.dispatch.shouldSpread(gpu) : { spread: false, workers: null };
    if (spreading.spread) await this.w.fits!.dispatch.announce(gpu, { trialId: trial.id, experimentId: experiment.id });
    checkpoint();

    type CurvePoint = {
      round: number;
      check: 'permutation' | 'retrain';
      removed: number;
      added: string[];
      drop: number;
      ciLow: number | null;
      ciHigh: number | null;
      accepted: boolean;
    };
    const curve: CurvePoint[] = [];
    const point = (check: CurvePoint['check'], set: string[], added: string[], drop: number, ci: [number, number] | null) => {
      const accepted = drop <= p.maxDrop;
      curve.push({
        round: curve.length + 1,
        check,
        removed: set.length,
        added,
        drop,
        ciLow: ci?.[0] ?? null,
        ciHigh: ci?.[1] ?? null,
        accepted,
      });
      return accepted;
    };
    const progressAt = () => Math.min(0.9, 0.1 + (0.8 * curve.length) / (names.length + 4));

    const timings = {
      // before the scan: the ranking read, the samples and trained model opened, the validation rows in memory
      setupMs: Date.now() - tStart,
      // the correlations between numeric inputs (the redundancy candidates)
      correlationMs: 0,
      ablateMs: 0,
      retrainMs: 0,
      retrainBuildMs: 0,
      retrainFitMs: 0,
      retrainFits: 0,
      retrainSets: 0,
      // batches of fits run together (the reference with the first set, then one set at a time)
      retrainBatches: 0,
      // per fit, summed over fits (a batch's fits run at once on the GPU: sums can exceed retrainMs);
      // warm checks: loading the trained model's copy, fine-tuning, evaluating on the validation split
      warmLoadMs: 0,
      warmTrainMs: 0,
      warmEvalMs: 0,
      // of warmTrainMs: waiting for a thread, and each fit's setup before its first step
      warmQueuedMs: 0,
      warmSetupMs: 0,
      // lookahead: sets fitted before they were asked for, and how many of them were asked for later
      lookaheadSets: 0,
      lookaheadUsed: 0,
      // confirmAhead: the confirm step's whole-model fits trained here (beside the checks on the GPU)
      confirmAheadFits: 0,
      confirmAheadMs: 0,
      // spread checks: those fitted by other workers, and the time checks waited for a worker to open the prune's state
      remoteFits: 0,
      spreadOpenMs: 0,
      writeMs: 0,
    };
    // the estimate: permute the whole removed group together on the trained model, per validation
    // fold; deterministic for a set (seeded), so made once whoever asks
    const estimates = new Map<string, FoldEstimate>();
    const estimate = async (set: string[]): Promise<FoldEstimate> => {
      const key = set.join('|');
      const known = estimates.get(key);
      if (known) return known;
      const t0 = Date.now();
      const d = await groupDrops(trained.model, folds, [set], p.repeats, p.seed + 7, async () => checkpoint());
      timings.ablateMs += Date.now() - t0;
      const e = foldInterval(d.auc[0], p.alpha);
      estimates.set(key, e);
      return e;
    };
    const correlationsOf = new Map<string, { a: string; b: string; r: number }[]>();
    const correlations = async (among: string[]) => {
      const key = among.join('|');
      let c = correlationsOf.get(key);
      // on at most CORRELATION_ROWS rows of the fitted split (a sample of larger ones, copied from the shards)
      if (!c) {
        const t0 = Date.now();
        const rows = await materialize(built.train, sampleRows(built.train.rows, CORRELATION_ROWS, p.seed + 13));
        correlationsOf.set(key, (c = await numericCorrelations(rows, among)));
        timings.correlationMs += Date.now() - t0;
      }
      return c;
    };
    // the arbiter: retrain with and without the set on the same seeds, compare mean validation AUC.
    // Every seed of every set asked for at once is one batch of independent fits (onDevices: several
    // at a time on the GPU, ABACUS_HOST_FITS at a time on the CPU); a set's AUC is the mean over its seeds.
    // every warm check switches inputs off in a copy of the validation rows (in memory above)
    const validationRows = async (): Promise<ColumnarDataset> => validation;
    // spread checks: fits per worker (host:pid), and the checks' results timed where they ran
    const byWorker = new Map<string, number>();
    const me = this.w.fits?.states.worker;
    const spreadChecks = async (checks: { set: string[]; seed: number }[]): Promise<number[]> => {
      checkpoint();
      const results = await this.w.fits!.dispatch.run(
        gpu,
        checks.map((c) => ({ experimentId: experiment.id, trialId: trial.id, set: c.set, seed: c.seed })),
        signal,
      );
      for (const r of results) {
        timings.retrainFits += 1;
        timings.retrainFitMs += r.loadMs + r.trainMs + r.evalMs;
        timings.warmLoadMs += r.loadMs;
        timings.warmTrainMs += r.trainMs;
        timings.warmEvalMs += r.evalMs;
        timings.warmQueuedMs += r.queuedMs;
        timings.warmSetupMs += r.setupMs;
        timings.spreadOpenMs += r.openMs;
        if (r.worker !== me) timings.remoteFits += 1;
        byWorker.set(r.worker, (byWorker.get(r.worker) ?? 0) + 1);
      }
      return results.map((r) => r.auc);
    };
    const retrainAuc = new Map<string, number>();
    // sets fitted ahead of being asked for (lookahead), until they are
    const ahead = new Set<string>();
    const keyOf = (set: string[]) => [...set].sort().join('|');
    const aucsWithout = async (sets: string[][], speculative: string[][] = []): Promise<number[]> => {
      for (const s of sets) {
        if (ahead.delete(keyOf(s))) timings.lookaheadUsed += 1;
      }
      const todo = [
        ...new Map([...sets, ...speculative].filter((s) => !retrainAuc.has(keyOf(s))).map((s) => [keyOf(s), s])).values(),
      ];
      if (todo.length) {
        const t0 = Date.now();
        checkpoint();
        const asked = new Set(sets.map(keyOf));
        const extra = todo.filter((s) => !asked.has(keyOf(s)));
        const what = todo
          .filter((s) => asked.has(keyOf(s)))
          .map((s) => s.length)
          .join(' and ');
        // warm: copies of the trained model fine-tuned with the set switched off; scratch: new models
        const inputs = [];
        for (const set of todo) {
          if (lanes) {
            inputs.push({ set, switched: null, built: null });
            continue;
          }
          if (mode === 'warm') {
            const switched = sampled
              ? { train: null, validation: await this.w.trainer.switchedOffRows(trained, await validationRows(), set) }
              : await this.w.trainer.switchedOff(trained, { ...built, validation }, set);
            inputs.push({ set, switched, built: null });
            continue;
          }
          const drop = new Set(set);
          const tb = Date.now();
          const b = await this.w.samples.get(
            recipe,
            features.filter((f) => !drop.has(f.name)),
          );
          timings.retrainBuildMs += Date.now() - tb;
          inputs.push({ set, switched: null, built: b });
        }
        // the asked set may already be at hand (fitted ahead): then only the sets ahead are fitted
        const verb = mode === 'warm' ? 'fine-tuning' : 'retraining';
        await progress(
          progressAt(),
          what
            ? `${verb} without ${what} feature(s), ${seeds.length} seed(s) each` +
                (extra.length ? ` (and ${extra.length} set(s) the next checks may ask for)` : '')
            : `${verb} ahead: ${extra.length} set(s) the next checks may ask for, ${seeds.length} seed(s) each`,
        );
        const tasks = inputs.flatMap((x) =>
          seeds.map((seed) => async (dev: number | undefined): Promise<number> => {
            checkpoint();
            const tf = Date.now();
            if (lanes || x.switched) {
              // in place: the rows as they are, the set switched off inside the lane model; else the
              // switched-off copies made above (a row sample's copy per seed)
              const t = lanes
                ? await fitCheckInPlace(this.w, state, x.set, seed, dev, signal)
                : await this.w.trainer.fineTune(
                    trained,
                    {
                      train: x.switched!.train ?? (await this.w.trainer.switchedOffRows(trained, await trainRowsOf(seed), x.set)),
                      validation: x.switched!.validation,
                    },
                    recipe.training,
                    warmFitOptions(state, seed),
                    { signal, device: dev },
                  );
              timings.retrainFitMs += Date.now() - tf;
              timings.retrainFits += 1;
              timings.warmLoadMs += t.loadMs;
              timings.warmTrainMs += t.trainMs;
              timings.warmEvalMs += t.evalMs;
              timings.warmQueuedMs += t.queuedMs;
              timings.warmSetupMs += t.setupMs;
              return t.validation.auc;
            }
            const t = await this.w.trainer.trainOrReuse(
              x.built!,
              recipe.architecture,
              { ...recipe.training, seed },
              { signal, device: dev, batch: true },
              recipeInit(this.w.dataDir, recipe, x.built!),
            );
            timings.retrainFitMs += Date.now() - tf;
            if (!t.cached) timings.retrainFits += 1;
            return t.metrics.validation.auc;
          }),
        );
        // fits of sets asked for ahead run beside the asked ones: as many at once as the batch holds;
        // spread: every check a fit.check job, taken by whichever worker of this backend is free
        // (this one included), the same fit wherever it runs
        const aucs = spreading.spread
          ? await spreadChecks(inputs.flatMap((x) => seeds.map((seed) => ({ set: x.set, seed }))))
          : await onDevices(
              this.w.devices,
              device,
              tasks,
              extra.length ? Math.max(this.w.devices.lanes, tasks.length) : undefined,
              // warm checks on the CPU one after another, each on every thread (see fineTuneLanes)
              mode === 'warm' ? 1 : undefined,
            );
        for (const [k, x] of inputs.entries()) {
          const own = aucs.slice(k * seeds.length, (k + 1) * seeds.length);
          retrainAuc.set(keyOf(x.set), own.reduce((a, v) => a + v, 0) / own.length);
        }
        for (const s of extra) ahead.add(keyOf(s));
        timings.retrainSets += todo.length;
        timings.lookaheadSets += extra.length;
        timings.retrainBatches += 1;
        timings.retrainMs += Date.now() - t0;
      }
      return sets.map((s) => retrainAuc.get(keyOf(s))!);
    };
    // retrained drops are measured against the best retrained model seen (never worse than the full
    // one): a gain from dropping a feature that hurt cannot be spent on dropping useful ones
    let bestAuc = -Infinity;
    const retrainDrop = async (set: string[], speculative: string[][]) => {
      const [full, auc] = await aucsWithout([[], set], speculative);
      bestAuc = Math.max(bestAuc, full);
      const drop = bestAuc - auc;
      if (drop <= p.maxDrop) bestAuc = Math.max(bestAuc, auc);
      return drop;
    };
    const useRetrain = seeds.length > 0;
    const scan = {
      names,
      order,
      batchSize: p.batchSize,
      retrainScanBelow: p.retrainScanBelow,
      redundancyThreshold: p.redundancyThreshold,
      useRetrain,
    };
    // lookahead (ABACUS_PRUNE_LOOKAHEAD, off by default): a retraining check's batch also fits the
    // sets the scan would ask for next, whichever way this check goes (`lookahead` verdicts deep), so a
    // set asked for later is at hand. Decisions are the same either way; on an H200 the extra fits
    // slowed the ones beside them more than they saved.
    const lookahead = this.w.devices.lookahead;
    // the confirm step's fits of the whole model on its fresh seeds do not depend on the pruning:
    // with confirmAhead they are trained here (beside the checks on the GPU, first on the CPU) and
    // the confirm finds them in the model cache. A failure here only leaves them to the confirm.
    const confirmAhead =
      this.w.devices.confirmAhead && p.confirmSeeds.length
        ? (async () => {
            const t0 = Date.now();
            // metrics only: the models (and their GPU memory) are not kept
            const fits = await Promise.allSettled(
              p.confirmSeeds.map(async (seed) => {
                const t = await this.w.trainer.trainOrReuse(
                  built,
                  recipe.architecture,
                  { ...recipe.training, seed },
                  // as the confirm trial asks for them (a batch of its seeds)
                  { signal, device, batch: true },
                  recipeInit(this.w.dataDir, recipe, built),
                );
                return t.cached ? 0 : 1;
              }),
            );
            timings.confirmAheadMs += Date.now() - t0;
            for (const f of fits) if (f.status === 'fulfilled') timings.confirmAheadFits += f.value;
            const failed = fits.find((f): f is PromiseRejectedResult => f.status === 'rejected');
            return failed ? String((failed.reason as Error)?.message ?? failed.reason) : null;
          })()
        : Promise.resolve(null);
    if (device === undefined) await confirmAhead;
    const verdicts: boolean[] = [];
    const { accepted: scanned, redundant } = await pruneScan(scan, {
      permutation: async (set, added) => {
        const est = await estimate(set);
        return { ok: point('permutation', set, added, est.mean, [est.ciLow, est.ciHigh]), estimate: est };
      },
      retrain: async (set, added) => {
        const next = lookahead > 0 ? await nextRetrainChecks(scan, estimate, correlations, p.maxDrop, verdicts, lookahead) : [];
        const ok = point('retrain', set, added, await retrainDrop(set, next), null);
        verdicts.push(ok);
        return ok;
      },
      correlations,
      progress: (message) => progress(progressAt(), message),
    });
    const accepted = scanned;
    let retrain: {
      fullAuc: number;
      prunedAuc: number;
      bestAuc: number;
      drop: number;
      seeds: number[];
      mode: 'warm' | 'scratch';
    } | null = null;
    if (useRetrain && accepted.length) {
      const [fullAuc, prunedAuc] = await aucsWithout([[], accepted]);
      retrain = { fullAuc, prunedAuc, bestAuc, drop: fullAuc - prunedAuc, seeds, mode };
    }
    const confirmAheadError = await confirmAhead;
    const acceptedEstimate: FoldEstimate = accepted.length
      ? await estimate(accepted)
      : { mean: 0, std: 0, ciLow: 0, ciHigh: 0, folds: p.folds };
    checkpoint();
    await progress(0.95, 'writing the ranking');
    const tw = Date.now();
    const costs = await featureCosts(this.w.ds, experiment.businessLine, names);
    await this.w.ds
      .createQueryBuilder()
      .insert()
      .into(FeatureResultEntity)
      .values(
        ranking.map((r) => ({
          experimentId: experiment.id,
          trialId: trial.id,
          businessLine: experiment.businessLine,
          featureName: r.feature,
          scorer: 'prune_rank',
          value: r.combinedRank,
          ciLow: null,
          ciHigh: null,
          rank: order.indexOf(r.feature) + 1,
          details: {
            ivRank: r.ivRank,
            shuffleRank: r.shuffleRank,
            removable: accepted.includes(r.feature),
            redundantWith: redundant.find((x) => x.feature === r.feature)?.partner ?? null,
          },
        })) as never[],
      )
      .orUpdate(['trial_id', 'value', 'ci_low', 'ci_high', 'rank', 'details'], ['experiment_id', 'feature_name', 'scorer'])
      .execute();
    timings.writeMs += Date.now() - tw;
    return {
      backend: trained.backend,
      metrics: {
        timings,
        // how the retraining checks trained, and on how many steps per epoch that was decided
        retrainMode: useRetrain
          ? {
              mode,
              asked: p.retrain,
              stepsPerEpoch,
              warmEpochs: p.warmEpochs,
              warmMaxSteps: p.warmMaxSteps,
              // the training rows a warm fine-tune is handed (a per-seed sample when capped below the split)
              warmRows: mode === 'warm' ? (sampled ? capRows : built.train.rows) : null,
              // warm fits restored in place on lane models (inputs switched off inside the model), and how many lanes
              inPlace: lanes !== null,
              lanes: lanes?.created ?? 0,
              seeds,
            }
          : null,
        ranking,
        curve,
        removable: accepted,
        kept: names.filter((n) => !accepted.includes(n)),
        // every number of the pruning (curve, estimate, retraining checks) is on the validation split
        split: 'validation',
        // the validation rows the decisions read (a seeded sample when the split is above decisionRows)
        decisionRows: validation.rows,
        validationRows: built.validation.rows,
        estimatedDrop: acceptedEstimate,
        redundant,
        retrain,
        lookahead,
        // the checks as fit.check jobs over every worker of the backend (workers listening when the prune began; fits per worker)
        spread: spreading.spread ? { workers: spreading.workers, fitsByWorker: Object.fromEntries(byWorker) } : null,
        confirmAhead: this.w.devices.confirmAhead && p.confirmSeeds.length > 0,
        ...(confirmAheadError ? { confirmAheadError } : {}),
        baseAuc: trained.metrics.validation.auc,
        baseTestAuc: trained.metrics.auc,
        maxDrop: p.maxDrop,
        batchSize: p.batchSize,
        costs,
      },
    };
  }
}
