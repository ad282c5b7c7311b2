/** WOE convention used everywhere (optbinning's): positive WOE = fewer events than average. */
export const WOE_CONVENTION = 'woe_i = ln(dist_nonevent_i / dist_event_i); iv = sum_i (dist_nonevent_i - dist_event_i) * woe_i';

export interface WoeResult {
  woe: Float64Array;
  /** per-bin IV terms (each >= 0) */
  ivTerms: Float64Array;
  iv: number;
  /** additive constant actually used (0 when no bin had a zero count) */
  smoothing: number;
}

/**
 * WOE and IV of bins given their event and non-event counts (may be fractional).
 * Bins with no rows at all are ignored (woe 0, iv 0). When a non-empty bin has zero events or zero
 * non-events, `a` = smoothing is added to every non-empty bin's counts:
 *   dist_event_i = (E_i + a) / (E + a*k),  dist_nonevent_i = (NE_i + a) / (NE + a*k),  k = number of non-empty bins.
 */
export function computeWoe(events: ArrayLike<number>, nonEvents: ArrayLike<number>, smoothing: number): WoeResult {
  const n = events.length;
  let k = 0;
  let totalE = 0;
  let totalNE = 0;
  let zero = false;
  for (let i = 0; i < n; i++) {
    if (events[i] + nonEvents[i] <= 0) continue;
    k++;
    totalE += events[i];
    totalNE += nonEvents[i];
    if (events[i] <= 0 || nonEvents[i] <= 0) zero = true;
  }
  const a = zero ? smoothing : 0;
  const woe = new Float64Array(n);
  const ivTerms = new Float64Array(n);
  let iv = 0;
  const denE = totalE + a * k;
  const denNE = totalNE + a * k;
  for (let i = 0; i < n; i++) {
    if (events[i] + nonEvents[i] <= 0) continue;
    const de = (events[i] + a) / denE;
    const dn = (nonEvents[i] + a) / denNE;
    if (de <= 0 || dn <= 0) continue; // only when smoothing = 0 and a bin is pure: it contributes nothing rather than infinity
    woe[i] = Math.log(dn / de);
    ivTerms[i] = (dn - de) * woe[i];
    iv += ivTerms[i];
  }
  return { woe, ivTerms, iv, smoothing: a };
}
