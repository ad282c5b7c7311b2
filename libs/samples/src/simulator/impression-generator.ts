import { AliasSampler } from './alias-sampler';
import { contextId, type ItemLatents, type UserLatents } from './entity-generator';
import type { Prng } from './prng';
import type { ImpressionTable } from './sim-world.types';
import { DAY_SECONDS, DAYS, DOMAINS, N_DEVICES, N_HOURS, type DomainSpec } from './world-constants';

export interface GeneratedImpressions {
  table: ImpressionTable;
  /** row of the users table (daily snapshot) valid at each impression: day * U + user */
  userRow: Int32Array;
}

/** `domains`: the lines the rows are spread over (by share); domainIndex indexes this list */
export function generateImpressions(
  rng: Prng,
  rows: number,
  users: UserLatents,
  items: ItemLatents,
  domains: readonly DomainSpec[] = DOMAINS,
): GeneratedImpressions {
  const nUsers = users.device.length;
  // time first, then sort: all other attributes are drawn i.i.d. per row, so drawing them after the sort is equivalent
  const dayWeights = Array.from({ length: DAYS }, (_, d) => 1 + 0.03 * d);
  const hourWeights = Array.from(
    { length: N_HOURS },
    (_, h) => 0.15 + Math.pow(Math.sin((Math.PI * Math.max(0, h - 5)) / 19), 2),
  );
  const daySampler = new AliasSampler(dayWeights);
  const hourSampler = new AliasSampler(hourWeights);
  const ts = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    ts[r] = daySampler.sample(rng) * DAY_SECONDS + hourSampler.sample(rng) * 3600 + rng.int(3600);
  }
  ts.sort();

  const domainSampler = new AliasSampler(domains.map((d) => d.share));
  const positionSamplers = domains.map((d) => new AliasSampler(d.positionWeights));
  const networkSampler = new AliasSampler([0.6, 0.3, 0.08, 0.02]);
  const impressionId = new Int32Array(rows);
  const domainIndex = new Uint8Array(rows);
  const userId = new Int32Array(rows);
  const itemId = new Int32Array(rows);
  const ctxId = new Int32Array(rows);
  const userRow = new Int32Array(rows);
  const byCat = items.itemsByCat;
  for (let r = 0; r < rows; r++) {
    impressionId[r] = r;
    const d = domainSampler.sample(rng);
    domainIndex[r] = d;
    const u = users.sampler.sample(rng);
    userId[r] = u;
    userRow[r] = Math.floor(ts[r] / DAY_SECONDS) * nUsers + u;
    // half the traffic is personalised (a favourite category), half follows global popularity
    let it: number;
    if (rng.next() < 0.5) {
      const c = users.fav[u * 3 + rng.int(3)];
      const lo = byCat.offsets[c];
      it = byCat.ids[lo + rng.int(byCat.offsets[c + 1] - lo)];
    } else {
      it = items.popularity.sample(rng);
    }
    itemId[r] = it;
    const hour = Math.floor((ts[r] % DAY_SECONDS) / 3600);
    const device = rng.next() < 0.9 ? users.device[u] : rng.int(N_DEVICES);
    ctxId[r] = contextId(hour, positionSamplers[d].sample(rng), device, networkSampler.sample(rng));
  }
  return {
    userRow,
    table: {
      rows,
      impressionId,
      ts,
      domainIndex,
      domains: domains.map((d) => d.name),
      userId,
      itemId,
      contextId: ctxId,
      click: new Uint8Array(rows),
    },
  };
}
