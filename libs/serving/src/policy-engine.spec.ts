import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { activeWindow, decideTier, type Signals, type TierState } from './policy-engine';
import { servingPolicySchema, registerServingSchema } from './serving.schemas';

const policy = servingPolicySchema.parse({
  signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 }, p99LatencyMs: { stepDownAbove: 200, stepUpBelow: 100 } },
  cooldownSeconds: 30,
  minDwellSeconds: 60,
});
const TIERS = [0, 1, 2];
const T0 = 1_000_000_000;
const s = (secs: number) => T0 + secs * 1000;
const settled = (tier: number, extra: Partial<TierState> = {}): TierState => ({
  tier,
  enteredAt: s(0),
  lastSwitchAt: s(0),
  pinnedTier: null,
  ...extra,
});

describe('decideTier: one step at a time', () => {
  const cases: { name: string; state: TierState; signals: Signals; at: number; want: string; pol?: typeof policy }[] = [
    {
      name: 'a signal above stepDownAbove steps down',
      state: settled(0),
      signals: { cpu: 0.9, p99LatencyMs: 50 },
      at: s(100),
      want: 'switch 1 down',
    },
    {
      name: 'any signal is enough to step down',
      state: settled(1),
      signals: { cpu: 0.1, p99LatencyMs: 250 },
      at: s(100),
      want: 'switch 2 down',
    },
    { name: 'equal to the threshold is not above it', state: settled(0), signals: { cpu: 0.8 }, at: s(100), want: 'hold 0' },
    { name: 'inside the band holds', state: settled(1), signals: { cpu: 0.6, p99LatencyMs: 150 }, at: s(100), want: 'hold 1' },
    {
      name: 'every configured signal below stepUpBelow steps up',
      state: settled(2),
      signals: { cpu: 0.2, p99LatencyMs: 50 },
      at: s(100),
      want: 'switch 1 up',
    },
    {
      name: 'one signal still in the band: hold',
      state: settled(2),
      signals: { cpu: 0.2, p99LatencyMs: 150 },
      at: s(100),
      want: 'hold 2',
    },
    {
      name: 'a configured signal not reported: no step up',
      state: settled(2),
      signals: { cpu: 0.2 },
      at: s(100),
      want: 'hold 2',
    },
    {
      name: 'cooldown blocks a switch',
      state: settled(0, { enteredAt: s(-1000), lastSwitchAt: s(90) }),
      signals: { cpu: 0.95 },
      at: s(100),
      want: 'hold 0',
    },
    {
      name: 'after the cooldown it switches',
      state: settled(0, { enteredAt: s(-1000), lastSwitchAt: s(60) }),
      signals: { cpu: 0.95 },
      at: s(100),
      want: 'switch 1 down',
    },
    {
      name: 'min dwell blocks a switch',
      state: settled(1, { enteredAt: s(50), lastSwitchAt: null }),
      signals: { cpu: 0.95 },
      at: s(100),
      want: 'hold 1',
    },
    {
      name: 'after the dwell it switches',
      state: settled(1, { enteredAt: s(40), lastSwitchAt: null }),
      signals: { cpu: 0.95 },
      at: s(100),
      want: 'switch 2 down',
    },
    { name: 'never below the last registered tier', state: settled(2), signals: { cpu: 0.99 }, at: s(100), want: 'hold 2' },
    {
      name: 'never below lowestTier',
      state: settled(1),
      signals: { cpu: 0.99 },
      at: s(100),
      want: 'hold 1',
      pol: { ...policy, lowestTier: 1 },
    },
    { name: 'never above tier 0', state: settled(0), signals: { cpu: 0.1, p99LatencyMs: 10 }, at: s(100), want: 'hold 0' },
    {
      name: 'a pin overrides the policy',
      state: settled(2, { pinnedTier: 2 }),
      signals: { cpu: 0.1, p99LatencyMs: 10 },
      at: s(100),
      want: 'hold 2',
    },
    {
      name: 'a pin holds under load too',
      state: settled(0, { pinnedTier: 0 }),
      signals: { cpu: 0.99 },
      at: s(100),
      want: 'hold 0',
    },
    {
      name: 'no stepUpBelow configured: never steps up',
      state: settled(2),
      signals: { cpu: 0 },
      at: s(100),
      want: 'hold 2',
      pol: servingPolicySchema.parse({ signals: { cpu: { stepDownAbove: 0.9 } } }),
    },
  ];
  it.each(cases)('$name', ({ state, signals, at, want, pol }) => {
    const d = decideTier(pol ?? policy, TIERS, state, signals, at);
    expect(d.action === 'switch' ? `switch ${d.tier} ${d.direction}` : `hold ${d.tier}`, d.reason).toBe(want);
  });

  it('steps to the neighbouring registered tier when tiers have gaps', () => {
    const d = decideTier(policy, [0, 2, 5], settled(2), { cpu: 0.9 }, s(100));
    expect(d).toMatchObject({ action: 'switch', tier: 5 });
    const up = decideTier(policy, [0, 2, 5], settled(2), { cpu: 0.1, p99LatencyMs: 1 }, s(100));
    expect(up).toMatchObject({ action: 'switch', tier: 0 });
  });
});

