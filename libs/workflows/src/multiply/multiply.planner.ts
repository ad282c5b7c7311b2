import type { DataSource } from 'typeorm';
import { ForbiddenError, InvalidInputError, SYSTEM_SCOPE, type RequestScope } from '@abacus/core';
import { EmbeddingService, sharedWith } from '@abacus/catalog';
import { ExperimentEntity, SampleSetEntity, SharedEmbeddingEntity, type TrialEntity } from '@abacus/data';
import { UNION_DOMAIN, UNION_LABEL, UNION_TIME } from '@abacus/samples';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { requireBinaryLabel, explicitPositive } from '../model/label-check';
import { modelRefSchema, type ModelRecipe, type ResolvedFeature } from '../model/model-recipe.schema';
import { RecipeResolver } from '../model/recipe-resolver';
import type { MultiplyCompareParams, MultiplyStrategy, MultiplyTrialParams, UnionPartParams } from './multiply-experiment.schema';
import { unionFile } from './union-samples';

type MultiplyInput = Extract<CreateExperiment, { kind: 'multiply' }>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * multiply: the target-only baseline and, per strategy, a model borrowing each source alone and all
 * of them together, every one trained on the same seeds, decided on the target's validation rows (its
 * last training rows, borrowed rows from their start on dropped) and reported on its test rows only.
 *
 * Flow:  finalize ← compare ← { target-only, strategy × sources... }
 */
export class MultiplyPlanner implements ExperimentPlanner<'multiply'> {
  readonly kind = 'multiply' as const;

