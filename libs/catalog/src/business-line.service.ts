import type { DataSource } from 'typeorm';
import { ConflictError, NotFoundError, type RequestScope } from '@abacus/core';
import { BusinessLineEntity } from '@abacus/data';
import type { CreateBusinessLine } from './catalog.schemas';

export class BusinessLineService {
  constructor(private readonly ds: DataSource) {}

  private get repo() {
    return this.ds.getRepository(BusinessLineEntity);
  }

  async create(input: CreateBusinessLine, scope: RequestScope): Promise<BusinessLineEntity> {
    if (await this.repo.existsBy({ name: input.name })) throw new ConflictError(`business line ${input.name} already exists`);
    return this.repo.save(this.repo.create({ ...input, owner: scope.user }));
  }

  /** Creates it if missing (the demo world's registration runs twice without failing). */
  async ensure(input: CreateBusinessLine, scope: RequestScope): Promise<BusinessLineEntity> {
    await this.repo
      .createQueryBuilder()
      .insert()
      .values({ ...input, owner: scope.user })
      .orIgnore()
      .execute();
    return this.get(input.name, scope);
  }

  async list(scope: RequestScope): Promise<BusinessLineEntity[]> {
    const qb = this.repo.createQueryBuilder('b').orderBy('b.name');
    if (scope.lines) qb.where('b.name = ANY(:lines)', { lines: scope.lines });
    return qb.getMany();
  }

  async get(name: string, scope: RequestScope): Promise<BusinessLineEntity> {
    const line = await this.repo.findOneBy({ name });
    if (!line || (scope.lines && !scope.lines.includes(name))) throw new NotFoundError('business line', name);
    return line;
  }

  async exists(name: string): Promise<boolean> {
    return this.repo.existsBy({ name });
  }
}
