import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCalibrationWorld, type CalibrationTruth } from '@abacus/samples';
import type { ApiClient } from '../api-client';
import { TERMINAL } from './private-platform';
import { wilsonInterval, type RateInterval } from './wilson-interval';

export interface CalibrationBenchOptions {
  worlds: number;
  rows: number;
  /** worlds in flight at once */
  concurrency: number;
  /** the first world's seed; world i has seed + i */
  seed: number;
  /** these worlds instead of `worlds` from `seed` (e.g. to rerun the ones a report names) */
  seeds?: number[];
  /** which workflows to run on each world (both by default); a rate whose workflow did not run is not reported */
  only?: 'add' | 'subtract';
  /** subtract's retraining checks (spec.retrain); default: the spec's default */
  retrain?: 'auto' | 'warm' | 'scratch';
  /** more subtract spec fields for every world (validated by the API) */
  subtractSpec?: Record<string, unknown>;
  /** one JSON line per finished world: appended as worlds finish, read back to skip them on a rerun */
  resume?: string;
  onStatus?: (line: string) => void;
}

interface Experiment {
  id: string;
  status: string;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  result: Record<string, unknown> | null;
}

type Verdict = 'adopt' | 'reject' | 'inconclusive';

/** What one world gave, next to its ground truth. */
export interface WorldOutcome {
  seed: number;
  rows: number;
  ok: boolean;
  error?: string;
  add?: {
    experimentId: string;
    ms: number;
    useful: { feature: string; verdict: Verdict; evidence: unknown; testGain: unknown; oracleGain: number };
    noise: { feature: string; verdict: Verdict; evidence: unknown; testGain: unknown };
  };
  subtract?: {
    experimentId: string;
    ms: number;
    features: number;
    removed: string[];
    strongRemoved: string[];
    strong: number;
    noiseRemoved: number;
    noise: number;
    weakRemoved: number;
    weak: number;
    redundantRemoved: number;
    redundant: number;
    maxDrop: number;
    /** permutation estimate of the removable set's drop, validation split */
    estimatedDrop: number | null;
    /** the retraining check's drop of the removable set (mean over the pruning's seeds), validation split */
    retrainDrop: number | null;
    /** how the retraining checks trained (warm or scratch; null when none ran) */
    retrainMode: string | null;
    /** retrained on fresh seeds, test split */
    confirmedDrop: number | null;
    withinLimit: boolean | null;
    /** the pruning curve with each added feature's planted role */
    curve: { check: string; added: string[]; removed: number; drop: number; accepted: boolean }[];
  };
}

const TARGETS = {
  falseAdoptRate: { max: 0.01 },
  usefulAdoptRate: { min: 0.95 },
  strongRemovedRate: { max: 0 },
  noiseRemovedShare: { min: 0.9 },
  confirmedWithinMaxDropRate: { min: 0.95 },
};

