import type { DataSource } from 'typeorm';
import { ForbiddenError, InvalidInputError, canSeeLine, tierFromAlias, type RequestScope } from '@abacus/core';
import { EmbeddingService, exprContext, expressionSource, refTargets, sharedWith, tableJoin } from '@abacus/catalog';
import { ExprError, checkExpr, type FeatureExpr } from '@abacus/samples';
import { FeatureEntity, FeatureTableEntity, ModelEntity, SampleSetEntity } from '@abacus/data';
import { explicitPositive, requireBinaryLabel } from './label-check';
import {
  architectureSchema,
  trainingSchema,
  type ModelInitSpec,
  type ModelRecipe,
  type ModelRef,
  type ResolvedFeature,
  type ResolvedInit,
} from './model-recipe.schema';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Turns names in a spec (model, sample set, features) into files, columns and registry sources. */
export class RecipeResolver {
  constructor(
    private readonly ds: DataSource,
    private readonly scope: RequestScope,
    private readonly businessLine: string,
  ) {}

  async sampleSet(ref: string, path: string): Promise<SampleSetEntity> {
    const repo = this.ds.getRepository(SampleSetEntity);
    const ss = UUID.test(ref)
      ? await repo.findOneBy({ id: ref })
      : await repo.findOneBy({ businessLine: this.businessLine, name: ref });
    if (!ss) throw new InvalidInputError(path, `no sample set "${ref}" in ${this.businessLine}`);
    // the experiment's line is one the key may write to; another line's samples need that line's consent
    if (!sharedWith(ss, this.businessLine)) {
      throw new ForbiddenError(
        `${path}: sample set "${ss.name}" belongs to business line "${ss.businessLine}" and is not shared with "${this.businessLine}"`,
      );
    }
    return ss;
  }

