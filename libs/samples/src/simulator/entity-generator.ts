import { AliasSampler } from './alias-sampler';
import { CsrBuilder } from './csr-builder';
import type { Prng } from './prng';
import type { EntityTableColumns, MultiIdColumn } from './sim-world.types';
import {
  DAY_SECONDS,
  DAYS,
  N_BRANDS,
  N_CATEGORIES,
  N_CITIES,
  N_CONTEXTS,
  N_DEVICES,
  N_HOURS,
  N_ITEM_NOISE_CATS,
  N_ITEM_TAGS,
  N_NETWORKS,
  N_POSITIONS,
  N_USER_NOISE_CATS,
  N_USER_TAGS,
} from './world-constants';

export interface ItemLatents {
  table: EntityTableColumns;
  category: Int32Array;
  /** CSR: items of category c are itemsByCat.ids[offsets[c] .. offsets[c+1]) */
  itemsByCat: MultiIdColumn;
  popularity: AliasSampler;
  categoryPopularity: AliasSampler;
}

export interface UserLatents {
  table: EntityTableColumns;
  /** 3 favourite categories per user (u*3+k), with affinity weights FAV_WEIGHTS */
  fav: Int32Array;
  device: Int32Array;
  sampler: AliasSampler;
}

export const FAV_WEIGHTS = [1, 0.6, 0.3];

function zipfWeights(n: number, s: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = 1 / Math.pow(i + 1, s);
  return w;
}

function weighted(rng: Prng, weights: readonly number[]): number {
  let u = rng.next();
  for (let i = 0; i < weights.length - 1; i++) {
    u -= weights[i];
    if (u < 0) return i;
  }
  return weights.length - 1;
}

export function generateItems(rng: Prng, nItems: number): ItemLatents {
  const categoryPopularity = new AliasSampler(zipfWeights(N_CATEGORIES, 0.7));
  const brandSampler = new AliasSampler(zipfWeights(N_BRANDS, 1.0));
  const category = new Int32Array(nItems);
  const pop = new Float64Array(nItems);
  const price = new Float64Array(nItems);
  const priceNoisy = new Float64Array(nItems);
  const quality = new Float64Array(nItems);
  const brand = new Int32Array(nItems);
  const ageDays = new Float64Array(nItems);
  const histCtr = new Float64Array(nItems);
  const sales = new Float64Array(nItems);
  const noiseNum = new Float64Array(nItems);
  const noiseCat = new Int32Array(nItems);
  const tags = new CsrBuilder(nItems);
  const catPriceShift = new Float64Array(N_CATEGORIES);
  for (let c = 0; c < N_CATEGORIES; c++) catPriceShift[c] = 0.5 * rng.normal();
  for (let i = 0; i < nItems; i++) {
    // every category gets at least one item
    category[i] = i < N_CATEGORIES ? i : categoryPopularity.sample(rng);
    pop[i] = Math.exp(rng.normal());
    price[i] = Math.round(100 * Math.exp(Math.log(40) + catPriceShift[category[i]] + 0.8 * rng.normal())) / 100;
    priceNoisy[i] = Math.round(100 * price[i] * Math.exp(0.25 * rng.normal())) / 100;
    quality[i] = Math.round(10 * Math.min(5, Math.max(0, 3 + 0.8 * rng.normal()))) / 10;
    brand[i] = brandSampler.sample(rng);
    ageDays[i] = rng.int(365);
    // latent appeal observed through the item's historical CTR; 6% are new items with no history
    const appeal = rng.normal();
    histCtr[i] = rng.next() < 0.06 ? NaN : Math.round(1e5 / (1 + Math.exp(2.5 - appeal))) / 1e5;
    sales[i] = Math.round(Math.exp(2 + 1.2 * rng.normal()));
    // coarse (half-unit steps): a continuous value per item would identify the item
    noiseNum[i] = Math.round(2 * rng.normal()) / 2 || 0; // no -0: Parquet keeps +0
    noiseCat[i] = rng.int(N_ITEM_NOISE_CATS);
    const nTags = 1 + rng.int(5);
    for (let k = 0; k < nTags; k++) {
      const t = rng.int(N_ITEM_TAGS);
      if (!tags.hasInOpenRow(t)) tags.push(t);
    }
    tags.endRow();
  }
  const byCat = new CsrBuilder(N_CATEGORIES);
  const counts = new Int32Array(N_CATEGORIES + 1);
  for (let i = 0; i < nItems; i++) counts[category[i] + 1]++;
  for (let c = 0; c < N_CATEGORIES; c++) counts[c + 1] += counts[c];
  const fill = counts.slice();
  const sortedItems = new Int32Array(nItems);
  for (let i = 0; i < nItems; i++) sortedItems[fill[category[i]]++] = i;
  for (let c = 0; c < N_CATEGORIES; c++) {
    for (let k = counts[c]; k < counts[c + 1]; k++) byCat.push(sortedItems[k]);
    byCat.endRow();
  }
  const keys = new Int32Array(nItems);
  for (let i = 0; i < nItems; i++) keys[i] = i;
  return {
    category,
    itemsByCat: byCat.build('items_by_category', nItems),
    popularity: new AliasSampler(pop),
    categoryPopularity,
    table: {
      name: 'items',
      key: 'item_id',
      rows: nItems,
      keys,
      numeric: [
        { name: 'i_price', values: price },
        { name: 'i_price_noisy', values: priceNoisy },
        { name: 'i_quality', values: quality },
        { name: 'i_age_days', values: ageDays },
        { name: 'i_hist_ctr', values: histCtr },
        { name: 'i_sales_30d', values: sales },
        { name: 'i_noise_num', values: noiseNum },
      ],
      categorical: [
        { name: 'i_category', ids: category, vocab: N_CATEGORIES },
        { name: 'i_brand', ids: brand, vocab: N_BRANDS },
        { name: 'i_noise_cat', ids: noiseCat, vocab: N_ITEM_NOISE_CATS },
      ],
      multiId: [tags.build('i_tags', N_ITEM_TAGS)],
    },
  };
}

