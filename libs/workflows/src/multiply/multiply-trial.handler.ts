import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { EmbeddingService, type RegisterEmbedding } from '@abacus/catalog';
import {
  isShardDataset,
  materialize,
  openShards,
  sliceRows,
  slotOf,
  writeShard,
  type ColumnarDataset,
  type RuntimeData,
} from '@abacus/runtime';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { UNION_DOMAIN, type SlotIdSpace } from '@abacus/samples';
import { readIdSpaces, type BuiltSet } from '../model/built-samples.cache';
import { recipeInit } from '../embeddings/recipe-init';
import { extractSlots, writeSharedEmbeddingFile } from '../embeddings/shared-embedding-file';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { runTrial, type TrialScope } from '../trials/trial-runner';
import { openSampleSet, trialBySeq, withDevice, type WorkflowContext } from '../trials/workflow-context';
import { compareArm, runPredictions } from './multiply-compare.handler';
import { multiplyTrialParamsSchema, type MultiplyTrialParams } from './multiply-experiment.schema';
import { carveTargetValidation } from './target-validation';
import { ensureUnion, unionFile } from './union-samples';

/** auc, logloss: test split (reported); validationAuc, validationLogloss: validation split (decisions) */
type SeedRun = {
  seed: number;
  auc: number;
  logloss: number;
  validationAuc: number;
  validationLogloss: number;
  modelDir: string;
  cached: boolean;
  init?: unknown;
};

/**
 * One model family of a multiply experiment on the union of target and borrowed rows: target-only
 * (the target's rows alone), union (all rows, the domain as a feature) or pretrain → fine-tune (the
 * borrowed rows, then the target's on the same model). Every seed. The validation rows (decisions) and
 * the test rows (reported) are the target's, the same for every model of the experiment: the models fit
 * on rows before the target's validation start (see carveTargetValidation).
 */
