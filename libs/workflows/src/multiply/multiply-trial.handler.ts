import { createHash } from 'node:crypto';
import type { ColumnarDataset } from '@abacus/runtime';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { UNION_DOMAIN } from '@abacus/samples';
import type { BuiltSet } from '../model/built-samples.cache';
import { subsetDataset } from '../model/dataset-subset';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { runTrial, type TrialScope } from '../trials/trial-runner';
import { withDevice, type WorkflowContext } from '../trials/workflow-context';
import { multiplyTrialParamsSchema } from './multiply-experiment.schema';
import { ensureUnion } from './union-samples';

/**
 * One model family of a multiply experiment on the union of target and borrowed rows: target-only
 * (the target's rows alone), union (all rows, the domain as a feature) or pretrain → fine-tune (the
 * borrowed rows, then the target's on the same model). Every seed; the test rows are the target's.
 */
export class MultiplyTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.MultiplyTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, checkpoint, progress, signal, logger }: TrialScope, device: number | undefined) {
    const p = multiplyTrialParamsSchema.parse(trial.params);
    const recipe = { ...p.recipe, features: p.recipe.features as ResolvedFeature[] };
    const columns = recipe.features.filter((f) => f.name !== UNION_DOMAIN).map((f) => f.name);
    await progress(0.01, 'aligning the sample sets');
    let t0 = Date.now();
    const union = await ensureUnion(this.w.dataDir, recipe.sampleFile, p.parts, columns, p.testFrom);
    const alignMs = Date.now() - t0;
    checkpoint();
    t0 = Date.now();
    const built = await this.w.samples.get(
      recipe,
      recipe.features,
      (f, m) => void progress(0.05 + 0.1 * f, m).catch(() => undefined),
    );
    checkpoint();
    const split = p.strategy === 'pretrain_finetune' ? splitByDomain(built) : null;
    const buildMs = Date.now() - t0;
    const perSeed: { seed: number; auc: number; logloss: number; modelDir: string; cached: boolean; trainMs: number }[] = [];
    for (const [k, seed] of p.seeds.entries()) {
      const step = (f: number, m: string) =>
        void progress(0.15 + (0.84 * (k + f)) / p.seeds.length, `${p.strategy}, seed ${seed}: ${m}`).catch(() => undefined);
      const training = { ...recipe.training, seed };
      const ctx = { signal, device, onProgress: step };
      t0 = Date.now();
      const trained = split
        ? await this.w.trainer.pretrainFinetuneOrReuse(
            split.built,
            split.pretrain,
            split.finetune,
            split.tag,
            recipe.architecture,
            training,
            ctx,
          )
        : await this.w.trainer.trainOrReuse(built, recipe.architecture, training, ctx);
      checkpoint();
      perSeed.push({
        seed,
        auc: trained.metrics.auc,
        logloss: trained.metrics.logloss,
        modelDir: trained.dir,
        cached: trained.cached,
        trainMs: Date.now() - t0,
      });
    }
    const mean = (k: 'auc' | 'logloss') => perSeed.reduce((s, r) => s + r[k], 0) / perSeed.length;
    logger.log(
      `${p.strategy} [${p.sources.join(', ') || 'target only'}]: test AUC ${mean('auc').toFixed(4)} over ${p.seeds.length} seed(s)`,
    );
    return {
      metrics: {
        strategy: p.strategy,
        sources: p.sources,
        auc: mean('auc'),
        logloss: mean('logloss'),
        perSeed,
        testRows: built.test.rows,
        trainRows: built.train.rows,
        ...(split ? { pretrainRows: split.pretrain.rows, finetuneRows: split.finetune.rows } : {}),
        parts: union.parts,
        samplesKey: built.key,
        testFrom: p.testFrom,
        // wall time per phase; a reused union file or built samples took (almost) none
        timings: { alignMs, buildMs, trainMs: perSeed.reduce((s, r) => s + r.trainMs, 0) },
        cached: { union: union.cached, samples: built.cached },
      },
    };
  }
}

/**
 * The built union's train rows split into borrowed (pretraining) and target (fine-tuning) rows by the
 * domain slot, which is then dropped: pretraining needs no indicator, and the model must not see one.
 */
function splitByDomain(built: BuiltSet): { built: BuiltSet; pretrain: ColumnarDataset; finetune: ColumnarDataset; tag: string } {
  const slot = (d: ColumnarDataset) => d.slots.find((s) => s.name === UNION_DOMAIN);
  const testSlot = slot(built.test);
  const trainSlot = slot(built.train);
  if (!testSlot || !trainSlot || built.test.rows === 0) throw new Error('the union samples have no domain column');
  // the test rows are all the target's
  const targetId = testSlot.ids[testSlot.offsets[0]];
  const pre: number[] = [];
  const fine: number[] = [];
  for (let r = 0; r < built.train.rows; r++) (trainSlot.ids[trainSlot.offsets[r]] === targetId ? fine : pre).push(r);
  if (!pre.length) throw new Error('no borrowed rows before the target test start to pretrain on');
  if (!fine.length) throw new Error('the target has no training rows');
  const drop = (d: ColumnarDataset): ColumnarDataset => ({ ...d, slots: d.slots.filter((s) => s.name !== UNION_DOMAIN) });
  const train = drop(built.train);
  const stripped: BuiltSet = {
    ...built,
    train,
    test: drop(built.test),
    inputs: { ...built.inputs, slots: built.inputs.slots.filter((s) => s.name !== UNION_DOMAIN) },
  };
  const tag = createHash('sha256').update(`${pre.length}/${fine.length}/${targetId}`).digest('hex').slice(0, 16);
  return { built: stripped, pretrain: subsetDataset(train, pre), finetune: subsetDataset(train, fine), tag };
}
