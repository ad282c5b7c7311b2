import fs from 'node:fs';
import path from 'node:path';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { FeatureEntity, FeatureResultEntity, ModelEntity } from '@abacus/data';
import { readF32 } from '../model/model-trainer';
import { pairedBootstrap } from '../stats/paired-bootstrap';
import { runTrial } from '../trials/trial-runner';
import { trialBySeq, type WorkflowContext } from '../trials/workflow-context';
import { compareTrialParamsSchema } from './add-experiment.schema';
import { verdictFor } from './verdict';

/**
 * add's last step: paired bootstrap of base vs augmented on the same test rows, a verdict per
 * candidate from its shuffle contribution (or its leave-one-in model), provenance on the registry,
 * and a signed notification to the owners.
 */
export class CompareTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  private predictions(modelDir: string): { pred: Float32Array; labels: Float32Array } {
    const dir = this.w.dataDir.abs(modelDir);
    if (!fs.existsSync(path.join(dir, 'test-predictions.f32')))
      throw new Error(`model ${modelDir} has no stored test predictions`);
    return { pred: readF32(path.join(dir, 'test-predictions.f32')), labels: readF32(path.join(dir, 'test-labels.f32')) };
  }

  handle(payload: JobPayloads[JobName.CompareTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress }) => {
      const p = compareTrialParamsSchema.parse(trial.params);
      const base = await trialBySeq(this.w.ds, experiment.id, p.baseSeq);
      const aug = await trialBySeq(this.w.ds, experiment.id, p.augmentedSeq);
      const shuffle = await trialBySeq(this.w.ds, experiment.id, p.ablateSeq);
      const b = this.predictions(base.metrics!.modelDir as string);
      const a = this.predictions(aug.metrics!.modelDir as string);
      if (b.labels.length !== a.labels.length || b.labels.some((y, i) => y !== a.labels[i])) {
        throw new Error('base and augmented models were evaluated on different test rows');
      }
      await progress(0.2, `paired bootstrap (${p.bootstrap} replicates)`);
      const overall = pairedBootstrap(b.labels, b.pred, a.pred, { replicates: p.bootstrap, seed: p.seed, alpha: p.alpha });
      checkpoint();
      const groups = shuffle.metrics!.groups as { inputs: string[]; mean: number; std: number; ciLow: number; ciHigh: number }[];
      const candidates = [];
      for (const [i, name] of p.candidates.entries()) {
        const g = groups.find((x) => x.inputs.length === 1 && x.inputs[0] === name)!;
        let loi: { auc: number; delta: number; ciLow: number; ciHigh: number } | null = null;
        const l = p.leaveOneIn.find((x) => x.feature === name);
        if (l) {
          const t = await trialBySeq(this.w.ds, experiment.id, l.seq);
          const m = this.predictions(t.metrics!.modelDir as string);
          const d = pairedBootstrap(b.labels, b.pred, m.pred, {
            replicates: p.bootstrap,
            seed: p.seed + 1 + i,
            alpha: p.candidateAlpha,
          });
          loi = { auc: t.metrics!.auc as number, delta: d.auc.delta, ciLow: d.auc.ciLow, ciHigh: d.auc.ciHigh };
        }
        // the leave-one-in model measures the gain itself; the shuffle contribution is the fallback
        const evidence = loi
          ? { ciLow: loi.ciLow, ciHigh: loi.ciHigh, source: 'leave-one-in' }
          : { ciLow: g.ciLow, ciHigh: g.ciHigh, source: 'shuffle' };
        const v = verdictFor(evidence.ciLow, evidence.ciHigh, p.minGain);
        candidates.push({
          feature: name,
          contribution: { mean: g.mean, std: g.std, ciLow: g.ciLow, ciHigh: g.ciHigh },
          leaveOneIn: loi,
          evidence: evidence.source,
          ...v,
        });
        await progress(0.2 + (0.5 * (i + 1)) / p.candidates.length, `verdict for ${name}: ${v.verdict}`);
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
          .setParameter('patch', JSON.stringify({ verdict: c.verdict, reason: c.reason, leaveOneIn: c.leaveOneIn }))
          .execute();
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
        const gain = c.leaveOneIn?.delta ?? c.contribution.mean;
        f.provenance = [
          ...f.provenance.filter((x) => x.experimentId !== experiment.id),
          {
            businessLine: experiment.businessLine,
            experimentId: experiment.id,
            model: modelRow ? `${modelRow.name}@v${modelRow.version}` : undefined,
            metric: 'auc',
            gain,
            ciLow: c.leaveOneIn?.ciLow ?? c.contribution.ciLow,
            ciHigh: c.leaveOneIn?.ciHigh ?? c.contribution.ciHigh,
            measuredAt,
          },
        ];
        await repo.save(f);
        recorded.push(c.feature);
      }

      const result = {
        base: { auc: base.metrics!.auc, logloss: base.metrics!.logloss, features: (base.metrics!.features as string[]).length },
        augmented: { auc: aug.metrics!.auc, logloss: aug.metrics!.logloss, features: (aug.metrics!.features as string[]).length },
        delta: { auc: overall.auc, logloss: overall.logloss },
        alpha: p.alpha,
        candidateAlpha: p.candidateAlpha,
        minGain: p.minGain,
        rule: 'per candidate, at level alpha / candidates: adopt when its contribution interval is above 0; reject when it is below minGain; otherwise inconclusive',
        candidates,
        adopted: candidates.filter((c) => c.verdict === 'adopt').map((c) => c.feature),
        rejected: candidates.filter((c) => c.verdict === 'reject').map((c) => c.feature),
        inconclusive: candidates.filter((c) => c.verdict === 'inconclusive').map((c) => c.feature),
        provenanceRecorded: recorded,
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
      return { metrics: { ...result, notification } };
    });
  }
}
