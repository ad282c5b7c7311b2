import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
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
import type { ImportSampleSet } from './catalog.schemas';
import type { DataDir } from './data-dir';
import { TableInspector } from './table-inspector';

export interface UploadedFile {
  /** where the upload was spooled */
  path: string;
  originalName: string;
}

export class SampleSetService {
  private readonly inspector = new TableInspector();

  constructor(
    private readonly ds: DataSource,
    private readonly dataDir: DataDir,
  ) {}

  private get repo() {
    return this.ds.getRepository(SampleSetEntity);
  }

  /**
   * Validates the file against the form (label present and binary, time column usable), stores it
   * as Parquet under the data directory and writes the row. Any failure leaves neither row nor file.
   */
  async import(upload: UploadedFile, input: ImportSampleSet, scope: RequestScope): Promise<SampleSetEntity> {
    requireWrite(scope, input.businessLine, 'import sample sets');
    const format = TableInspector.formatOf(upload.originalName);
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    if (await this.repo.existsBy({ businessLine: input.businessLine, name: input.name })) {
      throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
    }
    const table = await this.inspector.inspect(upload.path);
    const names = table.columns.map((c) => c.name);
    const need = (field: string, col: string) => {
      if (!names.includes(col)) {
        throw new InvalidInputError(field, `column "${col}" is not in the file (columns: ${names.join(', ')})`);
      }
    };
    need('label', input.label);
    if (input.time) need('time', input.time);
    input.keys.forEach((k, i) => need(`keys.${i}`, k));
    if (table.rowCount === 0) throw new InvalidInputError('file', 'the file has no rows');
    const classes = await this.inspector.labelClasses(upload.path, input.label);
    if (classes.length !== 2) {
      throw new InvalidInputError(
        'label',
        `column "${input.label}" must have exactly 2 classes, found ${classes.length > 2 ? 'more than 2' : classes.length}${classes.length ? ` (${classes.join(', ')})` : ''}`,
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
      if (format === 'parquet') fs.copyFileSync(upload.path, this.dataDir.abs(rel));
      else await this.inspector.toParquet(upload.path, this.dataDir.abs(rel));
      return await this.ds.transaction(async (m) => {
        const repo = m.getRepository(SampleSetEntity);
        const saved = await repo.save(
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
            timeColumn: input.time ?? null,
            timeMin: range?.min ?? null,
            timeMax: range?.max ?? null,
            keyColumns: input.keys,
            sharingPolicy: { shareWith: input.shareWith },
          }),
        );
        await writeAudit(m, scope, {
          action: 'sample_set.imported',
          businessLine: saved.businessLine,
          targetType: 'sample_set',
          targetId: saved.id,
          details: { name: saved.name, rows: saved.rowCount, shareWith: input.shareWith },
        });
        return saved;
      });
    } catch (err) {
      this.dataDir.remove(dir);
      if ((err as { code?: string }).code === '23505') {
        throw new ConflictError(`sample set ${input.businessLine}/${input.name} already exists`);
      }
      throw err;
    }
  }

  async list(scope: RequestScope, q: { businessLine?: string; page: number; pageSize: number }): Promise<Page<SampleSetEntity>> {
    const qb = visibleSampleSets(this.repo.createQueryBuilder('s'), scope).orderBy('s.created_at', 'DESC');
    if (q.businessLine) qb.andWhere('s.business_line = :bl', { bl: q.businessLine });
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

  filePath(s: SampleSetEntity): string {
    return this.dataDir.abs(s.files[0]);
  }
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
