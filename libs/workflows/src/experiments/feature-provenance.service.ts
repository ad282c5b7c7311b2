import type { DataSource } from 'typeorm';
import { NotFoundError, canSeeLine, type Page, type RequestScope } from '@abacus/core';
import { ExperimentEntity, FeatureEntity } from '@abacus/data';
import { featureVerdict, type FeatureVerdict } from './feature-provenance';

/** One experiment that measured a feature, with what it said about it. */
export interface FeatureExperiment extends FeatureVerdict {
  id: string;
  kind: string;
  name: string;
  status: string;
  owner: string;
  createdAt: Date;
  finishedAt: Date | null;
}

// any string anywhere in the JSON equal to the name: a feature list, a ranking row, a candidate
const MENTIONS = `strict $.** ? (@ == $name)`;

/** A feature's provenance: the experiments of its line whose spec or result names it, newest first. */
export class FeatureProvenanceService {
  constructor(private readonly ds: DataSource) {}

  async experiments(
    featureId: string,
    scope: RequestScope,
    q: { page: number; pageSize: number },
  ): Promise<Page<FeatureExperiment> & { feature: { id: string; name: string; businessLine: string } }> {
    const f = await this.ds.getRepository(FeatureEntity).findOneBy({ id: featureId });
    if (!f || !canSeeLine(scope, f.businessLine)) throw new NotFoundError('feature', featureId);
    const vars = JSON.stringify({ name: f.name });
    const [rows, total] = await this.ds
      .getRepository(ExperimentEntity)
      .createQueryBuilder('e')
      .where('e.business_line = :bl', { bl: f.businessLine })
      .andWhere(
        `(jsonb_path_exists(e.spec, :path::jsonpath, :vars::jsonb) OR jsonb_path_exists(coalesce(e.result, '{}'::jsonb), :path::jsonpath, :vars::jsonb))`,
        { path: MENTIONS, vars },
      )
      .orderBy('e.created_at', 'DESC')
      .addOrderBy('e.id')
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return {
      feature: { id: f.id, name: f.name, businessLine: f.businessLine },
      items: rows.map((e) => ({
        id: e.id,
        kind: e.kind,
        name: e.name,
        status: e.status,
        owner: e.owner,
        createdAt: e.createdAt,
        finishedAt: e.finishedAt,
        ...featureVerdict(e.kind, e.status, f.name, e.spec, e.result),
      })),
      total,
      page: q.page,
      pageSize: q.pageSize,
    };
  }
}
