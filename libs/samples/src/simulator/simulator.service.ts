import { exactAuc } from '../metrics/exact-auc';
import { plantClickModel } from './click-model';
import { generateContexts, generateItems, generateUsers } from './entity-generator';
import { FEATURE_CATALOG } from './feature-catalog';
import { buildFlat } from './flat-builder';
import { generateImpressions } from './impression-generator';
import { Prng } from './prng';
import { simulateOptionsSchema, type SimulateOptions } from './simulate-options.schema';
import type { EntityTableColumns, SimWorld } from './sim-world.types';
import { DAY_SECONDS, DAYS, DOMAINS, TEST_DAYS, worldSizes } from './world-constants';
import type { FeatureCosts, FeatureKind, GroundTruth, GroundTruthFeature } from './world.types';

/**
 * Simulates a complete synthetic world (three business lines, users with daily snapshots, items,
 * contexts, a labelled impression log) as a pure function of `seed` and `rows`.
 */
export function simulateWorld(options: SimulateOptions): SimWorld {
  const { seed, rows, clickModel } = simulateOptionsSchema.parse(options);
  const root = new Prng(seed);
  // one independent stream per stage: changing one stage's draws leaves the others untouched
  const rngItems = root.fork(1);
  const rngUsers = root.fork(2);
  const rngContexts = root.fork(3);
  const rngImpressions = root.fork(4);
  const rngEffects = root.fork(5);
  const rngLabels = root.fork(6);

  const sizes = worldSizes(rows);
  const items = generateItems(rngItems, sizes.items);
  const users = generateUsers(rngUsers, sizes.users, items);
  const contexts = generateContexts(rngContexts);
  const imp = generateImpressions(rngImpressions, rows, users, items);
  const model = plantClickModel(rngEffects, imp, users, items, contexts, clickModel);

  const click = imp.table.click;
  for (let r = 0; r < rows; r++) click[r] = rngLabels.next() < 1 / (1 + Math.exp(-model.logit[r])) ? 1 : 0;

  const testFrom = (DAYS - TEST_DAYS) * DAY_SECONDS;
  const flat = buildFlat({
    impressions: imp.table,
    userRow: imp.userRow,
    users: users.table,
    items: items.table,
    contexts,
    trueLogit: model.logit,
    testFrom,
  });

  const domains = DOMAINS.map((spec, d) => {
    let n = 0;
    let clicks = 0;
    for (let r = 0; r < rows; r++) {
      if (imp.table.domainIndex[r] !== d) continue;
      n++;
      clicks += click[r];
    }
    const auc = exactAuc(model.logit, click, (r) => imp.table.domainIndex[r] === d && imp.table.ts[r] >= testFrom);
    return { name: spec.name, impressions: n, clickRate: n > 0 ? clicks / n : 0, upperBoundTestAuc: auc };
  });

  const tables = { user: users.table, item: items.table, context: contexts } as const;
  const features: GroundTruthFeature[] = FEATURE_CATALOG.map((spec) => {
    const table = tables[spec.table];
    const vocab =
      spec.kind === 'categorical'
        ? table.categorical.find((c) => c.name === spec.name)!.vocab
        : spec.kind === 'multi_id'
          ? table.multiId.find((c) => c.name === spec.name)!.vocab
          : undefined;
    return {
      name: spec.name,
      table: spec.table,
      kind: spec.kind,
      role: spec.role,
      effect: round(model.realisedEffect.get(spec.name) ?? 0, 4),
      ...(spec.copyOf ? { copyOf: spec.copyOf } : {}),
      ...(vocab !== undefined ? { vocab } : {}),
      costs: featureCosts(spec.kind, spec.name, table),
      inConfigOf: [...spec.inConfigOf],
    };
  });

  const groundTruth: GroundTruth = { seed, rows, testFrom, domains, features };
  return { groundTruth, flat, impressions: imp.table, users: users.table, items: items.table, contexts };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * Declared costs: numeric = one float32; categorical = one int32 id plus an embedding lookup;
 * multi-id = a length-prefixed id list (mean length measured) and one lookup per id, so it is the costliest.
 */
function featureCosts(kind: FeatureKind, name: string, table: EntityTableColumns): FeatureCosts {
  if (kind === 'numeric') return { storageBytesPerEntity: 4, fetchBytesPerRequest: 4, computeCost: 1 };
  if (kind === 'categorical') return { storageBytesPerEntity: 4, fetchBytesPerRequest: 4, computeCost: 2 };
  const col = table.multiId.find((c) => c.name === name)!;
  const meanLen = col.offsets[table.rows] / Math.max(1, table.rows);
  const bytes = round(4 + 4 * meanLen, 2);
  return { storageBytesPerEntity: bytes, fetchBytesPerRequest: bytes, computeCost: round(2 + 2 * meanLen, 2) };
}
