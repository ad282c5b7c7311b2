import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  canSeeLine,
  requireRole,
  requireWrite,
  type Page,
  type RequestScope,
} from '@abacus/core';
import { writeAudit } from '@abacus/access';
import {
  BusinessLineEntity,
  FeatureEntity,
  FeatureTableEntity,
  SampleSetEntity,
  type FeatureCostsRecord,
  type FeatureExpressionRecord,
} from '@abacus/data';
import { ExprError, parseExprText, type FeatureExpr } from '@abacus/samples';
import type { CreateFeature, FeatureListQuery, ImportFeatureTable, UpdateFeature } from './catalog.schemas';
import type { DataDir } from './data-dir';
import { checkFeatureExpression, expressionRecord } from './feature-expression';
import { checkFinite, listColumns, sharedWith, type ImportWarnings, type UploadedFile } from './sample-set.service';
import { moveSpooled } from './spooled-upload';
import { TableInspector, type ImportLimits } from './table-inspector';

/** Declared cost figures carry the time they were declared. */
function withDeclaredAt(c: FeatureCostsRecord): FeatureCostsRecord {
  const declared =
    c.source !== 'measured' &&
    (c.storageBytesPerEntity !== undefined || c.fetchBytesPerRequest !== undefined || c.computeCost !== undefined);
  const { declaredAt: _old, ...rest } = c;
  return declared ? { ...rest, declaredAt: new Date().toISOString() } : rest;
}

/** The feature registry and the entity-keyed feature tables that feed it. */
export class FeatureService {
  private readonly inspector = new TableInspector();

  constructor(
    private readonly ds: DataSource,
    private readonly dataDir: DataDir,
    private readonly limits: ImportLimits = { maxColumns: 2000, maxCategories: 100_000 },
  ) {}

