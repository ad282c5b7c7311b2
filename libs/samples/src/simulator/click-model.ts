import { FAV_WEIGHTS, type ItemLatents, type UserLatents } from './entity-generator';
import { FEATURE_CATALOG } from './feature-catalog';
import type { GeneratedImpressions } from './impression-generator';
import type { Prng } from './prng';
import type { EntityTableColumns, MultiIdColumn } from './sim-world.types';
import { DOMAINS, N_BRANDS, N_CATEGORIES, N_CITIES, N_DEVICES, N_HOURS, N_ITEM_TAGS, type DomainSpec } from './world-constants';

/** weight of the latent user×category affinity, shared by every line */
export const SHARED_SIGNAL_EFFECT = 0.5;
/** weight of the line-specific part of the item-category effect, relative to the shared part */
const DOMAIN_CATEGORY_SHIFT = 0.5;

export interface ClickModel {
  logit: Float64Array;
  /** realised std over all impressions of each planted feature's contribution (incl. line multipliers) */
  realisedEffect: Map<string, number>;
  /** per-line bias found by calibration */
  domainBias: number[];
}

function normals(rng: Prng, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = rng.normal();
  return out;
}

/** z-score over the non-missing values; missing (NaN) rows contribute 0 */
function standardize(raw: Float64Array): Float64Array {
  let n = 0;
  let sum = 0;
  let sq = 0;
  for (let r = 0; r < raw.length; r++) {
    const v = raw[r];
    if (Number.isNaN(v)) continue;
    n++;
    sum += v;
    sq += v * v;
  }
  const mean = n > 0 ? sum / n : 0;
  const std = n > 1 ? Math.sqrt(Math.max(0, sq / n - mean * mean)) : 0;
  const out = new Float64Array(raw.length);
  if (std === 0) return out;
  for (let r = 0; r < raw.length; r++) out[r] = Number.isNaN(raw[r]) ? 0 : (raw[r] - mean) / std;
  return out;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * Plants the click logit: sum over features of (line multiplier × effect × standardized score) + shared
 * user×category affinity + line bias; biases are calibrated (bisection) so each line hits its target CTR.
 * Numeric scores are monotone (linear, log, sqrt); categorical scores are per-category random effects;
 * multi-id scores are overlap with the item (recent cats/items) or the mean of per-id effects.
 */
export function plantClickModel(
  rng: Prng,
  imp: GeneratedImpressions,
  users: UserLatents,
  items: ItemLatents,
  contexts: EntityTableColumns,
  mode: 'full' | 'additive' = 'full',
): ClickModel {
  const rows = imp.table.rows;
  const { userRow } = imp;
  const { itemId, contextId, domainIndex } = imp.table;
  const uNum = (name: string): Float64Array => users.table.numeric.find((c) => c.name === name)!.values;
  const uCat = (name: string): Int32Array => users.table.categorical.find((c) => c.name === name)!.ids;
  const uMulti = (name: string): MultiIdColumn => users.table.multiId.find((c) => c.name === name)!;
  const iNum = (name: string): Float64Array => items.table.numeric.find((c) => c.name === name)!.values;
  const iCat = (name: string): Int32Array => items.table.categorical.find((c) => c.name === name)!.ids;
  const cNum = (name: string): Float64Array => contexts.numeric.find((c) => c.name === name)!.values;
  const cCat = (name: string): Int32Array => contexts.categorical.find((c) => c.name === name)!.ids;

  const perRow = (f: (r: number) => number): Float64Array => {
    const out = new Float64Array(rows);
    for (let r = 0; r < rows; r++) out[r] = f(r);
    return out;
  };
  const catEffect = (ids: Int32Array, effects: Float64Array, rowOf: Int32Array): Float64Array =>
    perRow((r) => {
      const id = ids[rowOf[r]];
      return id < 0 ? NaN : effects[id];
    });
  const listMean = (col: MultiIdColumn, effects: Float64Array, rowOf: Int32Array): Float64Array =>
    perRow((r) => {
      const e = rowOf[r];
      const lo = col.offsets[e];
      const hi = col.offsets[e + 1];
      if (hi === lo) return NaN;
      let s = 0;
      for (let k = lo; k < hi; k++) s += effects[col.ids[k]];
      return s / (hi - lo);
    });
  const listHas = (col: MultiIdColumn, e: number, id: number): boolean => {
    for (let k = col.offsets[e]; k < col.offsets[e + 1]; k++) if (col.ids[k] === id) return true;
    return false;
  };

  // random effects (drawn in a fixed order: part of the seed's contract)
  const genderEff = normals(rng, 3);
  const cityEff = normals(rng, N_CITIES);
  const tierEff = normals(rng, 5);
  const memberEff = Float64Array.from([0, 0.6, 1.2, 1.6]);
  const catEff = normals(rng, N_CATEGORIES);
  const catDomainEff = DOMAINS.map(() => normals(rng, N_CATEGORIES));
  const recentCatEff = normals(rng, N_CATEGORIES);
  const brandEff = normals(rng, N_BRANDS);
  const tagEff = normals(rng, N_ITEM_TAGS);
  const hourEff = Float64Array.from({ length: N_HOURS }, (_, h) => Math.sin((2 * Math.PI * (h - 9)) / 24) + 0.3 * rng.normal());
  const deviceEff = normals(rng, N_DEVICES);

  const itemCat = iCat('i_category');
  const recentCats = uMulti('u_recent_cats');
  const recentItems = uMulti('u_recent_items');
  const itemRow = itemId;
  const ctxRow = contextId;
  const uAge = uNum('u_age');
  const uPrice = uNum('u_device_price');
  const uTenure = uNum('u_tenure_days');
  const uAct = uNum('u_activity_7d');
  const iPrice = iNum('i_price');
  const iQuality = iNum('i_quality');
  const iAge = iNum('i_age_days');
  const iCtr = iNum('i_hist_ctr');
  const iSales = iNum('i_sales_30d');
  const cPos = cNum('c_position');
  const cDepth = cNum('c_page_depth');

  // additive mode: per-item effects for the recently-clicked items (drawn only in that mode)
  let itemEff: Float64Array | null = null;
  const recentItemEff = () => (itemEff ??= normals(rng, items.table.rows));

  const scores: Record<string, () => Float64Array> = {
    u_age: () => perRow((r) => -Math.log(uAge[userRow[r]] - 14)),
    u_gender: () => catEffect(uCat('u_gender'), genderEff, userRow),
    u_city: () => catEffect(uCat('u_city'), cityEff, userRow),
    u_city_tier: () => catEffect(uCat('u_city_tier'), tierEff, userRow),
    u_member_level: () => catEffect(uCat('u_member_level'), memberEff, userRow),
    u_device_price: () => perRow((r) => Math.log(uPrice[userRow[r]])),
    u_tenure_days: () => perRow((r) => Math.log1p(uTenure[userRow[r]])),
    u_activity_7d: () => perRow((r) => Math.log1p(uAct[userRow[r]])),
    u_recent_cats: () => {
      // interest in high-CTR categories (visible per id) + overlap with the shown item's category
      const mean = listMean(recentCats, recentCatEff, userRow);
      if (mode === 'additive') return perRow((r) => (Number.isNaN(mean[r]) ? 0 : mean[r]));
      return perRow(
        (r) => (Number.isNaN(mean[r]) ? 0 : mean[r]) + (listHas(recentCats, userRow[r], itemCat[itemRow[r]]) ? 1.5 : 0),
      );
    },
    u_recent_items: () => {
      if (mode === 'full') return perRow((r) => (listHas(recentItems, userRow[r], itemRow[r]) ? 1 : 0));
      const mean = listMean(recentItems, recentItemEff(), userRow);
      return perRow((r) => (Number.isNaN(mean[r]) ? 0 : mean[r]));
    },
    i_category: () => catEffect(itemCat, catEff, itemRow),
    i_price: () => perRow((r) => -Math.log(iPrice[itemRow[r]])),
    i_quality: () => perRow((r) => iQuality[itemRow[r]]),
    i_brand: () => catEffect(iCat('i_brand'), brandEff, itemRow),
    i_age_days: () => perRow((r) => -Math.sqrt(iAge[itemRow[r]])),
    i_tags: () => listMean(items.table.multiId[0], tagEff, itemRow),
    i_hist_ctr: () =>
      perRow((r) => {
        const p = iCtr[itemRow[r]];
        return Math.log(p / (1 - p));
      }),
    i_sales_30d: () => perRow((r) => Math.log1p(iSales[itemRow[r]])),
    c_hour: () => catEffect(cCat('c_hour'), hourEff, ctxRow),
    c_position: () => perRow((r) => -Math.log(cPos[ctxRow[r]])),
    c_device: () => catEffect(cCat('c_device'), deviceEff, ctxRow),
    c_page_depth: () => perRow((r) => -Math.log(cDepth[ctxRow[r]])),
  };

  const nDomains = DOMAINS.length;
  const logit = new Float64Array(rows);
  const realisedEffect = new Map<string, number>();
  for (const spec of FEATURE_CATALOG) {
    if (spec.effect === 0) continue;
    const score = scores[spec.name];
    if (!score) throw new Error(`click model: no score for planted feature ${spec.name}`);
    const z = standardize(score());
    // line-specific shift: each line weighs each feature a bit differently (most of the signal is shared)
    const mult = Float64Array.from({ length: nDomains }, () => Math.min(1.5, Math.max(0.5, 1 + 0.25 * rng.normal())));
    let sq = 0;
    for (let r = 0; r < rows; r++) {
      const c = mult[domainIndex[r]] * spec.effect * z[r];
      logit[r] += c;
      sq += c * c;
    }
    realisedEffect.set(spec.name, Math.sqrt(sq / rows));
  }
  // line-specific part of the category effect, on the same scale as the shared part
  const catSpec = FEATURE_CATALOG.find((f) => f.name === 'i_category')!;
  const catStd = stdOf(catEffect(itemCat, catEff, itemRow));
  for (let r = 0; r < rows; r++) {
    const d = domainIndex[r];
    logit[r] += (DOMAIN_CATEGORY_SHIFT * catSpec.effect * catDomainEff[d][itemCat[itemRow[r]]]) / (catStd || 1);
  }
  // cross-line shared signal: latent user×category affinity (observed only through u_recent_cats)
  const affinity = perRow((r) => {
    const c = itemCat[itemRow[r]];
    const u = imp.table.userId[r];
    let a = 0;
    for (let k = 0; k < 3; k++) if (users.fav[u * 3 + k] === c) a += FAV_WEIGHTS[k];
    return a;
  });
  const zAff = standardize(affinity);
  if (mode === 'full') for (let r = 0; r < rows; r++) logit[r] += SHARED_SIGNAL_EFFECT * zAff[r];

  const domainBias = DOMAINS.map((spec, d) => calibrateBias(logit, domainIndex, d, spec.targetCtr));
  for (let r = 0; r < rows; r++) logit[r] += domainBias[domainIndex[r]];
  return { logit, realisedEffect, domainBias };
}

/**
 * The click logit of the opt-in unrelated line (rows of `imp` are that line's only): same features and nominal
 * effect sizes as the related lines, every effect drawn independently of theirs, so its logit is about
 * uncorrelated with theirs (|corr| ≲ 0.15 on their rows) while still far from noise:
 * - every categorical and id effect (gender, city, tier, member level, category, brand, tags, hour, device,
 *   recent categories, recent items) is drawn afresh from `rng`;
 * - every numeric feature acts through random per-decile effects (a shape of its own, not the related lines'
 *   monotone trends, nor their reverse);
 * - the latent user×category affinity uses favourite categories drawn independently of the users'
 *   (so u_recent_cats does not reveal it), and there is no recent-category / recent-item overlap term.
 * Its bias is calibrated to `spec.targetCtr`. Draws come from `rng` only: the related lines are unchanged.
 */
export function plantUnrelatedClickModel(
  rng: Prng,
  imp: GeneratedImpressions,
  users: UserLatents,
  items: ItemLatents,
  contexts: EntityTableColumns,
  spec: DomainSpec,
  mode: 'full' | 'additive' = 'full',
): ClickModel {
  const rows = imp.table.rows;
  const { userRow } = imp;
  const { itemId: itemRow, contextId: ctxRow } = imp.table;
  const uNum = (name: string): Float64Array => users.table.numeric.find((c) => c.name === name)!.values;
  const uCat = (name: string): Int32Array => users.table.categorical.find((c) => c.name === name)!.ids;
  const uMulti = (name: string): MultiIdColumn => users.table.multiId.find((c) => c.name === name)!;
  const iNum = (name: string): Float64Array => items.table.numeric.find((c) => c.name === name)!.values;
  const iCat = (name: string): Int32Array => items.table.categorical.find((c) => c.name === name)!.ids;
  const cNum = (name: string): Float64Array => contexts.numeric.find((c) => c.name === name)!.values;
  const cCat = (name: string): Int32Array => contexts.categorical.find((c) => c.name === name)!.ids;
  const perRow = (f: (r: number) => number): Float64Array => {
    const out = new Float64Array(rows);
    for (let r = 0; r < rows; r++) out[r] = f(r);
    return out;
  };
  const catEffect = (ids: Int32Array, effects: Float64Array, rowOf: Int32Array): Float64Array =>
    perRow((r) => {
      const id = ids[rowOf[r]];
      return id < 0 ? NaN : effects[id];
    });
  const listMean = (col: MultiIdColumn, effects: Float64Array, rowOf: Int32Array): Float64Array =>
    perRow((r) => {
      const e = rowOf[r];
      const lo = col.offsets[e];
      const hi = col.offsets[e + 1];
      if (hi === lo) return 0;
      let s = 0;
      for (let k = lo; k < hi; k++) s += effects[col.ids[k]];
      return s / (hi - lo);
    });

  // this line's own random effects (fixed draw order)
  const genderEff = normals(rng, 3);
  const cityEff = normals(rng, N_CITIES);
  const tierEff = normals(rng, 5);
  const memberEff = normals(rng, 4);
  const catEff = normals(rng, N_CATEGORIES);
  const recentCatEff = normals(rng, N_CATEGORIES);
  const recentItemEff = normals(rng, items.table.rows);
  const brandEff = normals(rng, N_BRANDS);
  const tagEff = normals(rng, N_ITEM_TAGS);
  const hourEff = normals(rng, N_HOURS);
  const deviceEff = normals(rng, N_DEVICES);
  const nUsers = users.device.length;
  const fav = new Int32Array(nUsers * 3);
  for (let k = 0; k < fav.length; k++) fav[k] = items.categoryPopularity.sample(rng);

  const itemCat = iCat('i_category');
  const uAge = uNum('u_age');
  const uPrice = uNum('u_device_price');
  const uTenure = uNum('u_tenure_days');
  const uAct = uNum('u_activity_7d');
  const iPrice = iNum('i_price');
  const iQuality = iNum('i_quality');
  const iAge = iNum('i_age_days');
  const iCtr = iNum('i_hist_ctr');
  const iSales = iNum('i_sales_30d');
  const cPos = cNum('c_position');
  const cDepth = cNum('c_page_depth');
  // numeric features act through per-decile random effects (a shape of their own, not a monotone trend)
  const deciles = (values: Float64Array): Float64Array => {
    const eff = normals(rng, 10);
    const present = Float64Array.from(values.filter((v) => !Number.isNaN(v))).sort();
    const cuts = Array.from({ length: 9 }, (_, k) => present[Math.floor(((k + 1) * present.length) / 10)]);
    return values.map((v) => {
      if (Number.isNaN(v)) return NaN;
      let b = 0;
      while (b < 9 && v >= cuts[b]) b++;
      return eff[b];
    });
  };
  const numeric = (values: Float64Array, rowOf: Int32Array) => () => deciles(perRow((r) => values[rowOf[r]]));
  const scores: Record<string, () => Float64Array> = {
    u_age: numeric(uAge, userRow),
    u_gender: () => catEffect(uCat('u_gender'), genderEff, userRow),
    u_city: () => catEffect(uCat('u_city'), cityEff, userRow),
    u_city_tier: () => catEffect(uCat('u_city_tier'), tierEff, userRow),
    u_member_level: () => catEffect(uCat('u_member_level'), memberEff, userRow),
    u_device_price: numeric(uPrice, userRow),
    u_tenure_days: numeric(uTenure, userRow),
    u_activity_7d: numeric(uAct, userRow),
    u_recent_cats: () => listMean(uMulti('u_recent_cats'), recentCatEff, userRow),
    u_recent_items: () => listMean(uMulti('u_recent_items'), recentItemEff, userRow),
    i_category: () => catEffect(itemCat, catEff, itemRow),
    i_price: numeric(iPrice, itemRow),
    i_quality: numeric(iQuality, itemRow),
    i_brand: () => catEffect(iCat('i_brand'), brandEff, itemRow),
    i_age_days: numeric(iAge, itemRow),
    i_tags: () => listMean(items.table.multiId[0], tagEff, itemRow),
    i_hist_ctr: numeric(iCtr, itemRow),
    i_sales_30d: numeric(iSales, itemRow),
    c_hour: () => catEffect(cCat('c_hour'), hourEff, ctxRow),
    c_position: numeric(cPos, ctxRow),
    c_device: () => catEffect(cCat('c_device'), deviceEff, ctxRow),
    c_page_depth: numeric(cDepth, ctxRow),
  };

  const logit = new Float64Array(rows);
  const realisedEffect = new Map<string, number>();
  for (const f of FEATURE_CATALOG) {
    if (f.effect === 0) continue;
    const score = scores[f.name];
    if (!score) throw new Error(`click model: no score for planted feature ${f.name}`);
    const z = standardize(score());
    let sq = 0;
    for (let r = 0; r < rows; r++) {
      const c = f.effect * z[r];
      logit[r] += c;
      sq += c * c;
    }
    realisedEffect.set(f.name, Math.sqrt(sq / rows));
  }
  if (mode === 'full') {
    const affinity = perRow((r) => {
      const c = itemCat[itemRow[r]];
      const u = imp.table.userId[r];
      let a = 0;
      for (let k = 0; k < 3; k++) if (fav[u * 3 + k] === c) a += FAV_WEIGHTS[k];
      return a;
    });
    const zAff = standardize(affinity);
    for (let r = 0; r < rows; r++) logit[r] += SHARED_SIGNAL_EFFECT * zAff[r];
  }
  const bias = calibrateBias(logit, imp.table.domainIndex, 0, spec.targetCtr);
  for (let r = 0; r < rows; r++) logit[r] += bias;
  return { logit, realisedEffect, domainBias: [bias] };
}

function stdOf(v: Float64Array): number {
  let n = 0;
  let s = 0;
  let q = 0;
  for (const x of v) {
    if (Number.isNaN(x)) continue;
    n++;
    s += x;
    q += x * x;
  }
  return n > 1 ? Math.sqrt(Math.max(0, q / n - (s / n) ** 2)) : 0;
}

/** bias b with mean(sigmoid(logit + b)) = target over the line's rows (bisection; the mean is monotone in b) */
function calibrateBias(logit: Float64Array, domainIndex: Uint8Array, d: number, target: number): number {
  let lo = -15;
  let hi = 5;
  for (let iter = 0; iter < 40; iter++) {
    const mid = (lo + hi) / 2;
    let s = 0;
    let n = 0;
    for (let r = 0; r < logit.length; r++) {
      if (domainIndex[r] !== d) continue;
      s += sigmoid(logit[r] + mid);
      n++;
    }
    if (n === 0) return mid;
    if (s / n < target) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
