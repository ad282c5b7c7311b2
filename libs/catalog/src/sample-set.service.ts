import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import type { DataSource, SelectQueryBuilder } from 'typeorm';
import {
  ConflictError,
  InvalidInputError,
  NotFoundError,
  canSeeLine,
  requireWrite,
  type Page,
  type RequestScope,
} from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { BusinessLineEntity, SampleSetEntity } from '@abacus/data';
import type { StoreRegistry } from '@abacus/store';
import type { ImportSampleSet, RegisterSampleSet, SampleSetListQuery } from './catalog.schemas';
import { inspectReference } from './reference-inspector';
import type { DataDir } from './data-dir';
import { moveSpooled } from './spooled-upload';
import { TableInspector, type ImportLimits, type InspectedTable } from './table-inspector';

export interface UploadedFile {
  /** where the upload was spooled (a server-chosen name) */
  path: string;
  /** the client's file name, for messages only: never part of a server path */
  originalName: string;
}

/** What an import saw but accepted (e.g. non-finite numbers stored as missing when allowed). */
export type ImportWarnings = { warnings: string[] };

export class SampleSetService {
  private readonly inspector = new TableInspector();

  constructor(
    private readonly ds: DataSource,
    private readonly dataDir: DataDir,
    private readonly limits: ImportLimits = { maxColumns: 2000, maxCategories: 100_000 },
    /** how stores are reached (sets registered by reference); null: registering is off */
    private readonly stores: StoreRegistry | null = null,
  ) {}

  private get repo() {
    return this.ds.getRepository(SampleSetEntity);
  }

  /**
   * Validates the file against the form (columns present and unique, label binary, numbers finite, time
   * column usable, categorical cardinality within the limit), stores it as Parquet under the data
   * directory and writes the row. Any failure leaves neither row nor file.
   */
  async import(upload: UploadedFile, input: ImportSampleSet, scope: RequestScope): Promise<SampleSetEntity & ImportWarnings> {
    requireWrite(scope, input.businessLine, 'import sample sets');
    const format = TableInspector.formatOf(upload.originalName);
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    if (await this.repo.existsBy({ businessLine: input.businessLine, name: input.name })) {
      throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
    }
    const table = await this.inspector.inspect(upload.path, upload.originalName, this.limits);
    const names = table.columns.map((c) => c.name);
    const need = (field: string, col: string) => {
      if (!names.includes(col)) {
        throw new InvalidInputError(field, `column "${col}" is not in the file (columns: ${listColumns(names)})`);
      }
    };
    need('label', input.label);
    if (input.time) need('time', input.time);
    input.keys.forEach((k, i) => need(`keys.${i}`, k));
    if (table.rowCount === 0) throw new InvalidInputError('file', `${upload.originalName} has a header but no rows`);
    const { warnings, nullNonFinite } = await checkFinite(this.inspector, upload, table, input.allowNonFinite);
    const labelColumn = table.columns.find((c) => c.name === input.label)!;
    const labelStats = await this.inspector.labelStats(upload.path, labelColumn, input.positive);
    const reserved = new Set([input.label, ...(input.time ? [input.time] : []), ...input.keys]);
    const wide = await this.inspector.overCardinality(upload.path, table.columns, reserved, this.limits.maxCategories);
    if (wide) {
      throw new InvalidInputError(
        'file',
        `column "${wide.column}" has about ${wide.distinct} distinct values, more than the limit of ${this.limits.maxCategories} (ABACUS_MAX_CATEGORIES); list it in keys if it is an id, or hash it before import`,
      );
    }
    let range: { min: number; max: number } | null = null;
    if (input.time) {
      range = await this.inspector.range(upload.path, input.time).catch(() => {
        throw new InvalidInputError('time', `column "${input.time}" is neither numeric nor a timestamp`);
      });
    }

    const id = randomUUID();
    const dir = this.dataDir.sampleSetDir(id);
    const rel = path.join(dir, 'data.parquet');
    try {
      this.dataDir.ensure(dir);
      if (format === 'parquet' && !nullNonFinite.length) moveSpooled(upload.path, this.dataDir.abs(rel));
      else await this.inspector.toParquet(upload.path, this.dataDir.abs(rel), nullNonFinite);
      const dataVersion = await contentHash(this.dataDir.abs(rel));
      // streamed to the deployment's store (when there is one), before the row that names it
      await this.dataDir.push(rel);
      const saved = await this.ds.transaction(async (m) => {
        const repo = m.getRepository(SampleSetEntity);
        const row = await repo.save(
          repo.create({
            id,
            name: input.name,
            businessLine: input.businessLine,
            owner: scope.user,
            files: [rel],
            format,
            schema: table.columns,
            rowCount: table.rowCount,
            labelColumn: input.label,
            labelStats,
            timeColumn: input.time ?? null,
            timeMin: range?.min ?? null,
            timeMax: range?.max ?? null,
            keyColumns: input.keys,
            sharingPolicy: { shareWith: input.shareWith },
            labelSemantics: input.labelSemantics,
            dataVersion,
          }),
        );
        await writeAudit(m, scope, {
          action: 'sample_set.imported',
          businessLine: row.businessLine,
          targetType: 'sample_set',
          targetId: row.id,
          details: { name: row.name, rows: row.rowCount, shareWith: input.shareWith },
        });
        return row;
      });
      return Object.assign(saved, { warnings });
    } catch (err) {
      await this.dataDir.removeShared(dir).catch(() => this.dataDir.remove(dir));
      if ((err as { code?: string }).code === '23505') {
        throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
      }
      throw err;
    }
  }

