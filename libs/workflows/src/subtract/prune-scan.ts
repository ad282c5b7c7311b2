import type { FoldEstimate } from '../stats/fold-interval';

/** What the pruning order asks of the trained model and of retraining; see pruneScan. */
export interface PruneScanOps {
  /** the permutation estimate of removing `set` (whole group permuted on the trained model); accepted within maxDrop */
  permutation(set: string[], added: string[]): Promise<{ ok: boolean; estimate: FoldEstimate }>;
  /** a retraining check of `set`: accepted when the retrained drop is within maxDrop */
  retrain(set: string[], added: string[]): Promise<boolean>;
  /** numeric pairs of `names` correlated on the training rows, strongest first */
  correlations(names: string[]): Promise<{ a: string; b: string; r: number }[]>;
  progress(message: string): Promise<void>;
}

export interface PruneScanSettings {
  /** the model's inputs, in the model's order */
  names: string[];
  /** the ranking, least important first */
  order: string[];
  batchSize: number;
  retrainScanBelow: number;
  redundancyThreshold: number;
  /** whether retraining checks run at all (seeds > 0) */
  useRetrain: boolean;
}

/**
 * The pruning rounds as one decision procedure over two kinds of check (see PruneTrialHandler):
 * rounds of `batchSize` features while accepted; the first rejected batch one feature at a time;
 * the rest of the ranking one feature at a time (retrained only where the estimate's interval does
 * not lie wholly above retrainScanBelow); the accepted set retrained as a whole (backing off to its
 * largest prefix within the limit); the weaker of each strongly correlated numeric pair on top.
 *
 * Its course depends only on the permutation estimates (deterministic for a set) and on the
 * retraining checks' verdicts, so it can be replayed with hypothetical verdicts to learn which
 * retraining check comes next (nextRetrainChecks).
 */
export async function pruneScan(
  s: PruneScanSettings,
  ops: PruneScanOps,
): Promise<{ accepted: string[]; redundant: { feature: string; partner: string; r: number }[] }> {
  const n = s.names.length;
  /** accepted if the permutation estimate is within the limit, else if retraining shows it is */
  const verify = async (set: string[], added: string[]): Promise<boolean> => {
    await ops.progress(`verifying the removal of ${set.length} feature(s)`);
    if ((await ops.permutation(set, added)).ok) return true;
    // permuting a feature the model learned to lean on overstates its loss when others can stand in
    return s.useRetrain && (await ops.retrain(set, added));
  };

  let accepted: string[] = [];
  let failedBatch: string[] = [];
  let rest: string[] = [];
  for (let start = 0; start + s.batchSize < n; start += s.batchSize) {
    const batch = s.order.slice(start, start + s.batchSize);
    if (!(await verify([...accepted, ...batch], batch))) {
      failedBatch = batch;
      rest = s.order.slice(start + s.batchSize);
      break;
    }
    accepted = [...accepted, ...batch];
  }
  // back off: the rejected batch, one feature at a time (never all but one feature)
  for (const f of failedBatch) {
    if (accepted.length + 1 >= n) break;
    if (await verify([...accepted, f], [f])) accepted = [...accepted, f];
  }
  // the rest of the ranking, one feature at a time: a noise feature that the ranking put above a
  // useful one is still reached (a model that memorised a high-cardinality noise column gives it IV
  // and shuffle importance, and permuting it can cost several times maxDrop). Only a feature whose
  // permutation interval lies wholly above retrainScanBelow is kept without retraining.
  for (const f of rest) {
    if (accepted.length + 1 >= n) break;
    await ops.progress(`verifying the removal of ${accepted.length + 1} feature(s)`);
    const set = [...accepted, f];
    const v = await ops.permutation(set, [f]);
    let ok = v.ok;
    if (!ok && s.useRetrain && v.estimate.ciLow < s.retrainScanBelow) ok = await ops.retrain(set, [f]);
    if (ok) accepted = set;
  }

  // redundancy: of two strongly correlated numeric features, the weaker is a candidate too
  const redundant: { feature: string; partner: string; r: number }[] = [];
  if (s.redundancyThreshold < 1) {
    const gone = new Set(accepted);
    for (const pair of await ops.correlations(s.names.filter((x) => !gone.has(x)))) {
      if (pair.r < s.redundancyThreshold) break;
      const [weak, strong] = s.order.indexOf(pair.a) < s.order.indexOf(pair.b) ? [pair.a, pair.b] : [pair.b, pair.a];
      if (gone.has(weak) || gone.has(strong)) continue;
      redundant.push({ feature: weak, partner: strong, r: pair.r });
      gone.add(weak);
    }
  }

  // the accepted set, retrained: every retrained set accepted so far is a prefix of it, so backing
  // off to its largest prefix within the limit keeps the reference (best model seen) consistent
  if (s.useRetrain && accepted.length && !(await ops.retrain(accepted, []))) {
    let lo = 0;
    let hi = accepted.length;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await ops.retrain(accepted.slice(0, mid), [])) lo = mid;
      else hi = mid;
    }
    accepted = accepted.slice(0, lo);
  }
  // then the redundancy candidates on top, verified like a round: all together, else one at a time
  const extra = redundant.map((r) => r.feature).slice(0, Math.max(0, n - 1 - accepted.length));
  if (extra.length && (await verify([...accepted, ...extra], extra))) accepted = [...accepted, ...extra];
  else if (extra.length > 1) {
    for (const f of extra) {
      if (await verify([...accepted, f], [f])) accepted = [...accepted, f];
    }
  }
  return { accepted, redundant };
}

class NextCheck {
  constructor(readonly set: string[]) {}
}

/**
 * The retraining checks the scan asks for next, `levels` verdicts ahead: given the verdicts of the
 * checks so far (`verdicts`, in order) and a check now asked for whose verdict is not known, the
 * check that follows if it is accepted and the one that follows if it is rejected (levels = 1), and
 * so on for each of those (levels = 2: up to 6 sets). The scan is replayed from the start with the
 * verdicts scripted (its permutation estimates come from `estimate`, which should be cached: a set
 * is estimated once, replayed or not); nothing is recorded. Sets in the order found, without repeats.
 */
export async function nextRetrainChecks(
  s: PruneScanSettings,
  estimate: (set: string[]) => Promise<FoldEstimate>,
  correlations: PruneScanOps['correlations'],
  maxDrop: number,
  verdicts: boolean[],
  levels: number,
): Promise<string[][]> {
  const replay = async (script: boolean[]): Promise<string[] | null> => {
    let i = 0;
    try {
      await pruneScan(s, {
        permutation: async (set) => {
          const e = await estimate(set);
          return { ok: e.mean <= maxDrop, estimate: e };
        },
        retrain: async (set) => {
          if (i < script.length) return script[i++];
          throw new NextCheck(set);
        },
        correlations,
        progress: async () => undefined,
      });
      return null;
    } catch (e) {
      if (e instanceof NextCheck) return e.set;
      throw e;
    }
  };
  const found = new Map<string, string[]>();
  let frontier: boolean[][] = [[]];
  for (let level = 0; level < levels; level++) {
    const next: boolean[][] = [];
    for (const path of frontier) {
      for (const verdict of [true, false]) {
        const script = [...path, verdict];
        const set = await replay([...verdicts, ...script]);
        if (!set) continue;
        found.set([...set].sort().join('|'), set);
        next.push(script);
      }
    }
    frontier = next;
  }
  return [...found.values()];
}
