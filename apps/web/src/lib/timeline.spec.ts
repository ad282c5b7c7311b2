import { describe, expect, it } from 'vitest';
import { formatClock, formatDuration, layoutTimeline, tickOffsets, type TimelineTrial } from './timeline';

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const trial = (seq: number, over: Partial<TimelineTrial>): TimelineTrial => ({
  id: `t${seq}`,
  seq,
  kind: 'train',
  status: 'succeeded',
  attempts: 1,
  backend: 'cpu',
  createdAt: at(0),
  startedAt: null,
  finishedAt: null,
  ...over,
});

describe('layoutTimeline', () => {
  it('finished trials: queued and running spans on one axis from the first creation to the last finish', () => {
    const l = layoutTimeline(
      [
        trial(0, { startedAt: at(2), finishedAt: at(10) }),
        trial(1, { kind: 'ablate', startedAt: at(10), finishedAt: at(20), attempts: 2 }),
      ],
      T0 + 999_000,
      100,
      300,
    );
    expect(l.start).toBe(T0);
    expect(l.end).toBe(T0 + 20_000); // all done: "now" does not stretch the axis
    const [a, b] = l.rows;
    expect(a.spans.map((s) => [s.phase, s.x, s.width, s.open])).toEqual([
      ['queued', 100, 20, false],
      ['running', 120, 80, false],
    ]);
    expect(a.endX).toBe(200);
    expect(b.spans.map((s) => [s.phase, s.x, s.width])).toEqual([
      ['queued', 100, 100],
      ['running', 200, 100],
    ]);
    expect(b.description).toBe('trial 1 (ablate): succeeded, waited 10 s, ran 10 s, 2 attempts, backend cpu');
    expect(l.ticks.map((t) => t.label)).toEqual(['0', '+5 s', '+10 s', '+15 s', '+20 s']);
    expect(l.ticks[0].x).toBe(100);
    expect(l.ticks[4].x).toBe(300);
  });

  it('a running trial runs up to now; a queued one waits up to now; the axis ends at now', () => {
    const l = layoutTimeline(
      [trial(0, { status: 'running', startedAt: at(5) }), trial(1, { status: 'queued', backend: null, attempts: 0 })],
      T0 + 40_000,
      0,
      400,
    );
    expect(l.end).toBe(T0 + 40_000);
    expect(l.rows[0].spans.map((s) => [s.phase, s.x, s.width, s.open])).toEqual([
      ['queued', 0, 50, false],
      ['running', 50, 350, true],
    ]);
    expect(l.rows[0].endX).toBeNull();
    expect(l.rows[0].description).toBe('trial 0 (train): running, waited 5.0 s, running for 35 s, 1 attempt, backend cpu');
    expect(l.rows[1].spans).toEqual([expect.objectContaining({ phase: 'queued', x: 0, width: 400, open: true })]);
    expect(l.rows[1].description).toBe('trial 1 (train): queued, queued for 40 s, 0 attempts');
  });

  it('a trial cancelled before it started waited until it was cancelled, and has no running span', () => {
    const l = layoutTimeline([trial(0, { status: 'cancelled', finishedAt: at(8) })], T0 + 60_000, 0, 80);
    expect(l.rows[0].spans.map((s) => [s.phase, s.width])).toEqual([['queued', 80]]);
    expect(l.rows[0].endX).toBe(80);
  });

  it('a browser clock behind the server never gives negative widths; no timestamps gives no rows', () => {
    const l = layoutTimeline([trial(0, { status: 'running', startedAt: at(30) })], T0, 0, 100);
    expect(l.rows[0].spans.every((s) => s.width >= 0)).toBe(true);
    expect(l.end).toBe(T0 + 30_000);
    expect(layoutTimeline([], T0, 0, 100).rows).toEqual([]);
    expect(layoutTimeline([trial(0, { createdAt: 'nonsense' })], T0, 0, 100).rows).toEqual([]);
  });

  it('instant trials still get a one-second axis', () => {
    const l = layoutTimeline([trial(0, { startedAt: at(0), finishedAt: at(0) })], T0, 0, 100);
    expect(l.end - l.start).toBe(1000);
    expect(l.rows[0].spans.map((s) => s.width)).toEqual([0, 0]);
  });
});

describe('ticks and durations', () => {
  it('round steps, at most six ticks', () => {
    expect(tickOffsets(20_000)).toEqual([0, 5000, 10000, 15000, 20000]);
    expect(tickOffsets(3_600_000).length).toBeLessThanOrEqual(6);
    expect(tickOffsets(3_600_000)[1]).toBe(900_000);
    expect(tickOffsets(500)).toEqual([0]);
  });

  it('formatDuration', () => {
    expect(formatDuration(1234)).toBe('1.2 s');
    expect(formatDuration(42_000)).toBe('42 s');
    expect(formatDuration(75_000)).toBe('1 min 15 s');
    expect(formatDuration(120_000)).toBe('2 min');
    expect(formatDuration(3_720_000)).toBe('1 h 2 min');
    expect(formatDuration(-1)).toBe('—');
  });
});

describe('formatClock', () => {
  it('UTC time of day with seconds', () => {
    expect(formatClock('2026-11-23T10:04:05.123Z')).toBe('10:04:05 UTC');
    expect(formatClock(null)).toBe('—');
  });
});
