import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simulateWorld, writeWorld } from '@abacus/samples';
import type { ApiClient } from '../api-client';
import { TERMINAL, until } from './private-platform';
import { wilsonInterval } from './wilson-interval';

export interface DiscoverBenchOptions {
  worlds: number;
  rows: number;
  seed: number;
  concurrency: number;
  maxCandidates: number;
  topK: number;
  seeds: number;
  windows: string[];
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

interface Screened {
  featureName: string;
  value: number;
  rank: number;
  details: { text: string; columns: string[]; chosen: boolean };
}

/** What one world gave. */
export interface DiscoverWorld {
  seed: number;
  ok: boolean;
  error?: string;
  rows?: number;
  ms?: number;
  /** per planted effect: its rank on the screen, whether it was sent on, its verdict */
  planted?: {
    name: string;
    expression: string;
    rank: number | null;
    chosen: boolean;
    verdict: string | null;
    /** the comparison's evidence (validation ΔAUC of base + it, with the interval the verdict reads) and its test ΔAUC */
    leaveOneIn?: { mean: number; ciLow: number; ciHigh: number } | null;
    testGain?: number | null;
  }[];
  /** expressions over noise columns only: sent on, and adopted */
  noiseChosen?: string[];
  noiseAdopted?: string[];
  adopted?: string[];
  /** an expression reading the row's own label was refused (400), never registered or built */
  leakRefused?: boolean;
  candidates?: number;
}

const strip = (t: string) => t.replace(/, buckets: \d+/, '');

async function runWorld(api: ApiClient, seed: number, o: DiscoverBenchOptions, runId: string, dir: string): Promise<DiscoverWorld> {
  const t0 = Date.now();
  const world = simulateWorld({ seed, rows: o.rows, derivedEffects: true });
  const wdir = path.join(dir, String(seed));
  await writeWorld(world, wdir);
  const gt = world.groundTruth;
  const line = `discover-${runId}-${seed}`;
  try {
    await api.post('/business-lines', { name: line, description: `discover truth world ${seed}` });
    const ss = await api.upload<{ id: string }>('/sample-sets', path.join(wdir, 'samples', 'feed.parquet'), {
      name: 'feed',
      businessLine: line,
      label: 'click',
      time: 'ts',
      keys: 'impression_id,user_id,item_id,context_id,domain',
    });
    // the leak: an expression reading the row's own label must be refused before anything is stored
    const leakRefused = await api
      .post('/features', { name: 'leak', businessLine: line, sampleSet: 'feed', expressionText: 'click * 1' })
      .then(
        () => false,
        (err: Error) => /HTTP 400/.test(err.message) && /is the label/.test(err.message),
      );
    const features = gt.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
    const sub = await api.post<{ id: string }>('/experiments', {
      kind: 'discover',
      businessLine: line,
      name: `discover truth world ${seed}`,
      spec: { base: { sampleSet: ss.id, features }, maxCandidates: o.maxCandidates, topK: o.topK, seeds: o.seeds, windows: o.windows, seed },
    });
    const e = await until(
      async () => {
        const x = await api.get<Experiment>(`/experiments/${sub.id}`);
        return TERMINAL.includes(x.status) ? x : null;
      },
      3 * 3_600_000,
      `discover experiment ${sub.id}`,
    );
    if (e.status !== 'succeeded') return { seed, ok: false, error: `discover ${e.status}: ${e.error}` };
    const ranked = await api.get<Screened[]>(`/experiments/${e.id}/results?scorer=discover_screen`);
    const r = e.result as {
      chosen: {
        name: string;
        text: string;
        verdict: string | null;
        leaveOneIn: { mean: number; ciLow: number; ciHigh: number } | null;
        gain: { delta: number } | null;
      }[];
      adopted: string[];
      candidates: number;
    };
    const noise = new Set(gt.features.filter((f) => f.role === 'noise').map((f) => f.name));
    const isNoise = (name: string) => {
      const x = ranked.find((s) => s.featureName === name);
      return !!x && x.details.columns.length > 0 && x.details.columns.every((c) => noise.has(c));
    };
    const planted = (gt.derived ?? []).map((d) => {
      const x = ranked.find((s) => strip(s.details.text) === strip(d.expression));
      const c = r.chosen.find((y) => strip(y.text) === strip(d.expression));
      return {
        name: d.name,
        expression: d.expression,
        rank: x?.rank ?? null,
        chosen: !!c,
        verdict: c?.verdict ?? null,
        leaveOneIn: c?.leaveOneIn ? { mean: c.leaveOneIn.mean, ciLow: c.leaveOneIn.ciLow, ciHigh: c.leaveOneIn.ciHigh } : null,
        testGain: c?.gain?.delta ?? null,
      };
    });
    return {
      seed,
      ok: true,
      rows: o.rows,
      ms: Date.now() - t0,
      planted,
      noiseChosen: r.chosen.filter((c) => isNoise(c.name)).map((c) => c.text),
      noiseAdopted: r.chosen.filter((c) => c.verdict === 'adopt' && isNoise(c.name)).map((c) => c.text),
      adopted: r.chosen.filter((c) => c.verdict === 'adopt').map((c) => c.text),
      leakRefused,
      candidates: r.candidates,
    };
  } finally {
    fs.rmSync(wdir, { recursive: true, force: true });
  }
}

const TARGETS = { plantedAdopted: { min: 0.9 }, noiseAdopted: { max: 0.01 } };

/** Runs discover on N simulated worlds with planted derived effects and scores its answers against them. */
export async function runDiscoverBench(api: ApiClient, o: DiscoverBenchOptions) {
  const log = o.onStatus ?? (() => undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-discover-bench-'));
  const t0 = Date.now();
  const done = new Map<number, DiscoverWorld>();
  if (o.resume && fs.existsSync(o.resume))
    for (const l of fs.readFileSync(o.resume, 'utf8').split('\n').filter(Boolean)) {
      const w = JSON.parse(l) as DiscoverWorld;
      if (w.ok) done.set(w.seed, w);
    }
  const seeds = Array.from({ length: o.worlds }, (_, i) => o.seed + i);
  const todo = seeds.filter((s) => !done.has(s));
  const results: DiscoverWorld[] = [...done.values()];
  const runId = Date.now().toString(36);
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const seed = todo[next++]!;
      const w = await runWorld(api, seed, o, runId, dir).catch((err: Error): DiscoverWorld => ({ seed, ok: false, error: err.message }));
      results.push(w);
      if (o.resume) fs.appendFileSync(o.resume, `${JSON.stringify(w)}\n`);
      log(
        w.ok
          ? `world ${seed} (${Math.round(w.ms! / 1000)} s): ${w.planted!.map((p) => `${p.name} #${p.rank ?? '-'} ${p.verdict ?? 'not sent'}`).join(', ')}; noise adopted ${w.noiseAdopted!.length}; leak ${w.leakRefused ? 'refused' : 'BUILT'} [${results.length}/${seeds.length}]`
          : `world ${seed} failed: ${w.error}`,
      );
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, o.concurrency) }, worker));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  results.sort((a, b) => a.seed - b.seed);
  const ok = results.filter((w) => w.ok);
  const per = (name: string) => {
    const k = ok.filter((w) => w.planted!.some((p) => p.name === name && p.verdict === 'adopt')).length;
    const sent = ok.filter((w) => w.planted!.some((p) => p.name === name && p.chosen)).length;
    return { adopted: wilsonInterval(k, ok.length), sentOn: wilsonInterval(sent, ok.length) };
  };
  const noiseWorlds = ok.filter((w) => w.noiseAdopted!.length > 0).length;
  const noiseSent = ok.reduce((a, w) => a + w.noiseChosen!.length, 0);
  const noiseAdopted = ok.reduce((a, w) => a + w.noiseAdopted!.length, 0);
  const planted = { cross: per('cross'), ratio: per('ratio'), rate: per('rate') };
  const summary = {
    worlds: seeds.length,
    succeeded: ok.length,
    planted,
    /** worlds where an expression over noise columns only was adopted */
    noiseAdoptedWorlds: wilsonInterval(noiseWorlds, ok.length),
    /** of the noise-only expressions sent to the comparison, how many were adopted */
    noiseAdoptedOfSent: wilsonInterval(noiseAdopted, noiseSent),
    leakRefused: ok.filter((w) => w.leakRefused).length,
    targets: {
      plantedAdopted: { ...TARGETS.plantedAdopted, met: ok.length ? Object.values(planted).every((p) => p.adopted.rate >= 0.9) : null },
      noiseAdopted: { ...TARGETS.noiseAdopted, met: ok.length ? noiseWorlds / ok.length <= 0.01 : null },
    },
  };
  return { bench: 'discover-truth', options: { ...o, onStatus: undefined }, summary, worlds: results, wallMs: Date.now() - t0, date: new Date().toISOString() };
}