describe('decideTier: sequences', () => {
  /** runs reports through the engine, applying its switches like the service does */
  function run(reports: [number, Signals][], start = 0): string[] {
    let state: TierState = { tier: start, enteredAt: s(-10_000), lastSwitchAt: null, pinnedTier: null };
    const out: string[] = [];
    for (const [at, sig] of reports) {
      const d = decideTier(policy, TIERS, state, sig, s(at));
      if (d.action === 'switch') {
        state = { ...state, tier: d.tier, enteredAt: s(at), lastSwitchAt: s(at) };
        out.push(`${at}:${d.from}->${d.tier}`);
      }
    }
    return out;
  }

  it('oscillating inside the band never flaps', () => {
    const reports: [number, Signals][] = Array.from({ length: 50 }, (_, i) => [
      i * 100,
      { cpu: i % 2 ? 0.55 : 0.75, p99LatencyMs: 150 },
    ]);
    expect(run(reports, 1)).toEqual([]);
  });

  it('overload steps down one tier per dwell; recovery steps back up', () => {
    const hot: Signals = { cpu: 0.95, p99LatencyMs: 300 };
    const cool: Signals = { cpu: 0.2, p99LatencyMs: 40 };
    expect(
      run([
        [0, hot],
        [10, hot],
        [59, hot],
        [60, hot],
        [120, hot],
        [200, cool],
        [210, cool],
        [260, cool],
        [400, cool],
      ]),
    ).toEqual(['0:0->1', '60:1->2', '200:2->1', '260:1->0']);
  });
});

describe('policy and registration validation', () => {
  it('an overlapping band is refused, naming the field', () => {
    const r = servingPolicySchema.safeParse({ signals: { cpu: { stepDownAbove: 0.5, stepUpBelow: 0.5 } } });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0].path).toEqual(['signals', 'cpu', 'stepUpBelow']);
  });
  it('cpu and gpu utilisation are fractions', () => {
    expect(servingPolicySchema.safeParse({ signals: { gpu: { stepDownAbove: 80 } } }).success).toBe(false);
  });
  it('lowestTier must be a registered tier; webhookUrl must be http(s)', () => {
    const base = {
      model: 'm',
      businessLine: 'feed',
      tiers: [0, 1],
      webhookUrl: 'https://h.example.com/x',
      secret: 'x'.repeat(16),
    };
    expect(registerServingSchema.safeParse(base).success).toBe(true);
    const low = registerServingSchema.safeParse({ ...base, policy: { lowestTier: 3 } });
    expect(low.error!.issues[0].path).toEqual(['policy', 'lowestTier']);
    const ftp = registerServingSchema.safeParse({ ...base, webhookUrl: 'ftp://h.example.com/x' });
    expect(ftp.error!.issues[0].path).toEqual(['webhookUrl']);
  });
});

describe('hold reasons', () => {
  it('name what keeps a tier from stepping up: a signal in the band, or one not reported', () => {
    const pol = servingPolicySchema.parse({
      signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 }, gpu: { stepDownAbove: 0.9, stepUpBelow: 0.6 } },
    });
    const state = { tier: 1, enteredAt: 0, lastSwitchAt: null, pinnedTier: null };
    expect(decideTier(pol, [0, 1], state, { cpu: 0.3 }, 1e9).reason).toBe(
      'inside the band: gpu not reported (stepping up needs every signal with a stepUpBelow)',
    );
    expect(decideTier(pol, [0, 1], state, { cpu: 0.7, gpu: 0.2 }, 1e9).reason).toBe('inside the band: cpu 0.7 ≥ 0.5');
    expect(decideTier(pol, [0, 1], state, { cpu: 0.3, gpu: 0.2 }, 1e9)).toMatchObject({ action: 'switch', tier: 0 });
  });
});

