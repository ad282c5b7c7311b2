import type { DataSource } from 'typeorm';
import {
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  canSeeLine,
  requireWrite,
  type Page,
  type RequestScope,
} from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { BusinessLineEntity, ModelEntity, SampleSetEntity } from '@abacus/data';
import type { CreateModel } from './catalog.schemas';
import { sharedWith } from './sample-set.service';

/** Model definitions; registering a name again creates its next version. */
export class ModelService {
  constructor(private readonly ds: DataSource) {}

  async create(input: CreateModel, scope: RequestScope): Promise<ModelEntity> {
    requireWrite(scope, input.businessLine, 'create models');
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    const sampleSet = await this.ds.getRepository(SampleSetEntity).findOneBy({ id: input.sampleSetId });
    if (!sampleSet) throw new InvalidInputError('sampleSetId', `no sample set ${input.sampleSetId}`);
    // the same rule as experiment specs: another line's samples only where its sharing policy allows
    if (!sharedWith(sampleSet, input.businessLine)) {
      throw new ForbiddenError(
        `sample set "${sampleSet.name}" belongs to business line "${sampleSet.businessLine}" and is not shared with "${input.businessLine}"`,
      );
    }
    const skip = new Set([sampleSet.labelColumn, sampleSet.timeColumn, ...sampleSet.keyColumns]);
    const columns = sampleSet.schema.map((c) => c.name);
    const features =
      input.features ?? sampleSet.schema.filter((c) => !skip.has(c.name) && c.kind !== 'unsupported').map((c) => c.name);
    features.forEach((f, i) => {
      if (!columns.includes(f))
        throw new InvalidInputError(`features.${i}`, `column "${f}" is not in sample set ${sampleSet.name}`);
      if (skip.has(f)) throw new InvalidInputError(`features.${i}`, `"${f}" is the label, time or a key column`);
    });
    return this.ds.transaction(async (m) => {
      const repo = m.getRepository(ModelEntity);
      const latest = await repo
        .createQueryBuilder('m')
        .setLock('pessimistic_write')
        .where('m.business_line = :bl AND m.name = :n', { bl: input.businessLine, n: input.name })
        .orderBy('m.version', 'DESC')
        .getOne();
      const model = await repo.save(
        repo.create({
          name: input.name,
          version: (latest?.version ?? 0) + 1,
          businessLine: input.businessLine,
          owner: scope.user,
          sampleSetId: sampleSet.id,
          features,
          architecture: input.architecture,
          trainingParams: input.trainingParams,
        }),
      );
      await writeAudit(m, scope, {
        action: 'model.created',
        businessLine: model.businessLine,
        targetType: 'model',
        targetId: model.id,
        details: { name: model.name, version: model.version, sampleSetId: sampleSet.id, features: features.length },
      });
      return model;
    });
  }

  async list(scope: RequestScope, q: { businessLine?: string; page: number; pageSize: number }): Promise<Page<ModelEntity>> {
    const qb = this.ds.getRepository(ModelEntity).createQueryBuilder('m').orderBy('m.name').addOrderBy('m.version', 'DESC');
    if (scope.lines) qb.andWhere('m.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('m.business_line = :bl', { bl: q.businessLine });
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  async get(id: string, scope: RequestScope): Promise<ModelEntity> {
    const m = await this.ds.getRepository(ModelEntity).findOneBy({ id });
    if (!m || !canSeeLine(scope, m.businessLine)) throw new NotFoundError('model', id);
    return m;
  }
}
