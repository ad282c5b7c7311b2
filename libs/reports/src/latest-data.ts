import type { DataSource } from 'typeorm';
import { SampleSetEntity, type ModelEntity } from '@abacus/data';

/**
 * "The latest data" of a model: the newest sample set of the model's business line that is a later
 * delivery of the same table — the same label column, label semantics and time column, and every
 * feature the model takes from its own set's columns present with the same kind — created after the
 * model's own set; if there is none, the model's own set. (Sample set names are unique per line, so
 * a weekly import arrives under a new name; this rule finds it without naming it.)
 */
export async function latestSampleSet(ds: DataSource, model: ModelEntity): Promise<{ set: SampleSetEntity; latest: boolean }> {
  const repo = ds.getRepository(SampleSetEntity);
  const own = await repo.findOneByOrFail({ id: model.sampleSetId });
  const columns = own.schema.filter((c) => model.features.includes(c.name));
  const candidates = await repo
    .createQueryBuilder('s')
    .where('s.business_line = :bl AND s.created_at > :t AND s.id <> :id', { bl: own.businessLine, t: own.createdAt, id: own.id })
    .orderBy('s.created_at', 'DESC')
    .getMany();
  const fits = (s: SampleSetEntity) =>
    s.labelColumn === own.labelColumn &&
    s.labelSemantics === own.labelSemantics &&
    s.timeColumn === own.timeColumn &&
    columns.every((c) => s.schema.some((x) => x.name === c.name && x.kind === c.kind));
  const newer = candidates.find(fits);
  return newer ? { set: newer, latest: true } : { set: own, latest: false };
}
