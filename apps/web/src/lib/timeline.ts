/**
 * The trials of an experiment on a time axis: per trial a queued span (created → started: waiting
 * for a worker or for the trials it depends on) and a running span (started → finished), open-ended
 * at "now" while it lasts. Pure (unit-tested beside this file); timeline.tsx draws it as SVG.
 */

export interface TimelineTrial {
  id: string;
  seq: number;
  kind: string;
  status: string;
  attempts: number;
  backend: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface TimelineSpan {
  phase: 'queued' | 'running';
  /** epoch ms */
  from: number;
  to: number;
  /** still going (drawn up to now) */
  open: boolean;
  x: number;
  width: number;
}

export interface TimelineRow {
  trial: TimelineTrial;
  label: string;
  spans: TimelineSpan[];
  /** where the trial ended, for its end mark; null while it has not */
  endX: number | null;
  /** the row in words (the SVG's accessible text and the table's summary) */
  description: string;
}

export interface TimelineLayout {
  rows: TimelineRow[];
  start: number;
  end: number;
  ticks: { x: number; label: string }[];
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const time = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : null;
};

/** 1234 → "1.2 s", 75_000 → "1 min 15 s", 3_720_000 → "1 h 2 min". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`;
  const m = Math.round(s / 60);
  return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m / 60} h`;
}

const STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

/** Tick offsets from the start (ms) for a span of `ms`: the smallest round step giving at most `max` ticks. */
export function tickOffsets(ms: number, max = 6): number[] {
  const stepS = STEPS_S.find((st) => ms / 1000 / st <= max - 1) ?? Math.ceil(ms / 1000 / (max - 1) / 86400) * 86400;
  const out: number[] = [];
  for (let t = 0; t <= ms + 1e-6; t += stepS * 1000) out.push(t);
  return out;
}

const tickLabel = (ms: number): string => {
  const s = Math.round(ms / 1000);
  if (s === 0) return '0';
  if (s < 60) return `+${s} s`;
  if (s < 3600) return s % 60 ? `+${(s / 60).toFixed(1)} min` : `+${s / 60} min`;
  return `+${(s / 3600).toFixed(s % 3600 ? 1 : 0)} h`;
};

/**
 * Lays the trials out between x = `left` and x = `right`. `now` (epoch ms) closes the open spans;
 * it is never taken before the latest timestamp (a browser clock behind the server's).
 */
export function layoutTimeline(trials: TimelineTrial[], now: number, left: number, right: number): TimelineLayout {
  const stamps = trials
    .flatMap((t) => [time(t.createdAt), time(t.startedAt), time(t.finishedAt)])
    .filter((v): v is number => v !== null);
  if (!stamps.length) return { rows: [], start: now, end: now, ticks: [] };
  const start = Math.min(...stamps);
  const latest = Math.max(...stamps);
  const anyOpen = trials.some((t) => !TERMINAL.has(t.status));
  const clock = Math.max(now, latest);
  // at least a second wide, so a run of instant trials still has an axis
  const end = Math.max(anyOpen ? clock : latest, start + 1000);
  const scale = (t: number) => left + ((t - start) / (end - start)) * (right - left);
  const span = (phase: TimelineSpan['phase'], from: number, to: number, open: boolean): TimelineSpan => ({
    phase,
    from,
    to,
    open,
    x: scale(from),
    width: Math.max(0, scale(to) - scale(from)),
  });

  const rows = trials.map((t): TimelineRow => {
    const created = time(t.createdAt) ?? start;
    const started = time(t.startedAt);
    const finished = time(t.finishedAt);
    const done = TERMINAL.has(t.status);
    const spans: TimelineSpan[] = [];
    // queued until it started; one that never started (cancelled, or failed before) waited until it ended
    const queuedUntil = started ?? (done ? (finished ?? created) : clock);
    spans.push(span('queued', created, Math.max(created, queuedUntil), started === null && !done));
    if (started !== null) {
      const until = finished ?? (done ? started : clock);
      spans.push(span('running', started, Math.max(started, until), finished === null && !done));
    }
    const endX = done && finished !== null ? scale(finished) : null;
    const parts = [`trial ${t.seq} (${t.kind}): ${t.status}`];
    parts.push(`${spans[0].open ? 'queued for' : 'waited'} ${formatDuration(spans[0].to - spans[0].from)}`);
    const run = spans[1];
    if (run) parts.push(`${run.open ? 'running for' : 'ran'} ${formatDuration(run.to - run.from)}`);
    parts.push(`${t.attempts} attempt${t.attempts === 1 ? '' : 's'}`);
    if (t.backend) parts.push(`backend ${t.backend}`);
    return { trial: t, label: `${t.seq} ${t.kind}`, spans, endX, description: parts.join(', ') };
  });
  const ticks = tickOffsets(end - start).map((o) => ({ x: scale(start + o), label: tickLabel(o) }));
  return { rows, start, end, ticks };
}

/** An ISO timestamp as "10:04:05 UTC" (trials start and end seconds apart; the date is the experiment's). */
export function formatClock(iso: string | null | undefined): string {
  const t = time(iso);
  return t === null ? '—' : `${new Date(t).toISOString().slice(11, 19)} UTC`;
}
