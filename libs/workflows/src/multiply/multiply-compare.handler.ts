import fs from 'node:fs';
import path from 'node:path';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import type { TrialEntity } from '@abacus/data';
import { EmbeddingService } from '@abacus/catalog';
import { readF32 } from '../model/model-trainer';
import { pairedSeedBootstrapAsync } from '../stats/paired-bootstrap';
import { runTrial } from '../trials/trial-runner';
import { trialBySeq, type WorkflowContext } from '../trials/workflow-context';
import { MULTIPLY_RULE, labelRateFlag, multiplyCompareParamsSchema, multiplyVerdict } from './multiply-experiment.schema';

/** auc, logloss: test split; validationAuc, validationLogloss: validation split (absent in trials of older versions) */
interface SeedRun {
  seed: number;
  auc: number;
  logloss: number;
  validationAuc?: number;
  validationLogloss?: number;
  modelDir: string;
}

interface SourceStats {
  domain: string;
  rows: number;
  kept: number;
  droppedAtOrAfterTestStart: number;
  droppedAtOrAfterValidationStart: number;
  duplicatesDropped: number;
  labelRate: number;
}

type Split = 'validation' | 'test';

/** One split's labels and each seed's predictions on it (seeds in the experiment's order). */
export interface SplitPredictions {
  labels: Float32Array;
  preds: Float32Array[];
}

/** The interval of the seed-averaged ΔAUC on one split: a paired bootstrap over that split's rows. */
export interface SplitDelta<S extends Split> {
  split: S;
  delta: number;
  ciLow: number;
  ciHigh: number;
  replicates: number;
  /** what the interval's width accounts for: resampling the split's rows (the seeds are fixed and averaged) */
  covers: string[];
}

export interface ArmComparison {
  /** reported: ΔAUC against the baseline on the test split */
  deltaAuc: SplitDelta<'test'>;
  /** per seed, the same order: test ΔAUC */
  testPerSeed: number[];
  /** decisions: ΔAUC on the validation split, with its per-seed values */
  validation: SplitDelta<'validation'> & { perSeed: number[] };
  verdict: 'recommend' | 'no gain' | 'harmful';
  reason: string;
}

/**
 * One strategy × source against the target-only baseline, seed by seed on the same rows: the verdict
 * reads the validation split only (multiplyVerdict on its interval and per-seed gains); the ΔAUC
 * reported is measured on the test split, which nothing was decided on.
 */
export async function compareArm(
  base: Record<Split, SplitPredictions>,
  arm: Record<Split, SplitPredictions>,
  opts: { replicates: number; seed: number; alpha: number },
): Promise<ArmComparison> {
  const covers = ['evaluation rows'];
  const v = await pairedSeedBootstrapAsync(base.validation.labels, base.validation.preds, arm.validation.preds, {
    ...opts,
    seed: opts.seed + 1000,
  });
  const t = await pairedSeedBootstrapAsync(base.test.labels, base.test.preds, arm.test.preds, opts);
  return {
    deltaAuc: {
      split: 'test',
      delta: t.auc.delta,
      ciLow: t.auc.ciLow,
      ciHigh: t.auc.ciHigh,
      replicates: t.auc.replicates,
      covers,
    },
    testPerSeed: t.perSeed,
    validation: {
      split: 'validation',
      delta: v.auc.delta,
      ciLow: v.auc.ciLow,
      ciHigh: v.auc.ciHigh,
      replicates: v.auc.replicates,
      covers,
      perSeed: v.perSeed,
    },
    ...multiplyVerdict(v.auc.ciLow, v.auc.ciHigh, v.perSeed),
  };
}

/** The best arm: among the recommended ones, the largest validation ΔAUC (never read off the test split). */
export function bestArm<T extends { verdict: string; validation: { delta: number } }>(arms: T[]): T | null {
  return arms.filter((r) => r.verdict === 'recommend').sort((a, b) => b.validation.delta - a.validation.delta)[0] ?? null;
}

interface ArmResult {
  strategy: string;
  sources: string[];
  /** test split (reported): mean over seeds */
  auc: number;
  logloss: number;
  /** validation split: mean over seeds */
  validationAuc: number | null;
  trainRows: number;
  /** auc, logloss, deltaAuc: test split; validationAuc, validationDeltaAuc: validation split */
  perSeed: {
    seed: number;
    auc: number;
    logloss: number;
    deltaAuc: number;
    validationAuc: number | null;
    validationDeltaAuc: number;
  }[];
  /** reported: the seed-averaged ΔAUC on the test split, with its paired bootstrap interval */
  deltaAuc: SplitDelta<'test'>;
  /** what the verdict read: the same on the validation split */
  validation: SplitDelta<'validation'>;
  seedSpread: { split: 'test'; min: number; max: number; std: number };
  /** the borrowed sets of this model: rows, leakage and duplicate drops, kept rows, label rate */
  borrowed: SourceStats[];
  /** decided on the validation split */
  verdict: 'recommend' | 'no gain' | 'harmful';
  reason: string;
  /** union: loss weights of borrowed rows; pretrain → fine-tune / shared embedding: whether embeddings were frozen */
  weights?: Record<string, number>;
  freezeEmbeddings?: boolean;
  /** shared embedding: the version created, and which models started from it */
  embedding?: {
    id: string;
    ref: string;
    slots: string[];
    learnedOn: Record<string, unknown>;
    initialised: { seed: number; model: string; init: unknown }[];
  };
}