/** Users with one row per (day, user) snapshot: row d*U + u holds the state as of 00:00 of day d. */
export function generateUsers(rng: Prng, nUsers: number, items: ItemLatents): UserLatents {
  const citySampler = new AliasSampler(zipfWeights(N_CITIES, 0.9));
  const activity = new Float64Array(nUsers);
  const fav = new Int32Array(nUsers * 3);
  const device = new Int32Array(nUsers);
  const age = new Float64Array(nUsers);
  const ageNoisy = new Float64Array(nUsers);
  const gender = new Int32Array(nUsers);
  const city = new Int32Array(nUsers);
  const tier = new Int32Array(nUsers);
  const member = new Int32Array(nUsers);
  const devicePrice = new Float64Array(nUsers);
  const tenure0 = new Float64Array(nUsers);
  for (let u = 0; u < nUsers; u++) {
    activity[u] = Math.exp(0.8 * rng.normal());
    for (let k = 0; k < 3; k++) {
      let c = items.categoryPopularity.sample(rng);
      // favourites are distinct (a few redraws; a rare repeat is harmless)
      for (let tries = 0; tries < 8 && ((k > 0 && fav[u * 3] === c) || (k > 1 && fav[u * 3 + 1] === c)); tries++) {
        c = items.categoryPopularity.sample(rng);
      }
      fav[u * 3 + k] = c;
    }
    device[u] = weighted(rng, [0.5, 0.4, 0.1]);
    const a = rng.next() < 0.04 ? NaN : Math.floor(18 + 25 * (rng.next() + rng.next()));
    age[u] = a;
    ageNoisy[u] = Number.isNaN(a) ? NaN : Math.max(16, Math.round(a + 5 * rng.normal()));
    gender[u] = rng.next() < 0.02 ? -1 : weighted(rng, [0.48, 0.48, 0.04]);
    city[u] = citySampler.sample(rng);
    tier[u] = rng.int(5);
    member[u] = weighted(rng, [0.6, 0.25, 0.1, 0.05]);
    devicePrice[u] = Math.round(Math.exp(Math.log(2000) + 0.6 * rng.normal()));
    tenure0[u] = rng.int(1500);
  }
  // Pure noise is drawn afresh for every daily snapshot from its own stream: a value that stayed
  // with the user would identify them, and identity carries signal (the latent affinity, features a
  // line's model lacks), which would make "noise" useful to a model after all.
  const noiseRng = rng.fork(0x6e6f6973);

  const rows = nUsers * DAYS;
  const keys = new Int32Array(rows);
  const snapshotTs = new Float64Array(rows);
  const rep = (src: Float64Array): Float64Array => {
    const out = new Float64Array(rows);
    for (let d = 0; d < DAYS; d++) out.set(src, d * nUsers);
    return out;
  };
  const repI = (src: Int32Array): Int32Array => {
    const out = new Int32Array(rows);
    for (let d = 0; d < DAYS; d++) out.set(src, d * nUsers);
    return out;
  };
  const tenure = new Float64Array(rows);
  const act7 = new Float64Array(rows);
  const act7Noisy = new Float64Array(rows);
  const recentCats = new CsrBuilder(rows);
  const recentItems = new CsrBuilder(rows);
  const noiseTags = new CsrBuilder(rows);
  const noiseNum = new Float64Array(rows);
  const noiseCat = new Int32Array(rows);
  const catItems = items.itemsByCat;
  for (let d = 0; d < DAYS; d++) {
    for (let u = 0; u < nUsers; u++) {
      const s = d * nUsers + u;
      keys[s] = u;
      snapshotTs[s] = d * DAY_SECONDS;
      tenure[s] = tenure0[u] + d;
      const a7 = rng.poisson(7 * activity[u] * Math.exp(0.2 * rng.normal()));
      act7[s] = a7;
      act7Noisy[s] = Math.round(a7 * Math.exp(0.3 * rng.normal()));
      // recently clicked categories: mostly the user's favourites, sometimes anything popular
      const nCats = Math.min(8, rng.poisson(0.5 + 1.5 * activity[u]));
      for (let k = 0; k < nCats; k++) {
        const c = rng.next() < 0.75 ? fav[u * 3 + weighted(rng, [0.55, 0.3, 0.15])] : items.categoryPopularity.sample(rng);
        if (!recentCats.hasInOpenRow(c)) recentCats.push(c);
      }
      recentCats.endRow();
      const nItems = Math.min(10, rng.poisson(1.2 * activity[u]));
      for (let k = 0; k < nItems; k++) {
        const c = fav[u * 3 + weighted(rng, [0.55, 0.3, 0.15])];
        const lo = catItems.offsets[c];
        const it = catItems.ids[lo + rng.int(catItems.offsets[c + 1] - lo)];
        if (!recentItems.hasInOpenRow(it)) recentItems.push(it);
      }
      recentItems.endRow();
      noiseNum[s] = noiseRng.normal();
      noiseCat[s] = noiseRng.int(N_USER_NOISE_CATS);
      const nTags = noiseRng.int(6);
      for (let k = 0; k < nTags; k++) {
        const t = noiseRng.int(N_USER_TAGS);
        if (!noiseTags.hasInOpenRow(t)) noiseTags.push(t);
      }
      noiseTags.endRow();
    }
  }
  return {
    fav,
    device,
    sampler: new AliasSampler(activity),
    table: {
      name: 'users',
      key: 'user_id',
      rows,
      keys,
      snapshotTs,
      numeric: [
        { name: 'u_age', values: rep(age) },
        { name: 'u_age_noisy', values: rep(ageNoisy) },
        { name: 'u_device_price', values: rep(devicePrice) },
        { name: 'u_tenure_days', values: tenure },
        { name: 'u_activity_7d', values: act7 },
        { name: 'u_activity_7d_noisy', values: act7Noisy },
        { name: 'u_noise_num', values: noiseNum },
      ],
      categorical: [
        { name: 'u_gender', ids: repI(gender), vocab: 3 },
        { name: 'u_city', ids: repI(city), vocab: N_CITIES },
        { name: 'u_city_tier', ids: repI(tier), vocab: 5 },
        { name: 'u_member_level', ids: repI(member), vocab: 4 },
        { name: 'u_noise_cat', ids: noiseCat, vocab: N_USER_NOISE_CATS },
      ],
      multiId: [
        recentCats.build('u_recent_cats', N_CATEGORIES),
        recentItems.build('u_recent_items', items.table.rows),
        noiseTags.build('u_noise_tags', N_USER_TAGS),
      ],
    },
  };
}

