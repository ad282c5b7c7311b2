import fs from 'node:fs';
import path from 'node:path';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import type { TrialEntity } from '@abacus/data';
import { readF32 } from '../model/model-trainer';
import { pairedSeedBootstrap } from '../stats/paired-bootstrap';
import { runTrial } from '../trials/trial-runner';
import { trialBySeq, type WorkflowContext } from '../trials/workflow-context';
import { MULTIPLY_RULE, labelRateFlag, multiplyCompareParamsSchema, multiplyVerdict } from './multiply-experiment.schema';

interface SeedRun {
  seed: number;
  auc: number;
  logloss: number;
  modelDir: string;
}

interface SourceStats {
  domain: string;
  rows: number;
  kept: number;
  droppedAtOrAfterTestStart: number;
  duplicatesDropped: number;
  labelRate: number;
}

interface ArmResult {
  strategy: string;
  sources: string[];
  auc: number;
  logloss: number;
  trainRows: number;
  perSeed: { seed: number; auc: number; logloss: number; deltaAuc: number }[];
  deltaAuc: { delta: number; ciLow: number; ciHigh: number; replicates: number };
  seedSpread: { min: number; max: number; std: number };
  /** the borrowed sets of this model: rows, leakage and duplicate drops, kept rows, label rate */
  borrowed: SourceStats[];
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

/** multiply's last step: each strategy × source against the target-only baseline, seed by seed, on the same test rows. */
export class MultiplyCompareHandler {
  constructor(private readonly w: WorkflowContext) {}

  private predictions(runs: SeedRun[]): { labels: Float32Array; preds: Float32Array[] } {
    let labels: Float32Array | null = null;
    const preds = runs.map((r) => {
      const dir = this.w.dataDir.abs(r.modelDir);
      if (!fs.existsSync(path.join(dir, 'test-predictions.f32')))
        throw new Error(`model ${r.modelDir} has no stored test predictions`);
      const l = readF32(path.join(dir, 'test-labels.f32'));
      if (labels && (l.length !== labels.length || l.some((y, i) => y !== labels![i]))) {
        throw new Error('models were evaluated on different test rows');
      }
      labels = l;
      return readF32(path.join(dir, 'test-predictions.f32'));
    });
    return { labels: labels!, preds };
  }

  handle(payload: JobPayloads[JobName.MultiplyCompareTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress }) => {
      const p = multiplyCompareParamsSchema.parse(trial.params);
      const baseTrial = await trialBySeq(this.w.ds, experiment.id, p.baselineSeq);
      const baseRuns = baseTrial.metrics!.perSeed as SeedRun[];
      const base = this.predictions(baseRuns);
      // per source, as borrowed alone when it was (duplicates counted against the target only)
      const parts = new Map<string, SourceStats>();
      const results: ArmResult[] = [];
      let bootstrapMs = 0;
      for (const [i, arm] of p.arms.entries()) {
        const t: TrialEntity = await trialBySeq(this.w.ds, experiment.id, arm.seq);
        const runs = t.metrics!.perSeed as SeedRun[];
        if (runs.map((r) => r.seed).join() !== baseRuns.map((r) => r.seed).join())
          throw new Error(`trial #${arm.seq} ran other seeds than the baseline`);
        const other = this.predictions(runs);
        if (other.labels.length !== base.labels.length || other.labels.some((y, j) => y !== base.labels[j])) {
          throw new Error(`trial #${arm.seq} was evaluated on other test rows than the baseline`);
        }
        const tb = Date.now();
        const d = pairedSeedBootstrap(base.labels, base.preds, other.preds, {
          replicates: p.bootstrap,
          seed: p.seed + i,
          alpha: p.alpha,
        });
        bootstrapMs += Date.now() - tb;
        const armParts = (t.metrics!.parts as SourceStats[]).filter((x) => x.domain !== 'target');
        for (const x of armParts) if (!parts.has(x.domain) || arm.sources.length === 1) parts.set(x.domain, x);
        const spreadMean = d.perSeed.reduce((a, b) => a + b, 0) / d.perSeed.length;
        results.push({
          strategy: arm.strategy,
          sources: arm.sources,
          auc: t.metrics!.auc as number,
          logloss: t.metrics!.logloss as number,
          borrowed: armParts,
          trainRows: t.metrics!.trainRows as number,
          perSeed: runs.map((r, k) => ({ seed: r.seed, auc: r.auc, logloss: r.logloss, deltaAuc: d.perSeed[k] })),
          deltaAuc: { delta: d.auc.delta, ciLow: d.auc.ciLow, ciHigh: d.auc.ciHigh, replicates: d.auc.replicates },
          seedSpread: {
            min: Math.min(...d.perSeed),
            max: Math.max(...d.perSeed),
            std: Math.sqrt(d.perSeed.reduce((s, x) => s + (x - spreadMean) ** 2, 0) / Math.max(1, d.perSeed.length - 1)),
          },
          ...multiplyVerdict(d.auc.ciLow, d.auc.ciHigh, d.perSeed),
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
        await progress((i + 1) / p.arms.length, `${arm.strategy} [${arm.sources.join(', ')}]: ΔAUC ${d.auc.delta.toFixed(4)}`);
        checkpoint();
      }
      const targetLabelRate = (baseTrial.metrics!.parts as { domain: string; labelRate: number }[]).find(
        (x) => x.domain === 'target',
      )!.labelRate;
      const recommended = results.filter((r) => r.verdict === 'recommend');
      const best = recommended.sort((a, b) => b.deltaAuc.delta - a.deltaAuc.delta)[0] ?? null;
      return {
        metrics: {
          testFrom: baseTrial.metrics!.testFrom,
          testRows: base.labels.length,
          baseline: {
            auc: baseTrial.metrics!.auc,
            logloss: baseTrial.metrics!.logloss,
            trainRows: baseTrial.metrics!.trainRows,
            fitRows: baseTrial.metrics!.fitRows,
            perSeed: baseRuns.map((r) => ({ seed: r.seed, auc: r.auc, logloss: r.logloss })),
          },
          // leakage check: borrowed rows at or after the target's test start were dropped before training
          targetLabelRate,
          sources: [...parts.values()].map((x) => ({ ...x, labelRateFlag: labelRateFlag(x.labelRate, targetLabelRate) })),
          alpha: p.alpha,
          rule: MULTIPLY_RULE,
          results: p.arms.map((a) => results.find((r) => r.strategy === a.strategy && r.sources.join() === a.sources.join())!),
          best: best ? { strategy: best.strategy, sources: best.sources, deltaAuc: best.deltaAuc.delta } : null,
          // shared embeddings this experiment created, for `init: { embedding: "name@version" }` in later models
          embeddings: results
            .filter((r) => r.embedding)
            .map((r) => ({
              ref: r.embedding!.ref,
              id: r.embedding!.id,
              sources: r.sources,
              deltaAuc: r.deltaAuc.delta,
              verdict: r.verdict,
            })),
          timings: { bootstrapMs },
        },
      };
    });
  }
}