/** One split's labels and each run's predictions on it, as the trained models stored them. */
function predictions(dataDir: WorkflowContext['dataDir'], runs: SeedRun[], split: Split): SplitPredictions {
  let labels: Float32Array | null = null;
  const preds = runs.map((r) => {
    const dir = dataDir.abs(r.modelDir);
    if (!fs.existsSync(path.join(dir, `${split}-predictions.f32`)))
      throw new Error(`model ${r.modelDir} has no stored ${split} predictions`);
    const l = readF32(path.join(dir, `${split}-labels.f32`));
    if (labels && !sameLabels(l, labels)) throw new Error(`models were evaluated on different ${split} rows`);
    labels = l;
    return readF32(path.join(dir, `${split}-predictions.f32`));
  });
  return { labels: labels!, preds };
}

/** The validation and test predictions of a model family's runs (checkpoints trained on another host: from the store). */
export async function runPredictions(
  dataDir: WorkflowContext['dataDir'],
  runs: SeedRun[],
): Promise<Record<Split, SplitPredictions>> {
  for (const r of runs) await dataDir.pull(r.modelDir);
  return { validation: predictions(dataDir, runs, 'validation'), test: predictions(dataDir, runs, 'test') };
}

/**
 * multiply's last step: each strategy × source against the target-only baseline, seed by seed, on the
 * same target rows. Verdicts and `best` read the validation split (the target's last training rows, not
 * fitted on by any model); the ΔAUC reported is measured on the untouched test split.
 */