  /**
   * Registers a sample set kept in a store, without copying it: lists the objects, reads their
   * Parquet footers (schema, rows, statistics) and records the objects with their sizes and ETags;
   * the data version is a hash of that list. Nothing is written when a check fails.
   */
  async register(input: RegisterSampleSet, scope: RequestScope): Promise<SampleSetEntity> {
    requireWrite(scope, input.businessLine, 'register sample sets');
    if (!this.stores)
      throw new InvalidInputError('url', 'this deployment has no store settings (registering by reference is off)');
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    if (await this.repo.existsBy({ businessLine: input.businessLine, name: input.name })) {
      throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
    }
    const ref = await inspectReference(this.stores, input);
    const names = ref.schema.map((c) => c.name);
    if (input.time && !names.includes(input.time)) {
      throw new InvalidInputError('time', `column "${input.time}" is not in the files (columns: ${listColumns(names)})`);
    }
    try {
      return await this.ds.transaction(async (m) => {
        const repo = m.getRepository(SampleSetEntity);
        const row = await repo.save(
          repo.create({
            name: input.name,
            businessLine: input.businessLine,
            owner: scope.user,
            files: [ref.location.url],
            format: 'parquet',
            schema: ref.schema,
            rowCount: ref.rowCount,
            labelColumn: input.label,
            labelStats: ref.labelStats,
            timeColumn: input.time ?? null,
            timeMin: ref.timeRange?.min ?? null,
            timeMax: ref.timeRange?.max ?? null,
            keyColumns: input.keys,
            sharingPolicy: { shareWith: input.shareWith },
            labelSemantics: input.labelSemantics,
            dataVersion: ref.dataVersion,
            location: ref.location.url,
            objects: ref.objects,
            partitions: input.partitions ?? null,
          }),
        );
        await writeAudit(m, scope, {
          action: 'sample_set.registered',
          businessLine: row.businessLine,
          targetType: 'sample_set',
          targetId: row.id,
          details: {
            name: row.name,
            location: ref.location.url,
            objects: ref.objects.length,
            rows: row.rowCount,
            dataVersion: ref.dataVersion,
          },
        });
        return row;
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
      }
      throw err;
    }
  }

  async list(
    scope: RequestScope,
    q: Pick<SampleSetListQuery, 'businessLine' | 'labelSemantics' | 'page' | 'pageSize'> & { hasColumns?: string[] },
  ): Promise<Page<SampleSetEntity>> {
    const qb = visibleSampleSets(this.repo.createQueryBuilder('s'), scope).orderBy('s.created_at', 'DESC');
    if (q.businessLine) qb.andWhere('s.business_line = :bl', { bl: q.businessLine });
    if (q.labelSemantics) qb.andWhere('s.label_semantics = :ls', { ls: q.labelSemantics });
    if (q.hasColumns?.length) {
      // every named column is in the schema: the schema contains [{name}] for each
      qb.andWhere('s.schema @> CAST(:cols AS jsonb)', { cols: JSON.stringify(q.hasColumns.map((name) => ({ name }))) });
    }
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  async get(id: string, scope: RequestScope): Promise<SampleSetEntity> {
    const s = await this.repo.findOneBy({ id });
    if (!s || !canReadSampleSet(scope, s)) throw new NotFoundError('sample set', id);
    return s;
  }

  async findByName(businessLine: string, name: string): Promise<SampleSetEntity | null> {
    return this.repo.findOneBy({ businessLine, name });
  }
}

/** sha256 of a stored file, the sample set's data version */
async function contentHash(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex').slice(0, 16)}`;
}

/** Whether a sample set's sharing policy lets experiments of `line` borrow it. */
export function sharedWith(s: SampleSetEntity, line: string): boolean {
  return s.businessLine === line || s.sharingPolicy.shareWith.some((l) => l === '*' || l === line);
}

/** A key reads the sample sets of its lines and those shared with one of its lines (DataBank). */
export function canReadSampleSet(scope: RequestScope, s: SampleSetEntity): boolean {
  return !scope.lines || canSeeLine(scope, s.businessLine) || scope.lines.some((l) => sharedWith(s, l));
}

function visibleSampleSets(qb: SelectQueryBuilder<SampleSetEntity>, scope: RequestScope): SelectQueryBuilder<SampleSetEntity> {
  if (!scope.lines) return qb;
  return qb.andWhere(`(s.business_line = ANY(:lines) OR (s.sharing_policy -> 'shareWith') ?| CAST(:shareKeys AS text[]))`, {
    lines: scope.lines,
    shareKeys: [...scope.lines, '*'],
  });
}

/** Column names for a message: all of them up to 50, then a count. */
export function listColumns(names: string[]): string {
  return names.length <= 50 ? names.join(', ') : `${names.slice(0, 50).join(', ')}, ... (${names.length} in all)`;
}

/**
 * NaN / ±Infinity in numeric columns: a 400 naming the column, the count and the first row, unless the
 * form allows them (then they are stored as missing values and each column is named in a warning).
 */
export async function checkFinite(
  inspector: TableInspector,
  upload: UploadedFile,
  table: InspectedTable,
  allow: boolean,
): Promise<{ warnings: string[]; nullNonFinite: string[] }> {
  const bad = await inspector.nonFinite(upload.path, table.columns);
  if (!bad.length) return { warnings: [], nullNonFinite: [] };
  if (!allow) {
    const b = bad[0];
    const more =
      bad.length > 1
        ? ` (and ${bad.length - 1} more column(s): ${bad
            .slice(1, 6)
            .map((x) => x.column)
            .join(', ')})`
        : '';
    throw new InvalidInputError(
      'file',
      `column "${b.column}" has ${b.count} non-finite value(s) (NaN or Infinity), the first in data row ${b.firstRow}${more}; fix the file or set allowNonFinite=true to store them as missing values`,
    );
  }
  return {
    warnings: bad.map(
      (b) =>
        `column "${b.column}": ${b.count} non-finite value(s) (NaN or Infinity) stored as missing, the first in data row ${b.firstRow}`,
    ),
    nullNonFinite: bad.map((b) => b.column),
  };
}
