import type { DataSource } from 'typeorm';
import { FeatureEntity } from '@abacus/data';

export interface KnownCosts {
  storageBytesPerEntity: number;
  fetchBytesPerRequest: number;
  computeCost: number;
}

/** Costs of features from the registry (this line's entry first, else any line's); missing = unknown. */
export async function featureCosts(ds: DataSource, businessLine: string, names: string[]): Promise<Record<string, KnownCosts>> {
  if (!names.length) return {};
  const rows = await ds.getRepository(FeatureEntity).createQueryBuilder('f').where('f.name IN (:...names)', { names }).getMany();
  const out: Record<string, KnownCosts> = {};
  for (const name of names) {
    const f = rows.find((r) => r.name === name && r.businessLine === businessLine) ?? rows.find((r) => r.name === name);
    const c = f?.costs;
    if (c && (c.storageBytesPerEntity !== undefined || c.fetchBytesPerRequest !== undefined || c.computeCost !== undefined)) {
      out[name] = {
        storageBytesPerEntity: c.storageBytesPerEntity ?? 0,
        fetchBytesPerRequest: c.fetchBytesPerRequest ?? 0,
        computeCost: c.computeCost ?? 0,
      };
    }
  }
  return out;
}

export function sumCosts(costs: KnownCosts[]): KnownCosts {
  return costs.reduce(
    (s, c) => ({
      storageBytesPerEntity: s.storageBytesPerEntity + c.storageBytesPerEntity,
      fetchBytesPerRequest: s.fetchBytesPerRequest + c.fetchBytesPerRequest,
      computeCost: s.computeCost + c.computeCost,
    }),
    { storageBytesPerEntity: 0, fetchBytesPerRequest: 0, computeCost: 0 },
  );
}