export class MultiplyTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.MultiplyTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run(scope: TrialScope, device: number | undefined) {
    const { trial, checkpoint, progress } = scope;
    const p = multiplyTrialParamsSchema.parse(trial.params);
    const recipe = { ...p.recipe, features: p.recipe.features as ResolvedFeature[] };
    const columns = recipe.features.filter((f) => f.name !== UNION_DOMAIN).map((f) => f.name);
    await progress(0.01, 'aligning the sample sets');
    let t0 = Date.now();
    const union = await ensureUnion(this.w.dataDir, recipe.sampleFile, p.parts, columns, p.testFrom, (part) =>
      openSampleSet(this.w, part.sampleSetId),
    );
    const alignMs = Date.now() - t0;
    checkpoint();
    t0 = Date.now();
    // views of the built shards: the union and shared-embedding strategies train from them as they are
    // (source weights given beside them); the pretraining / fine-tuning split copies its two row sets
    const built = await this.targetValidation(
      await this.w.samples.get(recipe, recipe.features, (f, m) => void progress(0.05 + 0.08 * f, m).catch(() => undefined)),
      union,
    );
    checkpoint();
    if (p.strategy === 'shared_embedding')
      return this.sharedEmbedding(scope, p, recipe, built, union, device, { alignMs, buildMs: Date.now() - t0 });
    if (p.strategy === 'owner_check') return this.ownerCheck(scope, p, recipe, built, union, device, alignMs, t0);
    // pretraining / fine-tuning: the two row sets, copied into shard files of a scratch folder (sets in
    // memory: into memory), removed when the trial ends
    const scratch = p.strategy === 'pretrain_finetune' && isShardDataset(built.train) ? this.w.dataDir.scratch('split') : null;
    try {
      return await this.fit(scope, p, recipe, built, union, device, alignMs, t0, scratch?.dir ?? null);
    } finally {
      scratch?.remove();
    }
  }

  private async fit(
    scope: TrialScope,
    p: MultiplyTrialParams,
    recipe: MultiplyTrialParams['recipe'] & { features: ResolvedFeature[] },
    built: BuiltSet,
    union: Awaited<ReturnType<typeof ensureUnion>>,
    device: number | undefined,
    alignMs: number,
    t0: number,
    scratch: string | null,
    /** the models' starting embeddings (owner_check); embedding_update starts from p.update */
    initFrom?: NonNullable<MultiplyTrialParams['update']>,
  ) {
    const { checkpoint, progress, signal, logger } = scope;
    const split =
      p.strategy === 'pretrain_finetune'
        ? await splitByDomain(built, { scratch, onProgress: (f, m) => void progress(0.13 + 0.02 * f, m).catch(() => undefined) })
        : null;
    if (split)
      logger.log(
        `pretraining on ${split.pretrain.rows} borrowed rows, fine-tuning on ${split.finetune.rows} target rows ` +
          `(copied ${scratch ? 'into shard files of a scratch folder' : 'into memory'})`,
      );
    const weighted = p.weights && Object.keys(p.weights).length ? await this.weighted(built, p.weights) : built;
    const buildMs = Date.now() - t0;
    // embedding_update: every seed starts from the version it improves (unfrozen)
    const from = initFrom ?? (p.strategy === 'embedding_update' ? p.update : undefined);
    const init = from
      ? recipeInit(
          this.w.dataDir,
          { init: { embeddingId: from.embeddingId, ref: from.ref, file: from.file, sha256: from.sha256, freeze: false } },
          weighted,
        )
      : undefined;
    let first: Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>> | null = null;
    const perSeed: (SeedRun & { trainMs: number })[] = [];
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
            { freezeEmbeddings: p.freezeEmbeddings },
          )
        : await this.w.trainer.trainOrReuse(weighted, recipe.architecture, training, ctx, init);
      first ??= split ? null : (trained as Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>>);
      checkpoint();
      perSeed.push({
        seed,
        auc: trained.metrics.auc,
        logloss: trained.metrics.logloss,
        validationAuc: trained.metrics.validation.auc,
        validationLogloss: trained.metrics.validation.logloss,
        modelDir: trained.dir,
        cached: trained.cached,
        ...(init ? { init: trained.init } : {}),
        trainMs: Date.now() - t0,
      });
    }
    const mean = (k: 'auc' | 'logloss' | 'validationAuc' | 'validationLogloss') =>
      perSeed.reduce((s, r) => s + r[k], 0) / perSeed.length;
    logger.log(
      `${p.strategy} [${p.sources.join(', ') || 'target only'}]: validation AUC ${mean('validationAuc').toFixed(4)}, test AUC ${mean('auc').toFixed(4)} over ${p.seeds.length} seed(s)`,
    );
    const updated =
      p.strategy === 'embedding_update' && first
        ? await this.registerUpdate(scope, p, built, first, mean('validationAuc'), mean('auc'))
        : null;
    return {
      metrics: {
        strategy: p.strategy,
        sources: p.sources,
        ...(updated ? { embedding: updated } : {}),
        // test split (reported)
        auc: mean('auc'),
        logloss: mean('logloss'),
        // validation split (decisions)
        validationAuc: mean('validationAuc'),
        validationLogloss: mean('validationLogloss'),
        perSeed,
        testRows: built.test.rows,
        // the target's rows from validationFrom up to the test start; no model fitted on them
        validationRows: built.validation.rows,
        validationFrom: union.validation.from,
        // the training split; models fit on fitRows of it (the rest is the validation split)
        trainRows: built.train.rows + built.validation.rows,
        fitRows: built.train.rows,
        ...(split ? { pretrainRows: split.pretrain.rows, finetuneRows: split.finetune.rows } : {}),
        ...(p.weights && Object.keys(p.weights).length ? { weights: p.weights } : {}),
        ...(p.freezeEmbeddings !== undefined ? { freezeEmbeddings: p.freezeEmbeddings } : {}),
        parts: union.parts,
        samplesKey: built.key,
        testFrom: p.testFrom,
        // wall time per phase; a reused union file or built samples took (almost) none
        timings: { alignMs, buildMs, trainMs: perSeed.reduce((s, r) => s + r.trainMs, 0) },
        cached: { union: union.cached, samples: built.cached },
      },
    };
  }

  /**
   * The built union with the target's validation split (see carveTargetValidation): the same target rows
   * for every model of the experiment, none of them fitted on.
   */
  private targetValidation(built: BuiltSet, union: Awaited<ReturnType<typeof ensureUnion>>): Promise<BuiltSet> {
    const hasDomain = built.train.slots.some((s) => s.name === UNION_DOMAIN);
    let targetId: number | null = null;
    if (hasDomain) {
      const space = readIdSpaces(this.w.dataDir, built)[UNION_DOMAIN];
      if (!space || space.kind !== 'dictionary') throw new Error('the union samples have no dictionary-encoded domain column');
      const i = space.values.map(String).indexOf('target');
      if (i < 0) throw new Error('the union samples have no target rows');
      targetId = i + 1;
    }
    return carveTargetValidation(built, union.validation, targetId);
  }

  /** The union's train rows with a loss weight per borrowed domain (the target's rows and unnamed domains weigh 1). */
  private async weighted(built: BuiltSet, weights: Record<string, number>): Promise<BuiltSet> {
    const space = readIdSpaces(this.w.dataDir, built)[UNION_DOMAIN];
    if (!built.train.slots.some((s) => s.name === UNION_DOMAIN) || !space)
      throw new Error('the union samples have no domain column');
    // a weight per row beside the rows (for shards, given with the view: only the domain column is read)
    const w = domainLossWeights(await slotOf(built.train, UNION_DOMAIN), space, weights, built.train.rows);
    const key = createHash('sha256')
      .update(JSON.stringify({ samples: built.key, weights: Object.entries(weights).sort() }))
      .digest('hex')
      .slice(0, 32);
    return { ...built, key, train: { ...built.train, weights: w } };
  }

  /**
   * A new version of a shared embedding: its file written (in this trial's folder), pushed to the
   * deployment's store, then registered; the file is kept only with its registry row (a failed
   * registration removes it; a retried trial writes the same path again).
   */
  private async publishVersion(
    registry: EmbeddingService,
    trialId: string,
    name: string,
    dim: number,
    slots: Parameters<typeof writeSharedEmbeddingFile>[2],
    fields: Omit<RegisterEmbedding, 'name' | 'dim' | 'file' | 'bytes' | 'sha256'>,
  ) {
    const rel = path.join('embeddings', trialId, 'embedding.safetensors');
    fs.mkdirSync(path.dirname(this.w.dataDir.abs(rel)), { recursive: true });
    const { sha256, bytes } = await writeSharedEmbeddingFile(this.w.dataDir.abs(rel), dim, slots, { name });
    // to the deployment's store before the registry row names it
    await this.w.dataDir.push(rel);
    return registry.register({ ...fields, name, dim, file: rel, bytes, sha256 }).catch(async (err: unknown) => {
      await this.w.dataDir.removeShared(rel).catch(() => undefined);
      fs.rmSync(path.dirname(this.w.dataDir.abs(rel)), { recursive: true, force: true });
      throw err;
    });
  }

  /**
   * owner_check: when another line published a version of a name, the owner line's own model (the
   * target of the experiment that learned the name) trained on the owner's rows from the parent version
   * and from the new one, on the same seeds, compared on the owner's validation split (paired bootstrap
   * over its rows, as multiply compares arms): helps, hurts or no clear difference. Recorded on the new
   * version for the owner to see.
   */
  private async ownerCheck(
    scope: TrialScope,
    p: MultiplyTrialParams,
    recipe: MultiplyTrialParams['recipe'] & { features: ResolvedFeature[] },
    built: BuiltSet,
    union: Awaited<ReturnType<typeof ensureUnion>>,
    device: number | undefined,
    alignMs: number,
    t0: number,
  ) {
    const { experiment, progress } = scope;
    const registry = new EmbeddingService(this.w.ds);
    const upd = await trialBySeq(this.w.ds, experiment.id, p.updateSeq!);
    const made = upd.metrics?.embedding as { id: string; ref: string } | undefined;
    if (!made) throw new Error(`trial #${p.updateSeq} registered no version to check`);
    const next = await registry.byId(made.id);
    if (!next) throw new Error(`shared embedding ${made.ref} is gone`);
    const parent = p.update!;
    const asInit = (e: { id: string; name: string; version: number; file: string; sha256: string }) => ({
      embeddingId: e.id,
      ref: `${e.name}@${e.version}`,
      name: e.name,
      file: e.file,
      sha256: e.sha256,
    });
    await progress(0.15, `the owner's model from ${parent.ref}`);
    const fromParent = await this.fit(
      scope,
      { ...p, strategy: 'target_only' },
      recipe,
      built,
      union,
      device,
      alignMs,
      t0,
      null,
      parent,
    );
    await progress(0.55, `the owner's model from ${made.ref}`);
    const fromNext = await this.fit(
      scope,
      { ...p, strategy: 'target_only' },
      recipe,
      built,
      union,
      device,
      alignMs,
      Date.now(),
      null,
      asInit(next),
    );
    const runsOf = (m: { metrics: Record<string, unknown> }) => m.metrics.perSeed as (SeedRun & { trainMs: number })[];
    const base = await runPredictions(this.w.dataDir, runsOf(fromParent));
    const arm = await runPredictions(this.w.dataDir, runsOf(fromNext));
    const c = await compareArm(base, arm, { replicates: 300, seed: p.seeds[0]!, alpha: 0.05 });
    const verdict = c.verdict === 'recommend' ? 'helps' : c.verdict === 'harmful' ? 'hurts' : 'no clear difference';
    const check = {
      line: p.ownerLine ?? next.businessLine,
      version: made.ref,
      parent: parent.ref,
      split: 'validation',
      delta: c.validation.delta,
      ciLow: c.validation.ciLow,
      ciHigh: c.validation.ciHigh,
      perSeed: c.validation.perSeed,
      test: { delta: c.deltaAuc.delta, ciLow: c.deltaAuc.ciLow, ciHigh: c.deltaAuc.ciHigh },
      verdict,
      reason: c.reason,
      seeds: p.seeds,
      validationRows: built.validation.rows,
      experimentId: experiment.id,
      checkedAt: new Date().toISOString(),
    };
    await registry.annotate(next.id, 'ownerCheck', check);
    scope.logger.log(
      `owner check of ${made.ref} on ${check.line}: validation ΔAUC ${check.delta.toFixed(4)} over ${parent.ref} (${verdict})`,
    );
    return {
      metrics: {
        strategy: 'owner_check',
        ownerCheck: check,
        fromParent: { auc: fromParent.metrics.auc, validationAuc: fromParent.metrics.validationAuc, perSeed: runsOf(fromParent) },
        fromNew: { auc: fromNext.metrics.auc, validationAuc: fromNext.metrics.validationAuc, perSeed: runsOf(fromNext) },
        validationRows: built.validation.rows,
        testRows: built.test.rows,
      },
    };
  }

  /**
   * embedding_update: the first seed's model, trained on the target's rows from the version it improves,
   * gives the next version of the name: its tables in the target's id spaces, its parent, the line that
   * trained it, the set and rows used. Registered once per trial (a retry finds it); versions are never
   * overwritten, and concurrent updates get the next free version each (the registry's lock per name).
   */
  private async registerUpdate(
    { trial, experiment, logger }: TrialScope,
    p: MultiplyTrialParams,
    built: BuiltSet,
    trained: Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>>,
    validationAuc: number,
    testAuc: number,
  ) {
    const u = p.update!;
    const registry = new EmbeddingService(this.w.ds);
    const parent = await registry.byId(u.embeddingId);
    if (!parent) throw new Error(`shared embedding ${u.ref} is gone`);
    const originKey = `trial:${trial.id}`;
    let entity = await registry.byOrigin(originKey);
    const slots = extractSlots(trained.model, readIdSpaces(this.w.dataDir, built), new Set([UNION_DOMAIN])).filter((sl) =>
      parent.slots.some((x) => x.name === sl.name),
    );
    if (!slots.length) throw new Error(`the target's model has none of ${u.ref}'s slots`);
    if (!entity) {
      const target = p.parts[0];
      entity = await this.publishVersion(registry, trial.id, u.name, parent.dim, slots, {
        // the name stays its owner line's; the line that trained this version is in the provenance
        businessLine: parent.businessLine,
        owner: experiment.owner,
        slots: slots.map((x) => ({ name: x.name, rows: x.rows, idSpace: x.idSpace.kind })),
        sources: [
          {
            sampleSetId: target.sampleSetId,
            businessLine: target.businessLine,
            name: target.name,
            dataVersion: target.dataVersion,
            role: 'target',
            rows: built.train.rows,
          },
        ],
        sharingPolicy: parent.sharingPolicy,
        experimentId: experiment.id,
        originKey,
        provenance: {
          strategy: 'update',
          parent: u.ref,
          parentId: parent.id,
          updatedBy: experiment.businessLine,
          seed: p.seeds[0],
          model: trained.dir,
          // the updating line's model from the parent (seed means; ΔAUC over its target-only baseline comes with the compare)
          validationAuc,
          testAuc,
          fitRows: built.train.rows,
          experimentId: experiment.id,
          trialId: trial.id,
        },
      });
    }
    const ref = `${entity.name}@${entity.version}`;
    logger.log(`embedding_update: ${ref} from ${u.ref}, trained by ${experiment.businessLine} on ${built.train.rows} rows`);
    return { id: entity.id, ref, parent: u.ref, slots: slots.map((x) => x.name) };
  }

  /**
   * Shared embedding: the union model of the first seed is trained (the union strategy's own model when
   * it ran the same seed), its embedding tables saved and registered as the next version of the name;
   * then the target-only model of every seed starts from that version and trains on the target's rows.
   */
  private async sharedEmbedding(
    { trial, experiment, checkpoint, progress, signal, logger }: TrialScope,
    p: MultiplyTrialParams,
    recipe: MultiplyTrialParams['recipe'] & { features: ResolvedFeature[] },
    built: BuiltSet,
    union: Awaited<ReturnType<typeof ensureUnion>>,
    device: number | undefined,
    timings: { alignMs: number; buildMs: number },
  ) {
    if (!p.embedding) throw new Error('a shared-embedding trial needs the embedding name');
    const registry = new EmbeddingService(this.w.ds);
    const total = p.seeds.length + 1;
    const seed0 = p.seeds[0];
    let t0 = Date.now();
    const pooled = await this.w.trainer.trainOrReuse(
      built,
      recipe.architecture,
      { ...recipe.training, seed: seed0 },
      {
        signal,
        device,
        onProgress: (f, m) =>
          void progress(0.15 + (0.84 * f) / total, `learning the shared embedding on the union, seed ${seed0}: ${m}`).catch(
            () => undefined,
          ),
      },
    );
    const pooledMs = Date.now() - t0;
    checkpoint();
    const idSpaces = readIdSpaces(this.w.dataDir, built);
    const slots = extractSlots(pooled.model, idSpaces, new Set([UNION_DOMAIN]));
    if (!slots.length) throw new Error('the target model has no categorical or id features: there is no embedding to share');
    const originKey = `trial:${trial.id}`;
    // a retried trial finds the version it registered before
    let entity = await registry.byOrigin(originKey);
    if (!entity) {
      const kept = new Map(union.parts.map((x) => [x.domain, x.kept]));
      entity = await this.publishVersion(registry, trial.id, p.embedding.name, recipe.architecture.embeddingDim, slots, {
        businessLine: experiment.businessLine,
        owner: experiment.owner,
        slots: slots.map((s) => ({ name: s.name, rows: s.rows, idSpace: s.idSpace.kind })),
        sources: p.parts.map((x) => ({
          sampleSetId: x.sampleSetId,
          businessLine: x.businessLine,
          name: x.name,
          dataVersion: x.dataVersion,
          role: x.domain === 'target' ? ('target' as const) : ('source' as const),
          rows: kept.get(x.domain) ?? 0,
        })),
        sharingPolicy: { shareWith: p.embedding.shareWith },
        experimentId: experiment.id,
        originKey,
        provenance: {
          strategy: 'union',
          seed: seed0,
          model: pooled.dir,
          unionTestAuc: pooled.metrics.auc,
          unionValidationAuc: pooled.metrics.validation.auc,
          // the training split; models fit on fitRows of it (the rest is the validation split)
          trainRows: built.train.rows + built.validation.rows,
          fitRows: built.train.rows,
          experimentId: experiment.id,
          trialId: trial.id,
        },
      });
    }
    const ref = `${entity.name}@${entity.version}`;
    logger.log(`shared embedding ${ref}: ${slots.length} slot(s) from ${built.train.rows} union rows`);
    checkpoint();

    // the target's own rows, exactly as the target-only baseline builds them
    const targetParts = [p.parts[0]];
    const columns = recipe.features.filter((f) => f.name !== UNION_DOMAIN).map((f) => f.name);
    const targetRecipe = {
      ...recipe,
      sampleFile: unionFile(targetParts, columns, p.testFrom),
      sampleVersion: null,
      features: recipe.features.filter((f) => f.name !== UNION_DOMAIN),
    };
    t0 = Date.now();
    const targetUnion = await ensureUnion(this.w.dataDir, targetRecipe.sampleFile, targetParts, columns, p.testFrom, (part) =>
      openSampleSet(this.w, part.sampleSetId),
    );
    timings.alignMs += Date.now() - t0;
    t0 = Date.now();
    const targetBuilt = await this.targetValidation(await this.w.samples.get(targetRecipe, targetRecipe.features), targetUnion);
    timings.buildMs += Date.now() - t0;
    checkpoint();
    const init = {
      init: { embeddingId: entity.id, ref, file: entity.file, sha256: entity.sha256, freeze: p.freezeEmbeddings === true },
    };
    const perSeed: (SeedRun & { trainMs: number })[] = [];
    for (const [k, seed] of p.seeds.entries()) {
      t0 = Date.now();
      const trained = await this.w.trainer.trainOrReuse(
        targetBuilt,
        recipe.architecture,
        { ...recipe.training, seed },
        {
          signal,
          device,
          onProgress: (f, m) =>
            void progress(0.15 + (0.84 * (k + 1 + f)) / total, `target model from ${ref}, seed ${seed}: ${m}`).catch(
              () => undefined,
            ),
        },
        recipeInit(this.w.dataDir, init, targetBuilt),
      );
      checkpoint();
      perSeed.push({
        seed,
        auc: trained.metrics.auc,
        logloss: trained.metrics.logloss,
        validationAuc: trained.metrics.validation.auc,
        validationLogloss: trained.metrics.validation.logloss,
        modelDir: trained.dir,
        cached: trained.cached,
        init: trained.init,
        trainMs: Date.now() - t0,
      });
    }
    const mean = (k: 'auc' | 'logloss' | 'validationAuc' | 'validationLogloss') =>
      perSeed.reduce((a, r) => a + r[k], 0) / perSeed.length;
    logger.log(
      `shared_embedding [${p.sources.join(', ')}] from ${ref}: validation AUC ${mean('validationAuc').toFixed(4)}, test AUC ${mean('auc').toFixed(4)} over ${p.seeds.length} seed(s)`,
    );
    return {
      metrics: {
        strategy: p.strategy,
        sources: p.sources,
        // test split (reported)
        auc: mean('auc'),
        logloss: mean('logloss'),
        // validation split (decisions)
        validationAuc: mean('validationAuc'),
        validationLogloss: mean('validationLogloss'),
        perSeed,
        testRows: targetBuilt.test.rows,
        // the target's rows from validationFrom up to the test start: not fitted on by the union model
        // that learned the embedding, nor by the target models
        validationRows: targetBuilt.validation.rows,
        validationFrom: targetUnion.validation.from,
        // rows the model learned from: the union's (its embeddings) and the target's (the rest)
        // the training split; models fit on fitRows of it (the rest is the validation split)
        trainRows: built.train.rows + built.validation.rows,
        fitRows: built.train.rows,
        finetuneRows: targetBuilt.train.rows,
        parts: union.parts,
        samplesKey: targetBuilt.key,
        testFrom: p.testFrom,
        freezeEmbeddings: p.freezeEmbeddings === true,
        embedding: {
          id: entity.id,
          ref,
          slots: slots.map((s) => s.name),
          learnedOn: {
            model: pooled.dir,
            seed: seed0,
            unionTestAuc: pooled.metrics.auc,
            unionValidationAuc: pooled.metrics.validation.auc,
            cached: pooled.cached,
          },
        },
        // wall time per phase (training: the pooled union model, then the target models)
        timings: { ...timings, trainMs: pooledMs + perSeed.reduce((a, r) => a + r.trainMs, 0) },
        cached: { union: union.cached && targetUnion.cached, samples: built.cached && targetBuilt.cached },
      },
    };
  }
}

