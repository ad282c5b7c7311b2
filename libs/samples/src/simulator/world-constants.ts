/** Fixed shape of every simulated world (only `seed` and `rows` vary; `unrelatedLine` adds one line). */
export const DAY_SECONDS = 86_400;
export const DAYS = 14;
/** the last TEST_DAYS days are the test split */
export const TEST_DAYS = 3;
export const N_CATEGORIES = 40;
export const N_CITIES = 200;
export const N_BRANDS = 300;
export const N_ITEM_TAGS = 150;
export const N_USER_TAGS = 20;
export const N_USER_NOISE_CATS = 12;
export const N_ITEM_NOISE_CATS = 12;
export const N_HOURS = 24;
export const N_POSITIONS = 6;
export const N_DEVICES = 3;
export const N_NETWORKS = 4;
export const N_CONTEXTS = N_HOURS * N_POSITIONS * N_DEVICES * N_NETWORKS;

export interface DomainSpec {
  name: string;
  share: number;
  /** target click rate the domain bias is calibrated to */
  targetCtr: number;
  /** distribution of ad positions 1..6 in this line */
  positionWeights: number[];
}

export const DOMAINS: readonly DomainSpec[] = [
  { name: 'feed', share: 0.6, targetCtr: 0.08, positionWeights: [0.3, 0.25, 0.18, 0.12, 0.09, 0.06] },
  { name: 'search', share: 0.32, targetCtr: 0.12, positionWeights: [0.4, 0.25, 0.15, 0.1, 0.06, 0.04] },
  { name: 'mall', share: 0.08, targetCtr: 0.06, positionWeights: [0.25, 0.2, 0.2, 0.15, 0.1, 0.1] },
];

/**
 * The opt-in fourth line (`unrelatedLine: true`): the same users, items, contexts, columns and label
 * semantics (click), but every planted effect drawn independently of the other lines' (see
 * `plantUnrelatedClickModel`).
 * Its round(rows × share) impressions come on top of the `rows` of the three related lines, which stay
 * exactly as they are without it.
 */
export const UNRELATED_DOMAIN: DomainSpec = {
  name: 'ads',
  share: 0.3,
  targetCtr: 0.1,
  positionWeights: [0.35, 0.25, 0.15, 0.1, 0.08, 0.07],
};

/** entity counts scale with the impression count so ids repeat enough to be learnable */
export function worldSizes(rows: number): { users: number; items: number } {
  return {
    users: Math.min(100_000, Math.max(200, Math.round(rows / 20))),
    items: Math.min(40_000, Math.max(N_CATEGORIES * 3, Math.round(rows / 40))),
  };
}
