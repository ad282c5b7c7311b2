import fs from 'node:fs';
import path from 'node:path';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { FeatureEntity, FeatureResultEntity, ModelEntity } from '@abacus/data';
import { readF32 } from '../model/model-trainer';
import { recipeInit } from '../embeddings/recipe-init';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { pairedBootstrap, pairedSeedBootstrapAsync } from '../stats/paired-bootstrap';
import { foldInterval } from '../stats/fold-interval';
import { seedRowInterval } from '../stats/seed-row-interval';
import { rankScores, weightedAuc } from '../stats/weighted-auc';
import { foldOf } from '../model/built-samples.cache';
import { trainTrialParamsSchema } from '../trials/train-trial.schema';
import { runTrial, type TrialScope } from '../trials/trial-runner';
import { trialBySeq, withDevice, type WorkflowContext } from '../trials/workflow-context';
import { onDevices } from '../model/device-pool';
import { compareTrialParamsSchema } from './add-experiment.schema';
import { verdictFor } from './verdict';
import { registerDiscovered } from '../discover/register-discovered';

type Interval = { mean: number; std: number; ciLow: number; ciHigh: number };
type Predictions = { pred: Float32Array; labels: Float32Array };

/**
 * add's last step. Decisions read the validation split only: each candidate's shuffle contribution
 * there screens it (an interval below minGain rejects it); every other candidate gets base +
 * candidate models on `seeds`, each paired with the base model of the same seed and both fitted
 * without the seed's fold of the training range, and its verdict is taken on the gains on those
 * folds (crossFitGain), whose interval covers validation rows and training seeds. The
 * numbers reported as the result — ΔAUC of augmented vs base, each candidate's gain — are measured
 * on the untouched test split. Then provenance on the registry and a signed notification.
 */