export class MultiplyCompareHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.MultiplyCompareTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress }) => {
      const p = multiplyCompareParamsSchema.parse(trial.params);
      const baseTrial = await trialBySeq(this.w.ds, experiment.id, p.baselineSeq);
      const baseRuns = baseTrial.metrics!.perSeed as SeedRun[];
      const base = await runPredictions(this.w.dataDir, baseRuns);
      const validationFrom = baseTrial.metrics!.validationFrom as number | undefined;
      // per source, as borrowed alone when it was (duplicates counted against the target only)
      const parts = new Map<string, SourceStats>();
      const results: ArmResult[] = [];
      let bootstrapMs = 0;
      for (const [i, arm] of p.arms.entries()) {
        const t: TrialEntity = await trialBySeq(this.w.ds, experiment.id, arm.seq);
        const runs = t.metrics!.perSeed as SeedRun[];
        if (runs.map((r) => r.seed).join() !== baseRuns.map((r) => r.seed).join())
          throw new Error(`trial #${arm.seq} ran other seeds than the baseline`);
        if (t.metrics!.validationFrom !== validationFrom)
          throw new Error(`trial #${arm.seq} has another validation start than the baseline`);
        const other = await runPredictions(this.w.dataDir, runs);
        for (const split of ['validation', 'test'] as const) {
          if (!sameLabels(other[split].labels, base[split].labels))
            throw new Error(`trial #${arm.seq} was evaluated on other ${split} rows than the baseline`);
        }
        const tb = Date.now();
        const c = await compareArm(base, other, { replicates: p.bootstrap, seed: p.seed + i, alpha: p.alpha });
        bootstrapMs += Date.now() - tb;
        const armParts = (t.metrics!.parts as SourceStats[]).filter((x) => x.domain !== 'target');
        for (const x of armParts) if (!parts.has(x.domain) || arm.sources.length === 1) parts.set(x.domain, x);
        const spreadMean = c.testPerSeed.reduce((a, b) => a + b, 0) / c.testPerSeed.length;
        const { perSeed: validationPerSeed, ...validation } = c.validation;
        results.push({
          strategy: arm.strategy,
          sources: arm.sources,
          auc: t.metrics!.auc as number,
          logloss: t.metrics!.logloss as number,
          validationAuc: (t.metrics!.validationAuc as number | undefined) ?? null,
          borrowed: armParts,
          trainRows: t.metrics!.trainRows as number,
          perSeed: runs.map((r, k) => ({
            seed: r.seed,
            auc: r.auc,
            logloss: r.logloss,
            deltaAuc: c.testPerSeed[k],
            validationAuc: r.validationAuc ?? null,
            validationDeltaAuc: validationPerSeed[k],
          })),
          deltaAuc: c.deltaAuc,
          validation,
          seedSpread: {
            split: 'test',
            min: Math.min(...c.testPerSeed),
            max: Math.max(...c.testPerSeed),
            std: Math.sqrt(c.testPerSeed.reduce((s, x) => s + (x - spreadMean) ** 2, 0) / Math.max(1, c.testPerSeed.length - 1)),
          },
          verdict: c.verdict,
          reason: c.reason,
          ...(t.metrics!.weights ? { weights: t.metrics!.weights as Record<string, number> } : {}),
          ...(t.metrics!.freezeEmbeddings !== undefined ? { freezeEmbeddings: t.metrics!.freezeEmbeddings as boolean } : {}),
          ...(t.metrics!.embedding
            ? {
                embedding: {
                  ...(t.metrics!.embedding as Omit<NonNullable<ArmResult['embedding']>, 'initialised'>),
                  initialised: (runs as (SeedRun & { init?: unknown })[]).map((r) => ({
                    seed: r.seed,
                    model: r.modelDir,
                    init: r.init,
                  })),
                },
              }
            : {}),
        });
        await progress(
          (i + 1) / p.arms.length,
          `${arm.strategy} [${arm.sources.join(', ')}]: validation ΔAUC ${c.validation.delta.toFixed(4)} (${c.verdict}), test ΔAUC ${c.deltaAuc.delta.toFixed(4)}`,
        );
        checkpoint();
      }
      // embedding_update: what the new version brought its line, on the version for everyone to see
      const registry = new EmbeddingService(this.w.ds);
      for (const r of results.filter((x) => x.strategy === 'embedding_update' && x.embedding)) {
        await registry.annotate(r.embedding!.id, 'updateResult', {
          line: experiment.businessLine,
          against: 'the line’s target-only model (no shared embedding)',
          validation: { delta: r.validation.delta, ciLow: r.validation.ciLow, ciHigh: r.validation.ciHigh },
          test: { delta: r.deltaAuc.delta, ciLow: r.deltaAuc.ciLow, ciHigh: r.deltaAuc.ciHigh },
          verdict: r.verdict,
          experimentId: experiment.id,
        });
      }
      const ownerCheck =
        p.ownerCheckSeq !== undefined
          ? ((await trialBySeq(this.w.ds, experiment.id, p.ownerCheckSeq)).metrics?.ownerCheck ?? null)
          : null;
      const targetLabelRate = (baseTrial.metrics!.parts as { domain: string; labelRate: number }[]).find(
        (x) => x.domain === 'target',
      )!.labelRate;
      const best = bestArm(results);
      return {
        metrics: {
          // verdicts and best: validation split; auc, logloss, deltaAuc, seedSpread: test split
          splits: { decisions: 'validation', reported: 'test' },
          testFrom: baseTrial.metrics!.testFrom,
          testRows: base.test.labels.length,
          // the target's rows from validationFrom up to testFrom (its last training rows); fitted by no model
          validationFrom: validationFrom ?? null,
          validationRows: base.validation.labels.length,
          baseline: {
            auc: baseTrial.metrics!.auc,
            logloss: baseTrial.metrics!.logloss,
            validationAuc: baseTrial.metrics!.validationAuc ?? null,
            validationLogloss: baseTrial.metrics!.validationLogloss ?? null,
            trainRows: baseTrial.metrics!.trainRows,
            fitRows: baseTrial.metrics!.fitRows,
            perSeed: baseRuns.map((r) => ({
              seed: r.seed,
              auc: r.auc,
              logloss: r.logloss,
              validationAuc: r.validationAuc ?? null,
              validationLogloss: r.validationLogloss ?? null,
            })),
          },
          // leakage check: borrowed rows at or after the target's validation start (and so its test start)
          // were dropped before training
          targetLabelRate,
          sources: [...parts.values()].map((x) => ({ ...x, labelRateFlag: labelRateFlag(x.labelRate, targetLabelRate) })),
          alpha: p.alpha,
          rule: MULTIPLY_RULE,
          results: p.arms.map((a) => results.find((r) => r.strategy === a.strategy && r.sources.join() === a.sources.join())!),
          // chosen on the validation split; deltaAuc is its test ΔAUC (reported)
          best: best
            ? {
                strategy: best.strategy,
                sources: best.sources,
                chosenOn: 'validation',
                validationDelta: best.validation.delta,
                deltaAuc: best.deltaAuc.delta,
              }
            : null,
          // shared embeddings this experiment created, for `init: { embedding: "name@version" }` in later models
          embeddings: results
            .filter((r) => r.embedding)
            .map((r) => ({
              ref: r.embedding!.ref,
              id: r.embedding!.id,
              sources: r.sources,
              deltaAuc: r.deltaAuc.delta,
              validationDelta: r.validation.delta,
              verdict: r.verdict,
            })),
          ...(ownerCheck ? { ownerCheck } : {}),
          timings: { bootstrapMs },
        },
      };
    });
  }
}

function sameLabels(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((y, i) => y === b[i]);
}
