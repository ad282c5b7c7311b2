import { exactAuc } from '../metrics/exact-auc';
import { plantClickModel, plantUnrelatedClickModel } from './click-model';
import { derivedTruth, drawClicksWithHabit, plantDerived, type DerivedColumns } from './derived-effects';
import { generateContexts, generateItems, generateUsers } from './entity-generator';
import { FEATURE_CATALOG } from './feature-catalog';
import { buildFlat } from './flat-builder';
import { generateImpressions, type GeneratedImpressions } from './impression-generator';
import { Prng } from './prng';
import { simulateOptionsSchema, type SimulateOptions } from './simulate-options.schema';
import type { EntityTableColumns, ImpressionTable, SimWorld } from './sim-world.types';
import { DAY_SECONDS, DAYS, DOMAINS, N_CATEGORIES, TEST_DAYS, UNRELATED_DOMAIN, worldSizes } from './world-constants';
import type { FeatureCosts, FeatureKind, GroundTruth, GroundTruthFeature } from './world.types';

/**
 * Simulates a complete synthetic world (three business lines, users with daily snapshots, items,
 * contexts, a labelled impression log) as a pure function of `seed` and `rows` (and the options).
 * With `unrelatedLine`, a fourth line (UNRELATED_DOMAIN) is added: its impressions follow the three lines'
 * `rows` in the log (impression ids from `rows` on, sorted by time among themselves), drawn from a stream
 * of their own, so everything about the three lines is exactly what the world without it holds.
 */
export function simulateWorld(options: SimulateOptions): SimWorld {
  const { seed, rows: baseRows, clickModel, unrelatedLine, derivedEffects } = simulateOptionsSchema.parse(options);
  const root = new Prng(seed);
  // one independent stream per stage: changing one stage's draws leaves the others untouched
  const rngItems = root.fork(1);
  const rngUsers = root.fork(2);
  const rngContexts = root.fork(3);
  const rngImpressions = root.fork(4);
  const rngEffects = root.fork(5);
  const rngLabels = root.fork(6);

  const sizes = worldSizes(baseRows);
  const items = generateItems(rngItems, sizes.items);
  const users = generateUsers(rngUsers, sizes.users, items);
  const contexts = generateContexts(rngContexts);
  const related = generateImpressions(rngImpressions, baseRows, users, items);
  const model = plantClickModel(rngEffects, related, users, items, contexts, clickModel);
  let derived: GroundTruth['derived'];
  if (derivedEffects) {
    // a stream of its own, forked after every other: nothing else about the world moves
    const rngDerived = root.fork(8);
    const planted = plantDerived(rngDerived.fork(1), related.table, model.logit);
    related.table.derived = planted.columns;
    const category = items.table.categorical.find((c) => c.name === 'i_category')!.ids;
    const habit = drawClicksWithHabit(rngLabels, related.table, model.logit, category, N_CATEGORIES);
    derived = derivedTruth({ cross: planted.terms[0], ratio: planted.terms[1], rate: habit });
  } else drawClicks(rngLabels, related.table.click, model.logit);

  let imp = related;
  let logit = model.logit;
  if (unrelatedLine) {
    // forked after the six streams above, so none of their draws move
    const rngExtra = root.fork(7);
    const rngExtraImpressions = rngExtra.fork(1);
    const rngExtraEffects = rngExtra.fork(2);
    const rngExtraLabels = rngExtra.fork(3);
    const extraRows = Math.max(1, Math.round(baseRows * UNRELATED_DOMAIN.share));
    const extra = generateImpressions(rngExtraImpressions, extraRows, users, items, [UNRELATED_DOMAIN]);
    const extraModel = plantUnrelatedClickModel(rngExtraEffects, extra, users, items, contexts, UNRELATED_DOMAIN, clickModel);
    drawClicks(rngExtraLabels, extra.table.click, extraModel.logit);
    // the unrelated line carries the derived columns without their effects
    if (derivedEffects) extra.table.derived = plantDerived(root.fork(8).fork(2), extra.table, new Float64Array(extra.table.rows)).columns;
    imp = appendLine(related, extra);
    logit = new Float64Array(imp.table.rows);
    logit.set(model.logit);
    logit.set(extraModel.logit, baseRows);
  }
  const rows = imp.table.rows;
  const click = imp.table.click;

  const testFrom = (DAYS - TEST_DAYS) * DAY_SECONDS;
  const flat = buildFlat({
    impressions: imp.table,
    userRow: imp.userRow,
    users: users.table,
    items: items.table,
    contexts,
    trueLogit: logit,
    testFrom,
  });

  const domainSpecs = unrelatedLine ? [...DOMAINS, UNRELATED_DOMAIN] : DOMAINS;
  const domains = domainSpecs.map((spec, d) => {
    let n = 0;
    let clicks = 0;
    for (let r = 0; r < rows; r++) {
      if (imp.table.domainIndex[r] !== d) continue;
      n++;
      clicks += click[r];
    }
    const auc = exactAuc(logit, click, (r) => imp.table.domainIndex[r] === d && imp.table.ts[r] >= testFrom);
    return {
      name: spec.name,
      impressions: n,
      clickRate: n > 0 ? clicks / n : 0,
      upperBoundTestAuc: auc,
      ...(spec === UNRELATED_DOMAIN ? { unrelated: true as const } : {}),
    };
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

  const groundTruth: GroundTruth = { seed, rows: baseRows, testFrom, domains, features, ...(derived ? { derived } : {}) };
  return { groundTruth, flat, impressions: imp.table, users: users.table, items: items.table, contexts };
}

function drawClicks(rng: Prng, click: Uint8Array, logit: Float64Array): void {
  for (let r = 0; r < click.length; r++) click[r] = rng.next() < 1 / (1 + Math.exp(-logit[r])) ? 1 : 0;
}

/** `extra` (one line, domain index 0) after `base`: impression ids and domain indices continue base's */
function appendLine(base: GeneratedImpressions, extra: GeneratedImpressions): GeneratedImpressions {
  const a = base.table;
  const b = extra.table;
  const n = a.rows + b.rows;
  const cat = <T extends Int32Array | Uint8Array | Float64Array>(x: T, y: T, make: new (n: number) => T): T => {
    const out = new make(n);
    out.set(x);
    out.set(y, a.rows);
    return out;
  };
  const impressionId = Int32Array.from({ length: n }, (_, r) => r);
  const domainIndex = cat(
    a.domainIndex,
    Uint8Array.from(b.domainIndex, (d) => d + a.domains.length),
    Uint8Array,
  );
  const table: ImpressionTable = {
    rows: n,
    impressionId,
    ts: cat(a.ts, b.ts, Float64Array),
    domainIndex,
    domains: [...a.domains, ...b.domains],
    userId: cat(a.userId, b.userId, Int32Array),
    itemId: cat(a.itemId, b.itemId, Int32Array),
    contextId: cat(a.contextId, b.contextId, Int32Array),
    click: cat(a.click, b.click, Uint8Array),
  };
  if (a.derived && b.derived) {
    const d: DerivedColumns = {
      region: cat(a.derived.region, b.derived.region, Int32Array),
      slot: cat(a.derived.slot, b.derived.slot, Int32Array),
      spend: cat(a.derived.spend, b.derived.spend, Float64Array),
      visits: cat(a.derived.visits, b.derived.visits, Float64Array),
    };
    table.derived = d;
  }
  return { table, userRow: cat(base.userRow, extra.userRow, Int32Array) };
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
