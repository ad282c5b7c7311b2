import type { EntityTable, FeatureKind, FeatureRole } from './world.types';

export const DOMAIN_NAMES = ['feed', 'search', 'mall'] as const;
const ALL = [...DOMAIN_NAMES];

/** Static description of one simulated feature; the simulator plants `effect` (std of its logit contribution). */
export interface FeatureSpec {
  name: string;
  table: EntityTable;
  kind: FeatureKind;
  role: FeatureRole;
  /** nominal planted effect (std of the contribution before the per-line multiplier); 0 = none */
  effect: number;
  copyOf?: string;
  /** true when the value changes between daily user snapshots */
  daily?: boolean;
  inConfigOf: string[];
}

/**
 * The world's 32 features. Add-candidates (in one line's config only, but genuinely useful to all):
 * u_member_level (mall), i_hist_ctr (search), u_recent_items (feed).
 */
export const FEATURE_CATALOG: readonly FeatureSpec[] = [
  // users (daily snapshots)
  { name: 'u_age', table: 'user', kind: 'numeric', role: 'strong', effect: 0.45, inConfigOf: ALL },
  { name: 'u_age_noisy', table: 'user', kind: 'numeric', role: 'redundant', effect: 0, copyOf: 'u_age', inConfigOf: ALL },
  { name: 'u_gender', table: 'user', kind: 'categorical', role: 'weak', effect: 0.1, inConfigOf: ALL },
  { name: 'u_city', table: 'user', kind: 'categorical', role: 'strong', effect: 0.4, inConfigOf: ALL },
  { name: 'u_city_tier', table: 'user', kind: 'categorical', role: 'weak', effect: 0.12, inConfigOf: ALL },
  { name: 'u_member_level', table: 'user', kind: 'categorical', role: 'strong', effect: 0.35, inConfigOf: ['mall'] },
  { name: 'u_device_price', table: 'user', kind: 'numeric', role: 'weak', effect: 0.12, inConfigOf: ALL },
  { name: 'u_tenure_days', table: 'user', kind: 'numeric', role: 'weak', effect: 0.1, daily: true, inConfigOf: ALL },
  { name: 'u_activity_7d', table: 'user', kind: 'numeric', role: 'strong', effect: 0.45, daily: true, inConfigOf: ALL },
  {
    name: 'u_activity_7d_noisy',
    table: 'user',
    kind: 'numeric',
    role: 'redundant',
    effect: 0,
    copyOf: 'u_activity_7d',
    daily: true,
    inConfigOf: ALL,
  },
  { name: 'u_recent_cats', table: 'user', kind: 'multi_id', role: 'strong', effect: 0.5, daily: true, inConfigOf: ALL },
  { name: 'u_recent_items', table: 'user', kind: 'multi_id', role: 'weak', effect: 0.15, daily: true, inConfigOf: ['feed'] },
  { name: 'u_noise_num', table: 'user', kind: 'numeric', role: 'noise', effect: 0, inConfigOf: ALL },
  { name: 'u_noise_cat', table: 'user', kind: 'categorical', role: 'noise', effect: 0, inConfigOf: ALL },
  { name: 'u_noise_tags', table: 'user', kind: 'multi_id', role: 'noise', effect: 0, inConfigOf: ALL },
  // items (static)
  { name: 'i_category', table: 'item', kind: 'categorical', role: 'strong', effect: 0.45, inConfigOf: ALL },
  { name: 'i_price', table: 'item', kind: 'numeric', role: 'strong', effect: 0.4, inConfigOf: ALL },
  { name: 'i_price_noisy', table: 'item', kind: 'numeric', role: 'redundant', effect: 0, copyOf: 'i_price', inConfigOf: ALL },
  { name: 'i_quality', table: 'item', kind: 'numeric', role: 'strong', effect: 0.45, inConfigOf: ALL },
  { name: 'i_brand', table: 'item', kind: 'categorical', role: 'weak', effect: 0.15, inConfigOf: ALL },
  { name: 'i_age_days', table: 'item', kind: 'numeric', role: 'weak', effect: 0.12, inConfigOf: ALL },
  { name: 'i_tags', table: 'item', kind: 'multi_id', role: 'weak', effect: 0.15, inConfigOf: ALL },
  { name: 'i_hist_ctr', table: 'item', kind: 'numeric', role: 'strong', effect: 0.5, inConfigOf: ['search'] },
  { name: 'i_sales_30d', table: 'item', kind: 'numeric', role: 'weak', effect: 0.1, inConfigOf: ['feed', 'mall'] },
  { name: 'i_noise_num', table: 'item', kind: 'numeric', role: 'noise', effect: 0, inConfigOf: ALL },
  { name: 'i_noise_cat', table: 'item', kind: 'categorical', role: 'noise', effect: 0, inConfigOf: ALL },
  // contexts (static)
  { name: 'c_hour', table: 'context', kind: 'categorical', role: 'weak', effect: 0.12, inConfigOf: ALL },
  { name: 'c_position', table: 'context', kind: 'numeric', role: 'strong', effect: 0.5, inConfigOf: ALL },
  { name: 'c_device', table: 'context', kind: 'categorical', role: 'weak', effect: 0.1, inConfigOf: ALL },
  { name: 'c_page_depth', table: 'context', kind: 'numeric', role: 'weak', effect: 0.12, inConfigOf: ALL },
  { name: 'c_network', table: 'context', kind: 'categorical', role: 'noise', effect: 0, inConfigOf: ALL },
  { name: 'c_noise_num', table: 'context', kind: 'numeric', role: 'noise', effect: 0, inConfigOf: ALL },
];
