import { SIGNAL_NAMES, type ServingPolicy, type SignalName } from './serving.schemas';

export type Signals = Partial<Record<SignalName, number>>;

/** What the engine needs to know about a served model right now. */
export interface TierState {
  /** the active tier (0 = the full model; higher = cheaper) */
  tier: number;
  /** when the active tier was entered (ms since the epoch) */
  enteredAt: number;
  /** the last switch of any kind (ms), null = never switched */
  lastSwitchAt: number | null;
  /** a manual pin overrides the policy */
  pinnedTier: number | null;
}

export type Decision =
  | { action: 'hold'; tier: number; reason: string }
  | { action: 'switch'; from: number; tier: number; direction: 'down' | 'up'; reason: string };

/**
 * The policy engine: pure, so it is tested by tables. From the current state, one report of signals
 * and its time, it decides whether to step one tier down (cheaper), one tier up (better) or hold.
 *
 * - a pin wins: the tier is the pinned one, nothing automatic happens;
 * - step down when any reported signal is above its `stepDownAbove`;
 * - step up when every signal with a `stepUpBelow` is reported and below it;
 * - otherwise hold (inside the band: no flapping);
 * - never within `cooldownSeconds` of the last switch nor before `minDwellSeconds` in the tier;
 * - never below `lowestTier` (the cheapest allowed) nor above the best registered tier.
 *
 * `tiers` are the served model's registered tiers; a step goes to the neighbouring registered tier.
 */
export function decideTier(
  policy: ServingPolicy,
  tiers: readonly number[],
  state: TierState,
  signals: Signals,
  now: number,
): Decision {
  if (state.pinnedTier !== null) return { action: 'hold', tier: state.pinnedTier, reason: `pinned to tier ${state.pinnedTier}` };
  const sorted = [...new Set(tiers)].sort((a, b) => a - b);
  const lowest = policy.lowestTier ?? sorted[sorted.length - 1];
  const above: string[] = [];
  for (const s of SIGNAL_NAMES) {
    const limit = policy.signals[s]?.stepDownAbove;
    const v = signals[s];
    if (limit !== undefined && v !== undefined && v > limit) above.push(`${s} ${v} > ${limit}`);
  }
  const upConfigured = SIGNAL_NAMES.filter((s) => policy.signals[s]?.stepUpBelow !== undefined);
  const allBelow =
    upConfigured.length > 0 &&
    upConfigured.every((s) => signals[s] !== undefined && signals[s] < policy.signals[s]!.stepUpBelow!);

  let direction: 'down' | 'up';
  let target: number | undefined;
  let why: string;
  if (above.length) {
    direction = 'down';
    target = sorted.find((t) => t > state.tier);
    why = above.join(', ');
    if (target === undefined || target > lowest)
      return { action: 'hold', tier: state.tier, reason: `${why}, but tier ${state.tier} is the lowest allowed` };
  } else if (allBelow) {
    direction = 'up';
    target = [...sorted].reverse().find((t) => t < state.tier);
    why = upConfigured.map((s) => `${s} ${signals[s]} < ${policy.signals[s]!.stepUpBelow}`).join(', ');
    if (target === undefined)
      return { action: 'hold', tier: state.tier, reason: `${why}, but tier ${state.tier} is the best registered` };
  } else {
    // say what keeps it from stepping up: signals at or above their stepUpBelow, or not reported
    const high = upConfigured
      .filter((s) => signals[s] !== undefined && signals[s] >= policy.signals[s]!.stepUpBelow!)
      .map((s) => `${s} ${signals[s]} ≥ ${policy.signals[s]!.stepUpBelow}`);
    const missing = upConfigured.filter((s) => signals[s] === undefined);
    const parts = [
      ...(high.length ? [high.join(', ')] : []),
      ...(missing.length ? [`${missing.join(', ')} not reported (stepping up needs every signal with a stepUpBelow)`] : []),
    ];
    return { action: 'hold', tier: state.tier, reason: `inside the band${parts.length ? `: ${parts.join('; ')}` : ''}` };
  }
  if (state.lastSwitchAt !== null && now - state.lastSwitchAt < policy.cooldownSeconds * 1000) {
    return { action: 'hold', tier: state.tier, reason: `${why}, but within the cooldown of ${policy.cooldownSeconds} s` };
  }
  if (now - state.enteredAt < policy.minDwellSeconds * 1000) {
    return {
      action: 'hold',
      tier: state.tier,
      reason: `${why}, but tier ${state.tier} has not dwelt ${policy.minDwellSeconds} s yet`,
    };
  }
  return { action: 'switch', from: state.tier, tier: target, direction, reason: `step ${direction}: ${why}` };
}