export class CompareTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  private predictions(modelDir: string, split: 'validation' | 'test'): Predictions {
    const dir = this.w.dataDir.abs(modelDir);
    if (!fs.existsSync(path.join(dir, `${split}-predictions.f32`)))
      throw new Error(`model ${modelDir} has no stored ${split} predictions`);
    return { pred: readF32(path.join(dir, `${split}-predictions.f32`)), labels: readF32(path.join(dir, `${split}-labels.f32`)) };
  }

  handle(payload: JobPayloads[JobName.CompareTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress, signal }: TrialScope, device: number | undefined) {
    const p = compareTrialParamsSchema.parse(trial.params);
    const base = await trialBySeq(this.w.ds, experiment.id, p.baseSeq);
    const aug = await trialBySeq(this.w.ds, experiment.id, p.augmentedSeq);
    const screen = await trialBySeq(this.w.ds, experiment.id, p.screenSeq);
    const shuffle = await trialBySeq(this.w.ds, experiment.id, p.ablateSeq);
    // checkpoints trained on another host: from the deployment's store
    for (const t of [base, aug]) await this.w.dataDir.pull(t.metrics!.modelDir as string);
    const b = this.predictions(base.metrics!.modelDir as string, 'test');
    const a = this.predictions(aug.metrics!.modelDir as string, 'test');
    if (b.labels.length !== a.labels.length || b.labels.some((y, i) => y !== a.labels[i])) {
      throw new Error('base and augmented models were evaluated on different test rows');
    }
    await progress(0.05, `paired bootstrap (${p.bootstrap} replicates)`);
    const overall = pairedBootstrap(b.labels, b.pred, a.pred, { replicates: p.bootstrap, seed: p.seed, alpha: p.alpha });
    checkpoint();
    type Group = Interval & { inputs: string[] };
    const groupOf = (t: typeof screen, name: string) =>
      (t.metrics!.groups as Group[]).find((x) => x.inputs.length === 1 && x.inputs[0] === name)!;

    // the leave-one-in models: base and base + candidate on every seed, seed k fitted without fold k of
    // the training range and evaluated on it (cross-fitting: the validation evidence covers every
    // training row once, each seed on rows no other seed is judged on)
    const baseRecipe = trainTrialParamsSchema.parse(base.params).recipe;
    const augRecipe = trainTrialParamsSchema.parse(aug.params).recipe;
    const recipe = { ...baseRecipe, features: baseRecipe.features as ResolvedFeature[] };
    const folds = p.seeds.length;
    // every seed's fit of one feature set: a batch of independent fits (several at once on the GPU's
    // lanes, or on the CPU's share of the cores), in the seeds' order
    const trainAll = async (features: ResolvedFeature[], what: string, at: number) => {
      checkpoint();
      const whole = await this.w.samples.get(recipe, features);
      let done = 0;
      return onDevices(
        this.w.devices,
        device,
        p.seeds.map((seed, k) => async (dev: number | undefined) => {
          checkpoint();
          const built = await foldOf(whole, k, folds);
          const t = await this.w.trainer.trainOrReuse(
            built,
            recipe.architecture,
            { ...recipe.training, seed },
            { signal, device: dev, batch: true },
            recipeInit(this.w.dataDir, recipe, built),
          );
          done += 1;
          await progress(at, `${what}: ${done} of ${folds} seeds fitted (each without its validation fold)`);
          const run: Record<'validation' | 'test', Predictions> = {
            validation: { pred: t.validation.predictions, labels: t.validation.labels },
            test: { pred: t.predictions, labels: t.labels },
          };
          return run;
        }),
      );
    };
    let baseRuns: Record<'validation' | 'test', Predictions>[] | null = null;
    const timings = { leaveOneInMs: 0, bootstrapMs: 0 };

    const candidates = [];
    for (const [i, name] of p.candidates.entries()) {
      const at = 0.1 + (0.7 * i) / p.candidates.length;
      const sc = groupOf(screen, name);
      const te = groupOf(shuffle, name);
      const screenInterval = {
        split: 'validation',
        covers: ['evaluation rows'],
        mean: sc.mean,
        std: sc.std,
        ciLow: sc.ciLow,
        ciHigh: sc.ciHigh,
      };
      const contribution = {
        split: 'test',
        covers: ['evaluation rows'],
        mean: te.mean,
        std: te.std,
        ciLow: te.ciLow,
        ciHigh: te.ciHigh,
      };
      const screenedOut = sc.ciHigh < p.minGain;
      let loi: CrossFitGain | null = null;
      let gain: { split: 'test'; source: string; delta: number; ciLow: number; ciHigh: number; covers: string[] };
      if (!screenedOut || p.leaveOneInAll) {
        const t0 = Date.now();
        const feature = augRecipe.features.find((f) => f.name === name) as ResolvedFeature;
        baseRuns ??= await trainAll(recipe.features, 'base model', at);
        const bases = baseRuns;
        const runs = await trainAll([...recipe.features, feature], `base + ${name}`, at);
        timings.leaveOneInMs += Date.now() - t0;
        const t1 = Date.now();
        loi = crossFitGain(bases, runs, p.seeds, p.candidateAlpha);
        const paired = async (split: 'test', seed: number) => {
          const d = await pairedSeedBootstrapAsync(
            bases[0][split].labels,
            bases.map((r) => r[split].pred),
            runs.map((r) => r[split].pred),
            { replicates: p.bootstrap, seed, alpha: p.candidateAlpha },
          );
          return { ...seedRowInterval(d.perSeed, d.auc.std, p.candidateAlpha), perSeed: d.perSeed };
        };
        const t = await paired('test', p.seed + 1001 + i);
        gain = { split: 'test', source: 'leave-one-in', delta: t.mean, ciLow: t.ciLow, ciHigh: t.ciHigh, covers: t.covers };
        timings.bootstrapMs += Date.now() - t1;
      } else {
        gain = {
          split: 'test',
          source: 'shuffle',
          delta: te.mean,
          ciLow: te.ciLow,
          ciHigh: te.ciHigh,
          covers: ['evaluation rows'],
        };
      }
      // the verdict: the leave-one-in evidence when there is some (always before an adopt), else the screen's reject
      const v = loi
        ? verdictFor(loi.mean, loi.ciLow, loi.ciHigh, p.minGain)
        : {
            verdict: 'reject' as const,
            reason: `validation shuffle interval [${sc.ciLow.toFixed(5)}, ${sc.ciHigh.toFixed(5)}] is below the minimum gain ${p.minGain}`,
          };
      candidates.push({
        feature: name,
        screen: screenInterval,
        contribution,
        leaveOneIn: loi,
        evidence: loi ? 'leave-one-in' : 'shuffle',
        evidenceSplit: 'validation',
        gain,
        ...v,
      });
      await progress(0.1 + (0.7 * (i + 1)) / p.candidates.length, `verdict for ${name}: ${v.verdict}`);
    }
    checkpoint();

    // verdicts next to the contributions the ablate trial stored
    for (const c of candidates) {
      await this.w.ds
        .getRepository(FeatureResultEntity)
        .createQueryBuilder()
        .update()
        .set({ details: () => 'details || CAST(:patch AS jsonb)' })
        .where('experiment_id = :e AND feature_name = :f AND scorer = :s', {
          e: experiment.id,
          f: c.feature,
          s: 'add_contribution',
        })
        .setParameter('patch', JSON.stringify({ verdict: c.verdict, reason: c.reason, leaveOneIn: c.leaveOneIn, gain: c.gain }))
        .execute();
    }

    // discover: the adopted expressions become candidate features of the line (their provenance follows)
    const adoptedNow = new Set(candidates.filter((c) => c.verdict === 'adopt').map((c) => c.feature));
    const registered = p.register
      ? await registerDiscovered(
          this.w.ds,
          experiment,
          p.register.sampleSetId,
          p.register.candidates.filter((c) => adoptedNow.has(c.name)),
        )
      : [];
    // and their costs measured, as any registered feature's (storage from the values, compute timed):
    // a failure is reported in the result, the verdicts stand
    let costs: { measured: number; skipped: { name: string; reason: string }[] } | { error: string } | null = null;
    if (registered.length && this.w.measureCosts) {
      await progress(0.8, `measuring the costs of ${registered.length} registered expression(s)`);
      costs = await this.w.measureCosts(experiment.businessLine, registered).catch((err: Error) => ({ error: err.message }));
    }

    // provenance: where the feature was measured and what it gave (one entry per experiment, so a retry replaces it)
    const measuredAt = new Date().toISOString();
    const model = base.params && (base.params as { recipe?: { modelId?: string | null } }).recipe?.modelId;
    const modelRow = model ? await this.w.ds.getRepository(ModelEntity).findOneBy({ id: model }) : null;
    const recorded: string[] = [];
    for (const c of candidates) {
      const repo = this.w.ds.getRepository(FeatureEntity);
      const f =
        (await repo.findOneBy({ businessLine: experiment.businessLine, name: c.feature })) ??
        (await repo.findOne({ where: { name: c.feature }, order: { createdAt: 'ASC' } }));
      if (!f) continue;
      // the decision's evidence (validation), which `auto` in other lines reads, and the reported test gain
      const evidence = c.leaveOneIn ?? c.screen;
      f.provenance = [
        ...f.provenance.filter((x) => x.experimentId !== experiment.id),
        {
          businessLine: experiment.businessLine,
          experimentId: experiment.id,
          model: modelRow ? `${modelRow.name}@v${modelRow.version}` : undefined,
          metric: 'auc',
          gain: evidence.mean,
          ciLow: evidence.ciLow,
          ciHigh: evidence.ciHigh,
          split: 'validation',
          verdict: c.verdict,
          test: { gain: c.gain.delta, ciLow: c.gain.ciLow, ciHigh: c.gain.ciHigh },
          measuredAt,
        },
      ];
      await repo.save(f);
      recorded.push(c.feature);
    }

    const result = {
      // base, augmented, delta, each candidate's contribution and gain: test split; screen and leaveOneIn: validation
      splits: { decisions: 'validation', reported: 'test' },
      base: {
        split: 'test',
        auc: base.metrics!.auc,
        logloss: base.metrics!.logloss,
        features: (base.metrics!.features as string[]).length,
      },
      augmented: {
        split: 'test',
        auc: aug.metrics!.auc,
        logloss: aug.metrics!.logloss,
        features: (aug.metrics!.features as string[]).length,
      },
      delta: { split: 'test', auc: overall.auc, logloss: overall.logloss },
      alpha: p.alpha,
      candidateAlpha: p.candidateAlpha,
      minGain: p.minGain,
      seeds: p.seeds,
      rule: RULE,
      candidates,
      adopted: candidates.filter((c) => c.verdict === 'adopt').map((c) => c.feature),
      rejected: candidates.filter((c) => c.verdict === 'reject').map((c) => c.feature),
      inconclusive: candidates.filter((c) => c.verdict === 'inconclusive').map((c) => c.feature),
      provenanceRecorded: recorded,
      ...(p.register ? { registered } : {}),
      ...(costs ? { costs } : {}),
    };
    await progress(0.9, 'notifying the owner');
    const owners = [...new Set([experiment.owner, modelRow?.owner].filter((o): o is string => !!o))];
    const notification = p.notify
      ? await this.w.notifier.send('experiment.add.verdicts', experiment.id, {
          experimentId: experiment.id,
          businessLine: experiment.businessLine,
          owners,
          model: modelRow ? { id: modelRow.id, name: modelRow.name, version: modelRow.version } : null,
          ...result,
        })
      : { status: 'skipped', url: null, attempts: 0, error: 'notify: false' };
    return { metrics: { ...result, notification, timings } };
  }
}

