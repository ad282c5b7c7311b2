import { tierAlias } from '@abacus/core';
import { SIGNAL_NAMES, WEEKDAYS, minutesOf, type Schedule, type ServingPolicy, type SignalName } from './serving.schemas';

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
  | { action: 'switch'; from: number; tier: number; direction: 'down' | 'up'; reason: string; cause: 'load' | 'schedule' };

const WEEK = 7 * 1440;
const SHORT_DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** The local weekday (0 = Monday), minute of the day and second of `now` in time zone `tz`. */
export function localTime(now: number, tz: string): { day: number; minute: number; second: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(now));
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '0';
  return {
    day: SHORT_DAYS.indexOf(get('weekday')),
    minute: Number(get('hour')) * 60 + Number(get('minute')),
    second: Number(get('second')),
  };
}

export interface ActiveWindow {
  index: number;
  tier: number;
  /** when this occurrence of the window opened (ms since the epoch; local minutes, so an hour off across a DST change) */
  startedAt: number;
  /** e.g. "22:00–06:00 Europe/Berlin" */
  label: string;
}

/** The schedule's window `now` falls in, with when it opened; null outside every window. */
export function activeWindow(schedule: Schedule | undefined, now: number): ActiveWindow | null {
  if (!schedule) return null;
  const { day, minute, second } = localTime(now, schedule.timeZone);
  const t = day * 1440 + minute;
  for (const [index, w] of schedule.windows.entries()) {
    const from = minutesOf(w.from);
    const len = (minutesOf(w.to) - from + 1440) % 1440;
    for (const d of w.days) {
      const elapsed = (t - (WEEKDAYS.indexOf(d) * 1440 + from) + WEEK) % WEEK;
      if (elapsed < len) {
        return {
          index,
          tier: w.tier,
          startedAt: now - (elapsed * 60 + second) * 1000 - (now % 1000),
          label: `${w.from}–${w.to} ${schedule.timeZone}`,
        };
      }
    }
  }
  return null;
}

/**
 * The policy engine: pure, so it is tested by tables. From the current state, one report of signals
 * (possibly none: a scheduled evaluation) and its time, it decides whether to switch tier or hold.
 *
 * - a pin wins: the tier is the pinned one, nothing automatic happens;
 * - step down one registered tier when any reported signal is above its `stepDownAbove`, inside a
 *   schedule window too (load wins);
 * - a schedule window that opened after the last switch moves to the window's tier (up or down);
 * - outside every window the best tier is the full model's (the best registered tier ≥ 0): a better
 *   one (the large tier, -1) left over from a window steps down to it;
 * - step up one registered tier when every signal with a `stepUpBelow` is reported and below it,
 *   never past the best tier of the moment (the window's, else the full model's);
 * - otherwise hold (inside the band: no flapping);
 * - never within `cooldownSeconds` of the last switch nor before `minDwellSeconds` in the tier;
 * - never below `lowestTier` (the cheapest allowed) by load.
 */
export function decideTier(
  policy: ServingPolicy,
  tiers: readonly number[],
  state: TierState,
  signals: Signals,
  now: number,
): Decision {
  if (state.pinnedTier !== null)
    return { action: 'hold', tier: state.pinnedTier, reason: `pinned to ${tierAlias(state.pinnedTier)}` };
  const sorted = [...new Set(tiers)].sort((a, b) => a - b);
  const lowest = policy.lowestTier ?? sorted[sorted.length - 1];
  const window = activeWindow(policy.schedule, now);
  const fullBest = sorted.find((t) => t >= 0) ?? sorted[0];
  const best = window ? window.tier : fullBest;
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

  /** a switch, unless the cooldown or the dwell holds it */
  const gated = (target: number, why: string, cause: 'load' | 'schedule'): Decision => {
    if (state.lastSwitchAt !== null && now - state.lastSwitchAt < policy.cooldownSeconds * 1000) {
      return { action: 'hold', tier: state.tier, reason: `${why}, but within the cooldown of ${policy.cooldownSeconds} s` };
    }
    if (now - state.enteredAt < policy.minDwellSeconds * 1000) {
      return {
        action: 'hold',
        tier: state.tier,
        reason: `${why}, but ${tierAlias(state.tier)} has not dwelt ${policy.minDwellSeconds} s yet`,
      };
    }
    const direction = target > state.tier ? 'down' : 'up';
    return {
      action: 'switch',
      from: state.tier,
      tier: target,
      direction,
      cause,
      reason: cause === 'load' ? `step ${direction}: ${why}` : `schedule: ${why}`,
    };
  };

  if (above.length) {
    const why = above.join(', ');
    const target = sorted.find((t) => t > state.tier);
    if (target === undefined || target > lowest)
      return { action: 'hold', tier: state.tier, reason: `${why}, but ${tierAlias(state.tier)} is the lowest allowed` };
    return gated(target, why, 'load');
  }
  if (window && state.tier !== window.tier && (state.lastSwitchAt === null || state.lastSwitchAt < window.startedAt)) {
    return gated(window.tier, `window ${window.label} prefers ${tierAlias(window.tier)}`, 'schedule');
  }
  if (state.tier < best) {
    return gated(
      best,
      window
        ? `window ${window.label} allows ${tierAlias(best)} at best`
        : `outside every window: ${tierAlias(fullBest)} at best (${tierAlias(state.tier)} only in its window)`,
      'schedule',
    );
  }
  if (allBelow) {
    const why = upConfigured.map((s) => `${s} ${signals[s]} < ${policy.signals[s]!.stepUpBelow}`).join(', ');
    const target = [...sorted].reverse().find((t) => t < state.tier);
    if (target === undefined)
      return { action: 'hold', tier: state.tier, reason: `${why}, but ${tierAlias(state.tier)} is the best registered` };
    if (target < best)
      return {
        action: 'hold',
        tier: state.tier,
        reason: `${why}, but ${tierAlias(state.tier)} is the best ${window ? `window ${window.label} allows` : 'outside every window'}`,
      };
    return gated(target, why, 'load');
  }
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
