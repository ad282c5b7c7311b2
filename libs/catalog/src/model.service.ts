import type { DataSource } from 'typeorm';
import { InvalidInputError, NotFoundError, type Page, type RequestScope } from '@abacus/core';
import { ModelEntity, SampleSetEntity } from '@abacus/data';
import type { CreateModel } from './catalog.schemas';

/** Model definitions; registering a name again creates its next version. */
export class ModelService {
  constructor(private readonly ds: DataSource) {}

  async create(input: CreateModel, scope: RequestScope): Promise<ModelEntity> {
    const sampleSet = await this.ds.getRepository(SampleSetEntity).findOneBy({ id: input.sampleSetId });
    if (!sampleSet || (scope.lines && !scope.lines.includes(sampleSet.businessLine))) {
      throw new InvalidInputError('sampleSetId', `no sample set ${input.sampleSetId}`);
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
      return repo.save(
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
    if (!m || (scope.lines && !scope.lines.includes(m.businessLine))) throw new NotFoundError('model', id);
    return m;
  }
}