  async plan(input: MultiplyInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const line = input.businessLine;
    const resolver = new RecipeResolver(ds, scope, line);
    const { recipe, sampleSet: target } = await resolver.base(spec.target, 'spec.target');
    if (!target.timeColumn || target.timeMin === null || target.timeMax === null) {
      throw new InvalidInputError(
        'spec.target.sampleSet',
        `sample set ${target.name} has no time column: borrowing needs one to check leakage`,
      );
    }
    recipe.features.forEach((f, i) => {
      if (f.source.kind !== 'column')
        throw new InvalidInputError(
          `spec.target.features.${i}`,
          `"${f.name}" is ${f.source.kind === 'table' ? 'joined from a feature table' : 'an expression'}; multiply borrows sample columns only`,
        );
    });
    const testFrom = spec.target.testFrom ?? target.timeMin + 0.8 * (target.timeMax - target.timeMin);

    // embedding_update: the version to improve, which this line must be allowed to update
    let update: MultiplyTrialParams['update'];
    /** the owner line's model to check a new version on (null: the name's first version left none to find) */
    let ownerTarget: Awaited<ReturnType<typeof ownerTargetOf>> = null;
    if (spec.embedding.update !== undefined) {
      const registry = new EmbeddingService(ds);
      const e = await registry.resolveForUpdate(spec.embedding.update, line, 'spec.embedding.update');
      const slots = new Set(recipe.features.filter((f) => f.kind !== 'numeric').map((f) => f.name));
      if (!e.slots.some((sl) => slots.has(sl.name))) {
        throw new InvalidInputError(
          'spec.embedding.update',
          `${e.name}@${e.version} has slots ${e.slots.map((x) => x.name).join(', ')}, none of them a feature of the target`,
        );
      }
      update = { embeddingId: e.id, ref: `${e.name}@${e.version}`, name: e.name, file: e.file, sha256: e.sha256 };
      if (e.businessLine !== line) ownerTarget = await ownerTargetOf(ds, e);
    }

    let sources: SampleSetEntity[];
    if (spec.sources === 'auto') sources = await autoSources(ds, line, target, recipe.features);
    else {
      // in order, so the first bad source is the one named
      sources = [];
      for (const [i, ref] of spec.sources.entries()) {
        sources.push(await this.source(ds, line, ref, `spec.sources.${i}`, target, recipe.features));
      }
    }
    if (new Set(sources.map((s) => s.id)).size !== sources.length)
      throw new InvalidInputError('spec.sources', 'duplicate sources');

    const parts = [unionPart(target, 'target'), ...sources.map((s) => unionPart(s, `${s.businessLine}/${s.name}`))];
    // loss weights of borrowed rows, by the source's name as written in spec.sources or as line/name
    const weights: Record<string, number> = {};
    for (const [k, w] of Object.entries(spec.sourceWeights)) {
      const i = Array.isArray(spec.sources) ? spec.sources.indexOf(k) : -1;
      const domain =
        i >= 0
          ? parts[i + 1].domain
          : parts.slice(1).find((p) => p.domain === k || p.sampleSetId === k || p.domain === `${line}/${k}`)?.domain;
      if (!domain) throw new InvalidInputError(`spec.sourceWeights.${k}`, `"${k}" is not one of the experiment's sources`);
      if (w !== 1) weights[domain] = w;
    }
    const columns = recipe.features.map((f) => f.name);
    // one union file per model: duplicates and vocabularies are those of the sets it borrows, no others
    const partsOf = (domains: string[]) => [parts[0], ...parts.filter((p) => domains.includes(p.domain))];
    const unionRecipe = (domains: string[], extra: ResolvedFeature[]): ModelRecipe => ({
      ...recipe,
      sampleFile: unionFile(partsOf(domains), columns, testFrom),
      // a file of this host's data directory, keyed by its own identity (not the target set's version)
      sampleVersion: null,
      label: UNION_LABEL,
      positive: null,
      time: UNION_TIME,
      testFrom,
      filter: null,
      features: [...recipe.features, ...extra],
    });
    const domainFeature: ResolvedFeature = { name: UNION_DOMAIN, kind: 'categorical', source: { kind: 'column' } };

    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const slug = (domains: string[]) => domains.map((d) => d.replace('/', '.').replace(/[^A-Za-z0-9._+-]/g, '-')).join('+');
    const train = (strategy: MultiplyTrialParams['strategy'], domains: string[], r: ModelRecipe) => {
      const w = Object.fromEntries(Object.entries(weights).filter(([d]) => domains.includes(d)));
      return add({
        kind: 'train',
        job: JobName.MultiplyTrial,
        params: {
          strategy,
          sources: domains,
          parts: partsOf(domains),
          testFrom,
          recipe: r,
          seeds: spec.seeds,
          ...(strategy === 'union' && Object.keys(w).length ? { weights: w } : {}),
          ...(strategy === 'pretrain_finetune' || strategy === 'shared_embedding'
            ? { freezeEmbeddings: spec.freezeEmbeddings }
            : {}),
          ...(strategy === 'embedding_update' ? { update } : {}),
          ...(strategy === 'shared_embedding'
            ? {
                embedding: {
                  name: `${spec.embedding.name ?? line}.${slug(domains)}`.slice(0, 200),
                  shareWith: spec.embedding.shareWith,
                },
              }
            : {}),
        } satisfies MultiplyTrialParams,
      });
    };
    const baseline = train('target_only', [], unionRecipe([], []));
    const domains = parts.slice(1).map((p) => p.domain);
    const groups = [
      ...(spec.perSource ? domains.map((d) => [d]) : []),
      ...(domains.length > 1 || !spec.perSource ? [domains] : []),
    ];
    const arms: MultiplyCompareParams['arms'] = [];
    let ownerCheckSeq: number | undefined;
    for (const strategy of spec.strategies as MultiplyStrategy[]) {
      if (strategy === 'embedding_update') {
        // the target's own rows, from the version it improves
        const seq = train(strategy, [], unionRecipe([], []));
        arms.push({ seq, strategy, sources: [] });
        if (ownerTarget) {
          // then the owner line's check of the new version (after it: the update trial is its child)
          ownerCheckSeq = add({
            kind: 'check',
            job: JobName.MultiplyTrial,
            params: {
              strategy: 'owner_check',
              sources: [],
              parts: [ownerTarget.part],
              testFrom: ownerTarget.testFrom,
              recipe: ownerTarget.recipe,
              seeds: spec.seeds,
              update,
              updateSeq: seq,
              ownerLine: ownerTarget.part.businessLine,
            } satisfies MultiplyTrialParams,
          });
        }
        continue;
      }
      for (const g of groups) {
        // the domain column tells the rows apart: a feature of the union model, the split point of
        // pretraining; the shared embedding is learned on the union model
        arms.push({ seq: train(strategy, g, unionRecipe(g, [domainFeature])), strategy, sources: g });
      }
    }
    const compare = add({
      kind: 'compare',
      job: JobName.MultiplyCompareTrial,
      params: {
        baselineSeq: baseline,
        arms,
        alpha: spec.alpha,
        bootstrap: spec.bootstrap,
        seed: spec.seed,
        ...(ownerCheckSeq !== undefined ? { ownerCheckSeq } : {}),
      } satisfies MultiplyCompareParams,
    });
    for (let i = 0; i < compare; i++) trials[i].parent = compare;
    // the owner's check reads the version the update trial registers: it runs after it
    if (ownerCheckSeq !== undefined)
      trials[(trials[ownerCheckSeq].params as MultiplyTrialParams).updateSeq!].parent = ownerCheckSeq;
    return {
      spec: {
        ...spec,
        resolved: {
          target: { sampleSetId: target.id, name: target.name, modelId: recipe.modelId, features: columns, testFrom },
          ...(Object.keys(weights).length ? { weights } : {}),
          sources: parts.slice(1).map((p) => ({ domain: p.domain, sampleSetId: p.sampleSetId, dataVersion: p.dataVersion })),
          ...(update
            ? {
                embeddingUpdate: {
                  from: update.ref,
                  ownerCheck: ownerTarget
                    ? { line: ownerTarget.part.businessLine, sampleSetId: ownerTarget.part.sampleSetId }
                    : noOwnerCheck(line, update),
                },
              }
            : {}),
        },
      },
      trials,
    };
  }