/** Loss weight of each row by its domain (a dictionary slot): `weights[domain]`, 1 for domains not named. */
export function domainLossWeights(
  slot: { ids: Int32Array; offsets: Int32Array },
  space: SlotIdSpace,
  weights: Record<string, number>,
  rows: number,
): Float32Array {
  if (space.kind !== 'dictionary') throw new Error('the domain column is not dictionary-encoded');
  const byId = new Float32Array(space.values.length + 1).fill(1);
  space.values.forEach((v, i) => (byId[i + 1] = weights[String(v)] ?? 1));
  const w = new Float32Array(rows);
  for (let r = 0; r < rows; r++) w[r] = byId[slot.ids[slot.offsets[r]]] ?? 1;
  return w;
}

/** rows a chunk when the split's row sets are copied into shard files (one shard file a chunk) */
export const SPLIT_CHUNK_ROWS = 262_144;

/**
 * The built union's train rows split into borrowed (pretraining) and target (fine-tuning) rows by the
 * domain slot, which the model then does not take: pretraining needs no indicator, and the model must
 * not see one. The two row sets interleave in time, so each is a copy: with `scratch` (a folder, for
 * train rows in shards) written there as shard files, the split read SPLIT_CHUNK_ROWS rows at a time
 * (its domain column too), so the trial's memory does not grow with the set; otherwise copied into
 * memory. The validation and test splits
 * stay as they are.
 */