async function waitFor(api: ApiClient, id: string, limitMs: number): Promise<Experiment> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const e = await api.get<Experiment>(`/experiments/${id}`);
    if (TERMINAL.includes(e.status)) return e;
    if (Date.now() > deadline) throw new Error(`experiment ${id} did not finish within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

const span = (e: Experiment) => (e.finishedAt ? Date.parse(e.finishedAt) - Date.parse(e.createdAt) : 0);

/** Generates one world, imports it, runs add and subtract on it through the API and scores the answers. */
async function runWorld(
  api: ApiClient,
  seed: number,
  o: CalibrationBenchOptions,
  runId: string,
  dir: string,
): Promise<WorldOutcome> {
  const world = await writeCalibrationWorld(seed, o.rows, dir);
  const t: CalibrationTruth = world.truth;
  try {
    const ss = await api.upload<{ id: string }>('/sample-sets', world.file, {
      name: `calibration-${runId}-${seed}`,
      businessLine: 'calibration',
      label: world.label,
      time: world.time,
    });
    const add =
      o.only !== 'subtract'
        ? await api.post<{ id: string }>('/experiments', {
            kind: 'add',
            businessLine: 'calibration',
            name: `calibration world ${seed}: add`,
            spec: { base: { sampleSet: ss.id, features: t.base }, candidates: t.candidates, notify: false, seed },
          })
        : null;
    const sub =
      o.only !== 'add'
        ? await api.post<{ id: string }>('/experiments', {
            kind: 'subtract',
            businessLine: 'calibration',
            name: `calibration world ${seed}: subtract`,
            spec: {
              model: { sampleSet: ss.id, features: t.base },
              seed,
              ...(o.retrain ? { retrain: o.retrain } : {}),
              ...(o.subtractSpec ?? {}),
            },
          })
        : null;
    const [a, s] = await Promise.all([
      add ? waitFor(api, add.id, 3_600_000) : null,
      sub ? waitFor(api, sub.id, 3_600_000) : null,
    ]);
    const failed = [a, s].filter((e): e is Experiment => !!e && e.status !== 'succeeded');
    if (failed.length) {
      return {
        seed,
        rows: t.rows,
        ok: false,
        error: failed.map((e) => `${e.id} ${e.status}: ${e.error ?? ''}`).join('; '),
      };
    }
    const role = (r: string) => t.features.filter((f) => f.role === r).map((f) => f.name);
    const usefulName = role('useful-candidate')[0]!;
    const noiseName = role('noise-candidate')[0]!;
    type Cand = { feature: string; verdict: Verdict; leaveOneIn: unknown; screen: unknown; gain: unknown };
    const cands = ((a?.result?.candidates as Cand[] | undefined) ?? []) as Cand[];
    const cand = (name: string) => cands.find((c) => c.feature === name)!;
    const r = s?.result as {
      removable: string[];
      features: number;
      maxDrop: number;
      estimatedDrop: { mean: number } | null;
      retrainCheck: { drop: number; mode?: string } | null;
      confirmed: { aucDrop: number; withinLimit: boolean } | null;
      curve: { check: string; added: string[]; removed: number; drop: number; accepted: boolean }[];
    };
    const roleOf = (n: string) => t.features.find((f) => f.name === n)?.role ?? '?';
    const removed = new Set(r?.removable ?? []);
    const count = (names: string[]) => names.filter((n) => removed.has(n)).length;
    return {
      seed,
      rows: t.rows,
      ok: true,
      add: !a
        ? undefined
        : {
            experimentId: a.id,
            ms: span(a),
            useful: {
              feature: usefulName,
              verdict: cand(usefulName).verdict,
              evidence: cand(usefulName).leaveOneIn ?? cand(usefulName).screen,
              testGain: cand(usefulName).gain,
              oracleGain: t.oracle.usefulGain,
            },
            noise: {
              feature: noiseName,
              verdict: cand(noiseName).verdict,
              evidence: cand(noiseName).leaveOneIn ?? cand(noiseName).screen,
              testGain: cand(noiseName).gain,
            },
          },
      subtract: !s
        ? undefined
        : {
            experimentId: s.id,
            ms: span(s),
            features: r.features,
            removed: r.removable,
            strongRemoved: role('strong').filter((n) => removed.has(n)),
            strong: role('strong').length,
            noiseRemoved: count(role('noise')),
            noise: role('noise').length,
            weakRemoved: count(role('weak')),
            weak: role('weak').length,
            redundantRemoved: count(role('redundant')),
            redundant: role('redundant').length,
            maxDrop: r.maxDrop,
            estimatedDrop: r.removable.length ? (r.estimatedDrop?.mean ?? null) : 0,
            retrainDrop: r.removable.length ? (r.retrainCheck?.drop ?? null) : 0,
            retrainMode: r.retrainCheck?.mode ?? null,
            confirmedDrop: r.confirmed?.aucDrop ?? (r.removable.length ? null : 0),
            withinLimit: r.confirmed?.withinLimit ?? (r.removable.length ? null : true),
            curve: r.curve.map((c) => ({
              check: c.check,
              added: c.added.map((n) => `${n}:${roleOf(n)}`),
              removed: c.removed,
              drop: c.drop,
              accepted: c.accepted,
            })),
          },
    };
  } finally {
    fs.rmSync(world.file, { force: true });
  }
}

function readResume(file: string | undefined): Map<number, WorldOutcome> {
  const out = new Map<number, WorldOutcome>();
  if (!file || !fs.existsSync(file)) return out;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const w = JSON.parse(line) as WorldOutcome;
    if (w.ok) out.set(w.seed, w);
  }
  return out;
}

/** Mean with a 95% t interval (normal quantile past 30 values). */
function meanInterval(xs: number[]): { n: number; mean: number; ciLow: number; ciHigh: number } | null {
  const n = xs.length;
  if (n < 2) return n ? { n, mean: xs[0]!, ciLow: xs[0]!, ciHigh: xs[0]! } : null;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1));
  const T = [
    12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101,
    2.093, 2.086,
  ];
  const q = n - 1 <= T.length ? T[n - 2]! : n <= 30 ? 2.05 : 1.96;
  const half = (q * sd) / Math.sqrt(n);
  return { n, mean, ciLow: mean - half, ciHigh: mean + half };
}

/** The rates the verdict rules are calibrated on, each with its 95% interval, and the targets. */
export function summarizeCalibration(worlds: WorldOutcome[]) {
  const ok = worlds.filter((w) => w.ok && (w.add || w.subtract));
  const n = ok.length;
  const adds = ok.filter((w) => w.add).map((w) => w.add!);
  const subs = ok.filter((w) => w.subtract).map((w) => w.subtract!);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const rates: Record<keyof typeof TARGETS, RateInterval> = {
    falseAdoptRate: wilsonInterval(adds.filter((a) => a.noise.verdict === 'adopt').length, adds.length),
    usefulAdoptRate: wilsonInterval(adds.filter((a) => a.useful.verdict === 'adopt').length, adds.length),
    strongRemovedRate: wilsonInterval(sum(subs.map((s) => s.strongRemoved.length)), sum(subs.map((s) => s.strong))),
    noiseRemovedShare: wilsonInterval(sum(subs.map((s) => s.noiseRemoved)), sum(subs.map((s) => s.noise))),
    confirmedWithinMaxDropRate: wilsonInterval(subs.filter((s) => s.withinLimit === true).length, subs.length),
  };
  const targets = Object.fromEntries(
    (Object.keys(TARGETS) as (keyof typeof TARGETS)[]).map((k) => {
      const t = TARGETS[k] as { min?: number; max?: number };
      const r = rates[k];
      if (r.n === 0) return [k, { ...t, met: null, certain: null, note: 'not run' }];
      return [
        k,
        {
          ...t,
          // met by the estimate; `certain`: the whole 95% interval is on the right side
          met: t.max !== undefined ? r.rate <= t.max : r.rate >= t.min!,
          certain: t.max !== undefined ? r.ciHigh <= t.max : r.ciLow >= t.min!,
        },
      ];
    }),
  );
  const paired = subs.filter((s) => s.confirmedDrop !== null && s.estimatedDrop !== null);
  return {
    worlds: worlds.length,
    succeeded: n,
    failed: worlds.filter((w) => !w.ok).map((w) => ({ seed: w.seed, error: w.error })),
    rates,
    // per world as well: the noise features of one world are not independent draws
    worldsWithStrongRemoved: wilsonInterval(subs.filter((s) => s.strongRemoved.length > 0).length, subs.length),
    worldsWithAllNoiseRemoved: wilsonInterval(subs.filter((s) => s.noiseRemoved === s.noise).length, subs.length),
    adopt: {
      useful: {
        verdicts: countBy(adds.map((a) => a.useful.verdict)),
        oracleGain: meanInterval(adds.map((a) => a.useful.oracleGain)),
      },
      noise: { verdicts: countBy(adds.map((a) => a.noise.verdict)) },
    },
    drops: {
      estimated: meanInterval(paired.map((s) => s.estimatedDrop!)),
      confirmed: meanInterval(paired.map((s) => s.confirmedDrop!)),
      confirmedMinusEstimated: meanInterval(paired.map((s) => s.confirmedDrop! - s.estimatedDrop!)),
      retrainCheck: meanInterval(subs.filter((s) => s.retrainDrop !== null).map((s) => s.retrainDrop!)),
      confirmedMinusRetrainCheck: meanInterval(
        subs.filter((s) => s.retrainDrop !== null && s.confirmedDrop !== null).map((s) => s.confirmedDrop! - s.retrainDrop!),
      ),
      removedShare: meanInterval(subs.map((s) => s.removed.length / s.features)),
      weakRemoved: wilsonInterval(sum(subs.map((s) => s.weakRemoved)), sum(subs.map((s) => s.weak))),
      redundantRemoved: wilsonInterval(sum(subs.map((s) => s.redundantRemoved)), sum(subs.map((s) => s.redundant))),
    },
    targets,
    wallMs: {
      add: meanInterval(adds.map((a) => a.ms)),
      subtract: meanInterval(subs.map((s) => s.ms)),
    },
  };
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

/**
 * The verdict calibration benchmark: `worlds` independent flat worlds with planted strong, weak,
 * redundant and noise features and one useful plus one pure-noise add candidate each; add and
 * subtract run on every world through the API (queued, run by the workers like any experiment),
 * `concurrency` worlds at a time; the answers are scored against the ground truth.
 */
export async function runCalibrationBench(api: ApiClient, o: CalibrationBenchOptions) {
  const log = o.onStatus ?? (() => undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-calibration-'));
  const t0 = Date.now();
  const done = readResume(o.resume);
  const seeds = o.seeds?.length ? [...new Set(o.seeds)] : Array.from({ length: o.worlds }, (_, i) => o.seed + i);
  const todo = seeds.filter((s) => !done.has(s));
  if (done.size) log(`resuming: ${seeds.length - todo.length} of ${seeds.length} worlds already done`);
  const lines = await api.get<{ name: string }[]>('/business-lines');
  if (!lines.some((l) => l.name === 'calibration'))
    await api.post('/business-lines', { name: 'calibration', description: 'verdict calibration benchmark' });
  const runId = Date.now().toString(36);
  const results: WorldOutcome[] = seeds.filter((s) => done.has(s)).map((s) => done.get(s)!);
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const seed = todo[next++]!;
      const w0 = Date.now();
      const r = await runWorld(api, seed, o, runId, dir).catch((err: Error): WorldOutcome => ({
        seed,
        rows: 0,
        ok: false,
        error: err.message,
      }));
      results.push(r);
      if (o.resume) fs.appendFileSync(o.resume, `${JSON.stringify(r)}\n`);
      log(
        r.ok
          ? [
              `world ${seed} (${r.rows} rows, ${Math.round((Date.now() - w0) / 1000)} s)`,
              r.add && `useful ${r.add.useful.verdict}, noise ${r.add.noise.verdict}`,
              r.subtract &&
                `removed ${r.subtract.removed.length}/${r.subtract.features} (strong ${r.subtract.strongRemoved.length}, noise ${r.subtract.noiseRemoved}/${r.subtract.noise}), ` +
                  `confirmed drop ${r.subtract.confirmedDrop?.toFixed(5)}`,
            ]
              .filter(Boolean)
              .join('; ') + ` [${results.length}/${seeds.length}]`
          : `world ${seed} failed: ${r.error}`,
      );
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, o.concurrency) }, worker));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  results.sort((a, b) => a.seed - b.seed);
  return {
    bench: 'calibration',
    options: {
      worlds: seeds.length,
      rows: o.rows,
      concurrency: o.concurrency,
      seed: o.seed,
      ...(o.seeds?.length ? { seeds } : {}),
      ...(o.only ? { only: o.only } : {}),
      ...(o.retrain ? { retrain: o.retrain } : {}),
      ...(o.subtractSpec ? { subtractSpec: o.subtractSpec } : {}),
    },
    summary: summarizeCalibration(results),
    worldResults: results,
    wallMs: Date.now() - t0,
    resumed: seeds.length - todo.length,
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(os.totalmem() / 2 ** 30) },
    date: new Date().toISOString(),
  };
}
