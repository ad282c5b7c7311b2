import { describe, expect, it } from 'vitest';
import { decideTier, type Signals, type TierState } from './policy-engine';
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