export async function splitByDomain(
  built: BuiltSet,
  opts: {
    scratch?: string | null;
    onProgress?: (fraction: number, message: string) => void;
    chunkRows?: number;
    /** the slot that tells the rows' lines apart (the union's domain) */
    domain?: string;
  } = {},
): Promise<{
  built: BuiltSet;
  pretrain: RuntimeData;
  finetune: RuntimeData;
  tag: string;
}> {
  const { scratch = null, onProgress, chunkRows = SPLIT_CHUNK_ROWS, domain = UNION_DOMAIN } = opts;
  if (!built.test.slots.some((s) => s.name === domain) || built.test.rows === 0)
    throw new Error('the union samples have no domain column');
  // the test rows are all the target's
  const testSlot = await slotOf(sliceRows(built.test, 0, 1), domain);
  const targetId = testSlot.ids[testSlot.offsets[0]!];
  const train = built.train;
  const n = train.rows;
  const drop = (d: ColumnarDataset): ColumnarDataset => ({ ...d, slots: d.slots.filter((s) => s.name !== domain) });
  const check = (pre: number, fine: number) => {
    if (!pre) throw new Error('no borrowed rows before the target validation start to pretrain on');
    if (!fine) throw new Error('the target has no training rows');
    return createHash('sha256').update(`${pre}/${fine}/${targetId}`).digest('hex').slice(0, 16);
  };
  const stripped: BuiltSet = {
    ...built,
    inputs: { ...built.inputs, slots: built.inputs.slots.filter((s) => s.name !== domain) },
  };
  if (!scratch || !isShardDataset(train)) {
    // in memory: the row lists of the whole split, then one copy of each
    const slot = await slotOf(train, domain);
    const pre: number[] = [];
    const fine: number[] = [];
    for (let r = 0; r < n; r++) (slot.ids[slot.offsets[r]!] === targetId ? fine : pre).push(r);
    const tag = check(pre.length, fine.length);
    return {
      built: stripped,
      pretrain: drop(await materialize(train, pre)),
      finetune: drop(await materialize(train, fine)),
      tag,
    };
  }
  // in shards: chunk after chunk of the split (a view), its domain column read, its rows of each kind
  // copied into a shard file of their own; nothing held beyond one chunk
  const vocab = Object.fromEntries(train.slots.flatMap((s) => (s.vocab === undefined ? [] : [[s.name, s.vocab]])));
  const files = { pretrain: [] as string[], finetune: [] as string[] };
  const rows = { pretrain: 0, finetune: 0 };
  for (let at = 0; at < n; at += chunkRows) {
    const to = Math.min(n, at + chunkRows);
    const view = sliceRows(train, at, to);
    const slot = await slotOf(view, domain);
    const idx = { pretrain: [] as number[], finetune: [] as number[] };
    for (let r = 0; r < to - at; r++) (slot.ids[slot.offsets[r]!] === targetId ? idx.finetune : idx.pretrain).push(r);
    for (const k of ['pretrain', 'finetune'] as const) {
      if (!idx[k].length) continue;
      const file = path.join(scratch, `${k}-${String(files[k].length).padStart(6, '0')}.shard`);
      await writeShard(file, drop(await materialize(view, idx[k])), { vocab });
      files[k].push(file);
      rows[k] += idx[k].length;
    }
    onProgress?.(to / n, `copying the pretraining and fine-tuning rows to shards (${to} of ${n})`);
  }
  const tag = check(rows.pretrain, rows.finetune);
  return {
    built: stripped,
    pretrain: await openShards(files.pretrain, { verify: false }),
    finetune: await openShards(files.finetune, { verify: false }),
    tag,
  };
}