  /** A named source: found by id or `line/name`, shared with this line, and compatible with the target. */
  private async source(
    ds: DataSource,
    line: string,
    ref: string,
    path: string,
    target: SampleSetEntity,
    features: ResolvedFeature[],
  ): Promise<SampleSetEntity> {
    const repo = ds.getRepository(SampleSetEntity);
    let ss: SampleSetEntity | null;
    if (UUID.test(ref)) ss = await repo.findOneBy({ id: ref });
    else {
      const slash = ref.indexOf('/');
      ss = await repo.findOneBy(
        slash > 0 ? { businessLine: ref.slice(0, slash), name: ref.slice(slash + 1) } : { businessLine: line, name: ref },
      );
    }
    if (!ss) throw new InvalidInputError(path, `no sample set "${ref}" (name another line's set as line/name)`);
    if (!sharedWith(ss, line)) {
      throw new ForbiddenError(
        `${path}: sample set "${ss.name}" belongs to business line "${ss.businessLine}" and is not shared with "${line}"`,
      );
    }
    const problem = incompatibility(ss, target, features);
    if (problem) throw new InvalidInputError(path, problem);
    requireBinaryLabel(ss, path);
    return ss;
  }

  summarize(_e: ExperimentEntity, trials: TrialEntity[]): Record<string, unknown> {
    return trials.find((t) => t.kind === 'compare')?.metrics ?? {};
  }
}

/** Why `ss` cannot lend rows to the target's model (null: it can). */
function incompatibility(ss: SampleSetEntity, target: SampleSetEntity, features: ResolvedFeature[]): string | null {
  if (ss.id === target.id) return `sample set ${ss.name} is the target itself`;
  if (ss.labelSemantics !== target.labelSemantics) {
    return `sample set ${ss.businessLine}/${ss.name} has label semantics ${ss.labelSemantics}, the target ${target.labelSemantics}`;
  }
  if (!ss.timeColumn) return `sample set ${ss.businessLine}/${ss.name} has no time column, so leakage cannot be checked`;
  let shared = 0;
  for (const f of features) {
    const col = ss.schema.find((c) => c.name === f.name);
    if (!col) continue;
    if (col.kind !== f.kind) {
      return `column "${f.name}" is ${col.kind} in ${ss.businessLine}/${ss.name} but ${f.kind} in the target`;
    }
    if (RecipeResolver.reserved(ss).has(f.name))
      return `column "${f.name}" is the label, time or a key in ${ss.businessLine}/${ss.name}`;
    shared++;
  }
  if (!shared) return `sample set ${ss.businessLine}/${ss.name} has none of the target's feature columns`;
  return null;
}

