import type { Costs } from './divide-experiment.schema';
import { costOf, solveMilp } from './selection';

/** What the compute-cost benches know of a feature from the simulator's ground truth. */
export interface PlantedFeature {
  effect: number;
  costs: { storageBytesPerEntity: number; fetchBytesPerRequest: number };
}

/**
 * Divide's MILP selection for tiers 0.7 / 0.5 / 0.3 of the full model's cost, as the compute-cost
 * benches make it: values are the world's planted effects, storage and communication its planted
 * costs, compute the measured shares (one per name, in order).
 */
export async function tierSelections(
  names: string[],
  truth: Map<string, PlantedFeature>,
  shares: number[],
): Promise<Record<string, string[]>> {
  const values = Object.fromEntries(names.map((n) => [n, truth.get(n)!.effect]));
  const costs: Record<string, Costs> = Object.fromEntries(
    names.map((n, i) => [
      n,
      {
        storage: truth.get(n)!.costs.storageBytesPerEntity,
        communication: truth.get(n)!.costs.fetchBytesPerRequest,
        compute: shares[i]!,
      },
    ]),
  );
  const total = costOf(names, costs);
  const out: Record<string, string[]> = {};
  for (const f of [0.7, 0.5, 0.3]) {
    const budget = { storage: total.storage * f, communication: total.communication * f, compute: total.compute * f };
    out[String(f)] = (await solveMilp({ features: names, values, costs, budget, groups: [] })).selected;
  }
  return out;
}