  /** 403 unless the caller may write into the line, then 400 if the line does not exist. */
  private async checkLine(line: string, scope: RequestScope, action: string): Promise<void> {
    requireWrite(scope, line, action);
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: line }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${line}"`);
    }
  }

  async create(input: CreateFeature, scope: RequestScope): Promise<FeatureEntity> {
    await this.checkLine(input.businessLine, scope, 'register features');
    const repo = this.ds.getRepository(FeatureEntity);
    let table: FeatureTableEntity | null = null;
    if (input.featureTableId) {
      table = await this.ds.getRepository(FeatureTableEntity).findOneBy({ id: input.featureTableId });
      if (!table || !canSeeLine(scope, table.businessLine)) {
        throw new InvalidInputError('featureTableId', `no feature table ${input.featureTableId}`);
      }
      if (table.businessLine !== input.businessLine) {
        throw new ForbiddenError(
          `feature table "${table.name}" belongs to business line "${table.businessLine}": register its features in that line`,
        );
      }
      const col = input.sourceColumn ?? input.name;
      if (!table.schema.some((c) => c.name === col)) {
        throw new InvalidInputError('sourceColumn', `column "${col}" is not in feature table ${table.name}`);
      }
    }
    const { expression: ast, expressionText, sampleSet, ...plain } = input;
    let expression: FeatureExpressionRecord | null = null;
    let kind = input.kind;
    if (ast !== undefined || expressionText !== undefined) {
      const ss = await this.sampleSetFor(sampleSet!, input.businessLine);
      if (ss.schema.some((c) => c.name === input.name)) {
        throw new InvalidInputError('name', `sample set ${ss.name} has a column named "${input.name}", which a model would read instead: name the expression otherwise`);
      }
      let tree: FeatureExpr;
      try {
        tree = ast ?? parseExprText(expressionText!);
      } catch (err) {
        if (err instanceof ExprError) throw new InvalidInputError('expressionText', err.reason);
        throw err;
      }
      const field = ast !== undefined ? 'expression' : 'expressionText';
      const checked = await checkFeatureExpression(this.ds, scope, input.businessLine, tree, ss, input.kind, field, input.name);
      kind = checked.kind;
      expression = expressionRecord(tree, checked, ss);
    }
    if (await repo.existsBy({ businessLine: input.businessLine, name: input.name })) {
      throw new ConflictError(`feature ${input.businessLine}/${input.name} already exists`);
    }
    return this.ds.transaction(async (m) => {
      const repo = m.getRepository(FeatureEntity);
      const f = await repo.save(
        repo.create({
          ...plain,
          kind: kind!,
          expression,
          owner: scope.user,
          featureTableId: table?.id ?? null,
          sourceTable: table?.name ?? null,
          sourceColumn: table ? (input.sourceColumn ?? input.name) : (input.sourceColumn ?? null),
          entityKey: table?.entityKey ?? null,
          costs: withDeclaredAt(input.costs),
          provenance: [],
        }),
      );
      await writeAudit(m, scope, {
        action: 'feature.registered',
        businessLine: f.businessLine,
        targetType: 'feature',
        targetId: f.id,
        details: { name: f.name, kind: f.kind, featureTableId: f.featureTableId, ...(expression ? { expression: expression.text } : {}) },
      });
      return f;
    });
  }

  /** The sample set an expression is read over: the line's own by name or id, or one shared with the line. */
  private async sampleSetFor(ref: string, line: string): Promise<SampleSetEntity> {
    const repo = this.ds.getRepository(SampleSetEntity);
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref);
    const ss = uuid ? await repo.findOneBy({ id: ref }) : await repo.findOneBy({ businessLine: line, name: ref });
    if (!ss || !sharedWith(ss, line)) throw new InvalidInputError('sampleSet', `no sample set "${ref}" in ${line}`);
    return ss;
  }

  /** Stores the table and registers one feature per column (all but the key and time) in one transaction. */
  async importTable(
    upload: UploadedFile,
    input: ImportFeatureTable,
    scope: RequestScope,
  ): Promise<{ table: FeatureTableEntity; features: FeatureEntity[] } & ImportWarnings> {
    await this.checkLine(input.businessLine, scope, 'import feature tables');
    const format = TableInspector.formatOf(upload.originalName);
    const inspected = await this.inspector.inspect(upload.path, upload.originalName, this.limits);
    const names = inspected.columns.map((c) => c.name);
    const key = inspected.columns.find((c) => c.name === input.entityKey);
    if (!key) {
      throw new InvalidInputError('entityKey', `column "${input.entityKey}" is not in the file (columns: ${listColumns(names)})`);
    }
    if (key.kind !== 'numeric' && key.kind !== 'categorical') {
      throw new InvalidInputError(
        'entityKey',
        `column "${input.entityKey}" has type ${key.sourceType}; a key must be a number or text`,
      );
    }
    if (input.time && !names.includes(input.time)) {
      throw new InvalidInputError('time', `column "${input.time}" is not in the file (columns: ${listColumns(names)})`);
    }
    if (inspected.rowCount === 0) throw new InvalidInputError('file', `${upload.originalName} has a header but no rows`);
    const { warnings, nullNonFinite } = await checkFinite(this.inspector, upload, inspected, input.allowNonFinite);
    const reserved = new Set([input.entityKey, ...(input.time ? [input.time] : [])]);
    const wide = await this.inspector.overCardinality(upload.path, inspected.columns, reserved, this.limits.maxCategories);
    if (wide) {
      throw new InvalidInputError(
        'file',
        `column "${wide.column}" has about ${wide.distinct} distinct values, more than the limit of ${this.limits.maxCategories} (ABACUS_MAX_CATEGORIES); hash or bucket it before import`,
      );
    }
    if (input.time) {
      await this.inspector.range(upload.path, input.time).catch(() => {
        throw new InvalidInputError('time', `column "${input.time}" is neither numeric nor a timestamp`);
      });
    }
    const featureCols = inspected.columns.filter(
      (c): c is typeof c & { kind: 'numeric' | 'categorical' | 'multi_id' } =>
        c.name !== input.entityKey && c.name !== input.time && c.kind !== 'unsupported',
    );
    if (!featureCols.length) throw new InvalidInputError('file', 'the table has no feature columns besides the key');
    const existing = await this.ds
      .getRepository(FeatureEntity)
      .createQueryBuilder('f')
      .where('f.business_line = :bl AND f.name IN (:...names)', { bl: input.businessLine, names: featureCols.map((c) => c.name) })
      .getMany();
    if (existing.length) {
      throw new ConflictError(
        `feature(s) already registered in ${input.businessLine}: ${existing.map((f) => f.name).join(', ')}`,
      );
    }
    const id = randomUUID();
    const dir = this.dataDir.featureTableDir(id);
    const rel = path.join(dir, 'data.parquet');
    try {
      this.dataDir.ensure(dir);
      if (format === 'parquet' && !nullNonFinite.length) moveSpooled(upload.path, this.dataDir.abs(rel));
      else await this.inspector.toParquet(upload.path, this.dataDir.abs(rel), nullNonFinite);
      await this.dataDir.push(rel);
      const stored = await this.ds.transaction(async (m) => {
        const table = await m.getRepository(FeatureTableEntity).save(
          m.getRepository(FeatureTableEntity).create({
            id,
            name: input.name,
            businessLine: input.businessLine,
            owner: scope.user,
            entityKey: input.entityKey,
            timeColumn: input.time ?? null,
            files: [rel],
            schema: inspected.columns,
            rowCount: inspected.rowCount,
          }),
        );
        const repo = m.getRepository(FeatureEntity);
        const features = await repo.save(
          featureCols.map((c) =>
            repo.create({
              name: c.name,
              businessLine: input.businessLine,
              owner: scope.user,
              kind: c.kind,
              featureTableId: id,
              sourceTable: input.name,
              sourceColumn: c.name,
              entityKey: input.entityKey,
              transform: { type: 'none' },
              costs: {},
              provenance: [],
            }),
          ),
        );
        await writeAudit(m, scope, {
          action: 'feature_table.imported',
          businessLine: table.businessLine,
          targetType: 'feature_table',
          targetId: table.id,
          details: { name: table.name, rows: table.rowCount, features: features.map((f) => f.name) },
        });
        return { table, features };
      });
      return { ...stored, warnings };
    } catch (err) {
      await this.dataDir.removeShared(dir).catch(() => this.dataDir.remove(dir));
      if ((err as { code?: string }).code === '23505')
        throw new ConflictError(`feature table ${input.name} conflicts with an existing one`);
      throw err;
    }
  }

  /** Engineer or above; a feature outside the key's lines is 404, as for reads. */
  async update(id: string, input: UpdateFeature, scope: RequestScope): Promise<FeatureEntity> {
    requireRole(scope, 'engineer', 'update features');
    const f = await this.get(id, scope);
    requireWrite(scope, f.businessLine, 'update features');
    const { costs, ...rest } = input;
    Object.assign(f, rest);
    // the platform's measurements stay beside the declared figures; the declared ones are replaced as sent
    if (costs) f.costs = withDeclaredAt({ ...costs, ...(f.costs.measured ? { measured: f.costs.measured } : {}) });
    return this.ds.transaction(async (m) => {
      const saved = await m.getRepository(FeatureEntity).save(f);
      await writeAudit(m, scope, {
        action: 'feature.updated',
        businessLine: saved.businessLine,
        targetType: 'feature',
        targetId: saved.id,
        details: { name: saved.name, changed: input },
      });
      return saved;
    });
  }

  async list(scope: RequestScope, q: FeatureListQuery): Promise<Page<FeatureEntity>> {
    const qb = this.ds.getRepository(FeatureEntity).createQueryBuilder('f').orderBy('f.business_line').addOrderBy('f.name');
    if (scope.lines) qb.andWhere('f.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('f.business_line = :bl', { bl: q.businessLine });
    if (q.kind) qb.andWhere('f.kind = :kind', { kind: q.kind });
    if (q.featureTableId) qb.andWhere('f.feature_table_id = :t', { t: q.featureTableId });
    if (q.name) qb.andWhere(`f.name ILIKE :pattern ESCAPE '\\'`, { pattern: `%${q.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%` });
    if (q.owner) qb.andWhere('f.owner = :owner', { owner: q.owner });
    if (q.role) {
      const inModel =
        'EXISTS (SELECT 1 FROM models m WHERE m.business_line = f.business_line AND m.features @> jsonb_build_array(f.name))';
      qb.andWhere(q.role === 'in-model' ? inModel : `NOT ${inModel}`);
    }
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  async get(id: string, scope: RequestScope): Promise<FeatureEntity> {
    const f = await this.ds.getRepository(FeatureEntity).findOneBy({ id });
    if (!f || !canSeeLine(scope, f.businessLine)) throw new NotFoundError('feature', id);
    return f;
  }

  async listTables(scope: RequestScope, businessLine?: string): Promise<FeatureTableEntity[]> {
    const qb = this.ds.getRepository(FeatureTableEntity).createQueryBuilder('t').orderBy('t.created_at', 'DESC');
    if (scope.lines) qb.andWhere('t.business_line = ANY(:lines)', { lines: scope.lines });
    if (businessLine) qb.andWhere('t.business_line = :bl', { bl: businessLine });
    return qb.getMany();
  }
}