export interface CrossFitGain {
  split: 'validation';
  /** mean over seeds of the per-fold gain */
  mean: number;
  delta: number;
  ciLow: number;
  ciHigh: number;
  /** degrees of freedom of the t interval: seeds - 1 */
  df: number;
  /** standard error of the mean (std of the per-fold gains / sqrt(seeds)) */
  se: number;
  seeds: number[];
  /** gain of seed k on validation fold k */
  perSeed: number[];
  /** validation rows per fold */
  foldRows: number[];
  covers: ['evaluation rows', 'training seeds'];
}

/**
 * The leave-one-in evidence: seed k's base and base + candidate models were fitted without fold k of
 * the training range and are compared on it, so the per-fold gains are independent draws that each
 * carry both the rows' sampling error and the training randomness; their t interval (seeds - 1
 * degrees of freedom) covers both, with no assumption about which dominates.
 */
export function crossFitGain(
  bases: Record<'validation', Predictions>[],
  runs: Record<'validation', Predictions>[],
  seeds: number[],
  alpha: number,
): CrossFitGain {
  if (bases.length !== runs.length || bases.length !== seeds.length || seeds.length < 2)
    throw new Error('crossFitGain: one base and one candidate model per seed, at least two seeds');
  const perSeed = bases.map((b, k) => {
    const r = runs[k]!;
    const y = b.validation.labels;
    if (r.validation.labels.length !== y.length || r.validation.labels.some((v, i) => v !== y[i]))
      throw new Error(`crossFitGain: fold ${k}: base and candidate models were evaluated on different rows`);
    const ones = new Uint16Array(y.length).fill(1);
    return weightedAuc(rankScores(r.validation.pred), y, ones) - weightedAuc(rankScores(b.validation.pred), y, ones);
  });
  const f = foldInterval(perSeed, alpha);
  return {
    split: 'validation',
    mean: f.mean,
    delta: f.mean,
    ciLow: f.ciLow,
    ciHigh: f.ciHigh,
    df: seeds.length - 1,
    se: f.std / Math.sqrt(seeds.length),
    seeds,
    perSeed,
    foldRows: bases.map((b) => b.validation.labels.length),
    covers: ['evaluation rows', 'training seeds'],
  };
}

export const RULE =
  'decided on the validation split, per candidate at level alpha / candidates: reject when its shuffle contribution interval is below minGain; ' +
  'otherwise base and base + candidate are retrained on every seed, seed k fitted without fold k of the training range and compared on it ' +
  '(cross-fitting), and the candidate is adopted when the mean gain is at least minGain and its t interval over the seeds (which covers ' +
  'validation rows and training seeds) is above 0, rejected when the interval is below minGain, ' +
  'inconclusive otherwise; the gains reported are measured on the test split';
