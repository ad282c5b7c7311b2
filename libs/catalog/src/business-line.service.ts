import type { DataSource } from 'typeorm';
import { ConflictError, NotFoundError, canSeeLine, requireRole, type RequestScope } from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { BusinessLineEntity } from '@abacus/data';
import type { CreateBusinessLine } from './catalog.schemas';

export class BusinessLineService {
  constructor(private readonly ds: DataSource) {}

  private get repo() {
    return this.ds.getRepository(BusinessLineEntity);
  }

  /** Admin only; the line and its audit entry are written together. */
  async create(input: CreateBusinessLine, scope: RequestScope): Promise<BusinessLineEntity> {
    requireRole(scope, 'admin', 'create business lines');
    if (await this.repo.existsBy({ name: input.name })) throw new ConflictError(`business line ${input.name} already exists`);
    return this.ds.transaction(async (m) => {
      const line = await m
        .getRepository(BusinessLineEntity)
        .save(m.getRepository(BusinessLineEntity).create({ ...input, owner: scope.user }));
      await writeAudit(m, scope, {
        action: 'business_line.created',
        businessLine: line.name,
        targetType: 'business_line',
        targetId: line.name,
        details: { description: line.description },
      });
      return line;
    });
  }

  async list(scope: RequestScope): Promise<BusinessLineEntity[]> {
    const qb = this.repo.createQueryBuilder('b').orderBy('b.name');
    if (scope.lines) qb.where('b.name = ANY(:lines)', { lines: scope.lines });
    return qb.getMany();
  }

  async get(name: string, scope: RequestScope): Promise<BusinessLineEntity> {
    const line = await this.repo.findOneBy({ name });
    if (!line || !canSeeLine(scope, name)) throw new NotFoundError('business line', name);
    return line;
  }

  async exists(name: string): Promise<boolean> {
    return this.repo.existsBy({ name });
  }
}
