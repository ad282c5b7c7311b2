import type { DataSource } from 'typeorm';
import { NotFoundError, canSeeLine, type RequestScope } from '@abacus/core';
import { ModelEntity } from '@abacus/data';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The latest version of a model of `line`, named by name or by one version's id; 404 for what the caller may not see. */
export async function latestModel(ds: DataSource, ref: string, line: string, scope?: RequestScope): Promise<ModelEntity> {
  const repo = ds.getRepository(ModelEntity);
  let name = ref;
  if (UUID.test(ref)) {
    const byId = await repo.findOneBy({ id: ref });
    if (!byId || byId.businessLine !== line || (scope && !canSeeLine(scope, line))) throw new NotFoundError('model', ref);
    name = byId.name;
  }
  if (scope && !canSeeLine(scope, line)) throw new NotFoundError('model', `"${ref}" in business line "${line}"`);
  const m = await repo.findOne({ where: { businessLine: line, name }, order: { version: 'DESC' } });
  if (!m) throw new NotFoundError('model', `"${ref}" in business line "${line}"`);
  return m;
}