/** Every other set shared with the line, of the target's label semantics, with compatible overlapping columns. */
async function autoSources(
  ds: DataSource,
  line: string,
  target: SampleSetEntity,
  features: ResolvedFeature[],
): Promise<SampleSetEntity[]> {
  const all = await ds.getRepository(SampleSetEntity).find({ order: { businessLine: 'ASC', name: 'ASC' } });
  const out = all.filter(
    (s) => sharedWith(s, line) && s.labelStats?.binary === true && incompatibility(s, target, features) === null,
  );
  if (!out.length) {
    throw new InvalidInputError(
      'spec.sources',
      `auto found no sample set shared with ${line} with label semantics ${target.labelSemantics} and the target's columns`,
    );
  }
  return out;
}

/** Why no owner check is planned: the updating line is the owner (its own ΔAUC is the check). */
function noOwnerCheck(line: string, update: NonNullable<MultiplyTrialParams['update']>): string {
  return `none: ${line} owns ${update.name}, so the update's own ΔAUC is the owner's check`;
}

/**
 * The owner line's model of a name: the target of the multiply experiment that learned its first
 * version (its sample set, features, test start, architecture and training), as a target-only recipe.
 * Resolved as the platform (the updating line need not see the owner's samples; only the check's
 * ΔAUC comes back). Null when the first version records no such experiment.
 */
async function ownerTargetOf(
  ds: DataSource,
  e: SharedEmbeddingEntity,
): Promise<{ part: UnionPartParams; testFrom: number; recipe: ModelRecipe } | null> {
  let root = e;
  const repo = ds.getRepository(SharedEmbeddingEntity);
  for (let hops = 0; hops < 1000 && typeof root.provenance.parentId === 'string'; hops++) {
    const up = await repo.findOneBy({ id: root.provenance.parentId });
    if (!up) break;
    root = up;
  }
  if (!root.experimentId) return null;
  const ex = await ds.getRepository(ExperimentEntity).findOneBy({ id: root.experimentId });
  const resolved = (
    ex?.spec as { resolved?: { target?: { sampleSetId: string; features: string[]; testFrom: number } } } | undefined
  )?.resolved?.target;
  if (!ex || ex.kind !== 'multiply' || !resolved) return null;
  const targetSpec = (ex.spec as { target?: { architecture?: unknown; training?: unknown } }).target ?? {};
  const resolver = new RecipeResolver(ds, SYSTEM_SCOPE, ex.businessLine);
  const { recipe, sampleSet } = await resolver.base(
    modelRefSchema.parse({
      sampleSet: resolved.sampleSetId,
      features: resolved.features,
      architecture: targetSpec.architecture ?? {},
      training: targetSpec.training ?? {},
    }),
    'spec.embedding.update',
  );
  const part = unionPart(sampleSet, 'target');

  const columns = recipe.features.map((f) => f.name);
  return {
    part,
    testFrom: resolved.testFrom,
    recipe: {
      ...recipe,
      sampleFile: unionFile([part], columns, resolved.testFrom),
      sampleVersion: null,
      label: UNION_LABEL,
      positive: null,
      time: UNION_TIME,
      testFrom: resolved.testFrom,
      filter: null,
    },
  };
}

/**
 * One sample set as a part of a union file: an upload's file, or where a set registered by reference
 * lies (the worker reads either through SampleSetData; the data version pins its objects).
 */
function unionPart(s: SampleSetEntity, domain: string): UnionPartParams {
  return {
    domain,
    sampleSetId: s.id,
    name: s.name,
    businessLine: s.businessLine,
    file: s.location ?? s.files[0],
    dataVersion: s.dataVersion,
    label: s.labelColumn,
    positive: explicitPositive(s) ?? null,
    time: s.timeColumn!,
  };
}