describe('schedules: a tier preferred in time windows', () => {
  const night = servingPolicySchema.parse({
    signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 } },
    cooldownSeconds: 60,
    minDwellSeconds: 120,
    schedule: { timeZone: 'Europe/Berlin', windows: [{ tier: -1, from: '22:00', to: '06:00' }] },
  });
  const LARGE = [-1, 0, 1, 2];

  it('finds the window in the zone, across midnight, with when it opened', () => {
    // 2026-11-27 is a Friday; Berlin is UTC+1 in November
    const at = Date.parse('2026-11-27T00:30:00Z'); // 01:30 in Berlin
    const w = activeWindow(night.schedule, at)!;
    expect(w).toMatchObject({ index: 0, tier: -1, label: '22:00–06:00 Europe/Berlin' });
    expect(new Date(w.startedAt).toISOString()).toBe('2026-11-26T21:00:00.000Z');
    expect(activeWindow(night.schedule, Date.parse('2026-11-27T05:00:00Z'))).toBeNull(); // 06:00: closed
    expect(activeWindow(night.schedule, Date.parse('2026-11-27T04:59:59Z'))).not.toBeNull();
    const weekend = servingPolicySchema.parse({
      schedule: { timeZone: 'Asia/Shanghai', windows: [{ tier: -1, days: ['sat', 'sun'], from: '00:00', to: '08:00' }] },
    });
    expect(activeWindow(weekend.schedule, Date.parse('2026-11-27T12:00:00Z'))).toBeNull(); // Friday 20:00 in Shanghai
    expect(activeWindow(weekend.schedule, Date.parse('2026-11-27T20:00:00Z'))).not.toBeNull(); // Saturday 04:00
    expect(activeWindow(weekend.schedule, Date.parse('2026-11-29T20:00:00Z'))).toBeNull(); // Monday 04:00
  });

  it('replays a scripted day of signals into the expected switch log', () => {
    // every 5 minutes of 2026-11-27 (UTC): quiet nights, a load peak 08:00–10:00, a spike at 21:30
    const cpuAt = (hhmm: string) =>
      hhmm >= '08:00' && hhmm < '10:00' ? 0.9 : hhmm >= '10:00' && hhmm < '12:00' ? 0.6 : hhmm === '21:30' ? 0.9 : 0.3;
    let state: TierState = { tier: 0, enteredAt: Date.parse('2026-11-26T12:00:00Z'), lastSwitchAt: null, pinnedTier: null };
    const log: string[] = [];
    for (let m = 0; m < 24 * 60; m += 5) {
      const at = Date.parse('2026-11-27T00:00:00Z') + m * 60_000;
      const hhmm = new Date(at).toISOString().slice(11, 16);
      const d = decideTier(night, LARGE, state, { cpu: cpuAt(hhmm) }, at);
      if (d.action === 'switch') {
        log.push(`${hhmm} ${d.from} → ${d.tier} ${d.cause}`);
        state = { tier: d.tier, enteredAt: at, lastSwitchAt: at, pinnedTier: null };
      }
    }
    expect(log).toEqual([
      '00:00 0 → -1 schedule', // inside the window (it opened 21:00Z the day before) and never switched since
      '05:00 -1 → 0 schedule', // 06:00 in Berlin: the window closes
      '08:00 0 → 1 load',
      '08:05 1 → 2 load',
      '12:00 2 → 1 load',
      '12:05 1 → 0 load', // and no further: outside the window tier-0 is the best
      '21:00 0 → -1 schedule', // 22:00 in Berlin
      '21:30 -1 → 0 load', // load steps down inside the window too
      '21:35 0 → -1 load', // back up to the window's tier once the load is low (dwell and cooldown passed)
    ]);
  });

  it('cooldown and dwell hold a scheduled switch too, and a pin holds everything', () => {
    const open = Date.parse('2026-11-26T21:00:00Z');
    const justSwitched: TierState = { tier: 0, enteredAt: open - 30_000, lastSwitchAt: open - 30_000, pinnedTier: null };
    const d = decideTier(night, LARGE, justSwitched, {}, open + 10_000);
    expect(d).toMatchObject({ action: 'hold', reason: expect.stringContaining('within the cooldown') });
    const later = decideTier(night, LARGE, justSwitched, {}, open + 200_000);
    expect(later).toMatchObject({
      action: 'switch',
      tier: -1,
      cause: 'schedule',
      reason: 'schedule: window 22:00–06:00 Europe/Berlin prefers tier-large',
    });
    const pinned = decideTier(night, LARGE, { ...justSwitched, pinnedTier: 1 }, { cpu: 0.95 }, open + 200_000);
    expect(pinned).toMatchObject({ action: 'hold', tier: 1 });
    // a breach at the window's opening: load wins (a step down, not the window's tier)
    const busy = decideTier(night, LARGE, { ...justSwitched, lastSwitchAt: null }, { cpu: 0.95 }, open + 200_000);
    expect(busy).toMatchObject({ action: 'switch', tier: 1, cause: 'load' });
  });

  it('without a window the large tier is never entered by load, and left when found active', () => {
    const plain = servingPolicySchema.parse({
      signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 } },
      cooldownSeconds: 0,
      minDwellSeconds: 0,
    });
    expect(decideTier(plain, LARGE, settled(0), { cpu: 0.1 }, s(100))).toMatchObject({ action: 'hold', tier: 0 });
    expect(decideTier(plain, LARGE, settled(-1), { cpu: 0.1 }, s(100))).toMatchObject({
      action: 'switch',
      tier: 0,
      cause: 'schedule',
    });
  });

  it('400 material: overlapping windows, an unknown time zone, a window naming a tier not registered', () => {
    const reg = (schedule: unknown, tiers = LARGE) =>
      registerServingSchema.safeParse({
        model: 'm',
        businessLine: 'feed',
        tiers,
        webhookUrl: 'https://example.com/hook',
        secret: 'a-secret-of-16-chars',
        policy: { schedule },
      });
    const paths = (r: ReturnType<typeof reg>) => (r.success ? [] : r.error.issues.map((i) => i.path.join('.')));
    expect(paths(reg({ timeZone: 'Mars/Olympus', windows: [{ tier: -1, from: '22:00', to: '06:00' }] }))).toEqual([
      'policy.schedule.timeZone',
    ]);
    expect(
      paths(
        reg({
          timeZone: 'UTC',
          windows: [
            { tier: -1, from: '22:00', to: '06:00' },
            { tier: -1, days: ['sat'], from: '05:00', to: '07:00' },
          ],
        }),
      ),
    ).toEqual(['policy.schedule.windows.1']);
    expect(paths(reg({ timeZone: 'UTC', windows: [{ tier: -1, from: '22:00', to: '06:00' }] }, [0, 1]))).toEqual([
      'policy.schedule.windows.0.tier',
    ]);
    expect(paths(reg({ timeZone: 'UTC', windows: [{ tier: 0, from: '25:00', to: '06:00' }] }))).toEqual([
      'policy.schedule.windows.0.from',
    ]);
    expect(paths(reg({ timeZone: 'UTC', windows: [{ tier: 0, from: '06:00', to: '06:00' }] }))).toEqual([
      'policy.schedule.windows.0.to',
    ]);
    // Sunday night into Monday overlaps a Monday-morning window: the week wraps
    expect(
      paths(
        reg({
          timeZone: 'UTC',
          windows: [
            { tier: -1, days: ['sun'], from: '23:00', to: '02:00' },
            { tier: 0, days: ['mon'], from: '01:00', to: '03:00' },
          ],
        }),
      ),
    ).toEqual(['policy.schedule.windows.1']);
    expect(reg({ timeZone: 'Europe/Berlin', windows: [{ tier: -1, from: '22:00', to: '06:00' }] }).success).toBe(true);
  });
});

describe('the example policies', () => {
  it('parse: configs/examples/serving-policy.json and serving-policy-offpeak.json', () => {
    for (const f of ['serving-policy.json', 'serving-policy-offpeak.json']) {
      const raw = JSON.parse(readFileSync(path.join(__dirname, '../../../configs/examples', f), 'utf8')) as unknown;
      expect(servingPolicySchema.safeParse(raw).success, f).toBe(true);
    }
  });
});