  async model(ref: string, path: string): Promise<ModelEntity> {
    const repo = this.ds.getRepository(ModelEntity);
    // `name@tier-N` / `name@tier-large`: the latest version published as that tier (divide); `name@vN`: that version
    const alias = /^(.+)@(?:(tier-(?:\d{1,3}|large))|v(\d{1,9}))$/.exec(ref);
    const m = UUID.test(ref)
      ? await repo.findOneBy({ id: ref })
      : alias
        ? await repo.findOne({
            where: {
              businessLine: this.businessLine,
              name: alias[1],
              ...(alias[2] !== undefined ? { tier: tierFromAlias(alias[2])! } : { version: Number(alias[3]) }),
            },
            order: { version: 'DESC' },
          })
        : await repo.findOne({ where: { businessLine: this.businessLine, name: ref }, order: { version: 'DESC' } });
    if (!m) throw new InvalidInputError(path, `no model "${ref}" in ${this.businessLine}`);
    if (m.businessLine !== this.businessLine) {
      // another line's model trains on that line's samples: allowed only where they are shared with this line
      const ss = await this.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: m.sampleSetId });
      if (!sharedWith(ss, this.businessLine)) {
        throw new ForbiddenError(
          `${path}: model "${m.name}" (v${m.version}) belongs to business line "${m.businessLine}" and its sample set "${ss.name}" is not shared with "${this.businessLine}"`,
        );
      }
    }
    return m;
  }

  /** Columns that are never features: label, time and keys. */
  static reserved(ss: SampleSetEntity): Set<string> {
    return new Set([ss.labelColumn, ss.timeColumn, ...ss.keyColumns].filter((c): c is string => !!c));
  }

  static defaultFeatures(ss: SampleSetEntity): string[] {
    const skip = RecipeResolver.reserved(ss);
    return ss.schema.filter((c) => !skip.has(c.name) && c.kind !== 'unsupported').map((c) => c.name);
  }

  /**
   * A feature of the sample set's own columns, or a registered feature joined from its feature
   * table (by entity key, point in time when the table has a time column).
   */
  async feature(name: string, ss: SampleSetEntity, path: string): Promise<ResolvedFeature> {
    const reg = await this.registered(name);
    const transform =
      reg?.transform && reg.transform.type !== 'none' ? (reg.transform as ResolvedFeature['transform']) : undefined;
    const col = ss.schema.find((c) => c.name === name);
    if (col) {
      if (RecipeResolver.reserved(ss).has(name))
        throw new InvalidInputError(path, `"${name}" is the label, time or a key column`);
      if (col.kind === 'unsupported')
        throw new InvalidInputError(path, `column "${name}" has type ${col.sourceType}, which cannot be a feature`);
      return { name, kind: col.kind, source: { kind: 'column' }, ...(transform ? { transform } : {}) };
    }
    if (!reg)
      throw new InvalidInputError(path, `"${name}" is neither a column of sample set ${ss.name} nor a registered feature`);
    if (reg.expression) {
      // checked again over this set (it may not be the one it was registered over), references expanded
      const ast = reg.expression.ast as unknown as FeatureExpr;
      const targets = await refTargets(this.ds, this.scope, this.businessLine, ast);
      let source: ResolvedFeature['source'];
      try {
        source = expressionSource(checkExpr(ast, exprContext(ss, targets), reg.kind), targets);
      } catch (err) {
        if (err instanceof ExprError)
          throw new InvalidInputError(path, `expression feature "${name}" cannot be read over sample set ${ss.name}: ${err.message}`);
        throw err;
      }
      return { name, kind: reg.kind, source, ...(transform ? { transform } : {}) };
    }
    if (!reg.featureTableId)
      throw new InvalidInputError(path, `registered feature "${name}" has no feature table to join it from`);
    const table = await this.ds.getRepository(FeatureTableEntity).findOneByOrFail({ id: reg.featureTableId });
    if (!ss.schema.some((c) => c.name === table.entityKey)) {
      throw new InvalidInputError(path, `feature "${name}" joins on ${table.entityKey}, which sample set ${ss.name} lacks`);
    }
    const { kind: _kind, ...join } = tableJoin(reg, table);
    return { name, kind: reg.kind, source: { kind: 'table', ...join }, ...(transform ? { transform } : {}) };
  }

  /** The registry entry: this line's first, else another line's the caller may see. */
  async registered(name: string): Promise<FeatureEntity | null> {
    const repo = this.ds.getRepository(FeatureEntity);
    const own = await repo.findOneBy({ businessLine: this.businessLine, name });
    if (own) return own;
    const others = await repo.find({ where: { name }, order: { createdAt: 'ASC' } });
    return others.find((f) => canSeeLine(this.scope, f.businessLine)) ?? null;
  }

  /** A shared embedding this line may start its models from (400 unknown, 403 not shared). */
  async init(spec: ModelInitSpec | undefined, path: string): Promise<ResolvedInit | null> {
    if (!spec) return null;
    const e = await new EmbeddingService(this.ds).resolveFor(spec.embedding, this.businessLine, `${path}.embedding`);
    return { embeddingId: e.id, ref: `${e.name}@${e.version}`, file: e.file, sha256: e.sha256, freeze: spec.freeze };
  }

  async base(ref: ModelRef, path: string): Promise<{ recipe: ModelRecipe; sampleSet: SampleSetEntity }> {
    let ss: SampleSetEntity;
    let names: string[];
    let modelId: string | null = null;
    let architecture = ref.architecture;
    let training = ref.training ?? trainingSchema.parse({});
    if (ref.model) {
      const m = await this.model(ref.model, `${path}.model`);
      ss = await this.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: m.sampleSetId });
      requireBinaryLabel(ss, `${path}.model`);
      names = m.features;
      modelId = m.id;
      architecture = architectureSchema.parse(m.architecture);
      training = trainingSchema.parse(m.trainingParams);
    } else {
      ss = await this.sampleSet(ref.sampleSet!, `${path}.sampleSet`);
      requireBinaryLabel(ss, `${path}.sampleSet`);
      names = ref.features ?? RecipeResolver.defaultFeatures(ss);
    }
    if (new Set(names).size !== names.length) throw new InvalidInputError(`${path}.features`, 'duplicate feature names');
    const features = [];
    for (let i = 0; i < names.length; i++) features.push(await this.feature(names[i], ss, `${path}.features.${i}`));
    if (ref.testFrom !== undefined && !ss.timeColumn)
      throw new InvalidInputError(`${path}.testFrom`, 'the sample set has no time column');
    if (ref.filter && !ss.schema.some((c) => c.name === ref.filter!.column)) {
      throw new InvalidInputError(`${path}.filter.column`, `column "${ref.filter.column}" is not in sample set ${ss.name}`);
    }
    const init = await this.init(ref.init, `${path}.init`);
    return {
      sampleSet: ss,
      recipe: {
        sampleSetId: ss.id,
        sampleFile: ss.files[0],
        ...(ss.dataVersion ? { sampleVersion: ss.dataVersion } : {}),
        label: ss.labelColumn,
        positive: explicitPositive(ss) ?? null,
        time: ss.timeColumn,
        testFrom: ref.testFrom ?? null,
        filter: ref.filter ?? null,
        features,
        architecture,
        training,
        modelId,
        init,
      },
    };
  }
}
