/*
 * Pure (no other import): the web app imports it through @abacus/workflows/browser.
 */

/** The tier number of the large tier: above the full model (tier 0), for off-peak traffic. */
export const LARGE_TIER = -1;

/** A model tier's alias: `tier-large` for the large tier, else `tier-<n>` (0 = the full model). */
export const tierAlias = (tier: number): string => (tier === LARGE_TIER ? 'tier-large' : `tier-${tier}`);

/** The tier an alias names (`tier-large` → -1, `tier-3` → 3); null when it names none. */
export function tierFromAlias(alias: string): number | null {
  if (alias === 'tier-large') return LARGE_TIER;
  const m = /^tier-(\d{1,3})$/.exec(alias);
  return m ? Number(m[1]) : null;
}