/** context_id = ((hour * 6 + position-1) * 3 + device) * 4 + network */
export function contextId(hour: number, position0: number, device: number, network: number): number {
  return ((hour * N_POSITIONS + position0) * N_DEVICES + device) * N_NETWORKS + network;
}

export function generateContexts(rng: Prng): EntityTableColumns {
  const keys = new Int32Array(N_CONTEXTS);
  const hour = new Int32Array(N_CONTEXTS);
  const position = new Float64Array(N_CONTEXTS);
  const device = new Int32Array(N_CONTEXTS);
  const network = new Int32Array(N_CONTEXTS);
  const depth = new Float64Array(N_CONTEXTS);
  const noise = new Float64Array(N_CONTEXTS);
  for (let h = 0; h < N_HOURS; h++)
    for (let p = 0; p < N_POSITIONS; p++)
      for (let dv = 0; dv < N_DEVICES; dv++)
        for (let n = 0; n < N_NETWORKS; n++) {
          const id = contextId(h, p, dv, n);
          keys[id] = id;
          hour[id] = h;
          position[id] = p + 1;
          device[id] = dv;
          network[id] = n;
          depth[id] = 1 + rng.int(30);
          noise[id] = Math.round(2 * rng.normal()) / 2 || 0; // coarse: a continuous value would identify the context
        }
  return {
    name: 'contexts',
    key: 'context_id',
    rows: N_CONTEXTS,
    keys,
    numeric: [
      { name: 'c_position', values: position },
      { name: 'c_page_depth', values: depth },
      { name: 'c_noise_num', values: noise },
    ],
    categorical: [
      { name: 'c_hour', ids: hour, vocab: N_HOURS },
      { name: 'c_device', ids: device, vocab: N_DEVICES },
      { name: 'c_network', ids: network, vocab: N_NETWORKS },
    ],
    multiId: [],
  };
}
