import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simulateWorld, writeWorld } from '@abacus/samples';
import type { ApiClient } from '../api-client';
import { CliError } from '../commands/command.types';
import { multiplyPhases, type MultiplyBenchExperiment } from './multiply-phases';

const ROOT = path.resolve(__dirname, '../../../../..');
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

interface Experiment extends MultiplyBenchExperiment {
  id: string;
  status: string;
  error: string | null;
  result: {
    baseline?: { auc: number; trainRows: number };
    results?: {
      strategy: string;
      sources: string[];
      auc: number;
      deltaAuc: { delta: number };
      validation?: { delta: number };
      verdict: string;
    }[];
  } | null;
}

interface MultiplyFile {
  kind: string;
  name?: string;
  businessLine: string;
  spec: { target: { sampleSet: string } & Record<string, unknown>; sources: unknown } & Record<string, unknown>;
}

export interface MultiplyBenchOptions {
  /** the experiment file (kind multiply) */
  config: string;
  seeds?: number[];
  strategies?: string[];
  /** use the sample sets the file names (imported from the world when missing) instead of fresh copies */
  reuse: boolean;
  /** a world written by `abacus sim`; otherwise one is simulated */
  world?: string;
  simSeed: number;
  rows: number;
  onStatus?: (line: string) => void;
}

/** `line/name` → [line, name]; a bare name is in the experiment's line. */
function splitRef(ref: string, line: string): [string, string] {
  const slash = ref.indexOf('/');
  return slash > 0 ? [ref.slice(0, slash), ref.slice(slash + 1)] : [line, ref];
}

function readConfig(file: string): MultiplyFile {
  const found = [file, path.resolve(ROOT, file)].find((f) => fs.existsSync(f));
  if (!found) throw new CliError(`${file} not found`);
  const body = JSON.parse(fs.readFileSync(found, 'utf8')) as MultiplyFile;
  if (body.kind !== 'multiply') throw new CliError(`${file} is a ${body.kind} experiment, not multiply`);
  if (!Array.isArray(body.spec.sources) || !body.spec.sources.every((s) => typeof s === 'string'))
    throw new CliError(`${file}: the bench needs named sources (line/name), not "auto"`);
  return body;
}

/**
 * End-to-end wall time of one multiply experiment (the demo world's configs/examples/multiply.json)
 * through the running API, split by phase from the trials' own timings. By default the target and
 * source sets are imported afresh (new sample sets, so no union file, built samples or model can be
 * reused from an earlier run); `reuse` takes the sets the file names, and the result counts what the
 * worker found already there either way.
 */
export async function runMultiplyBench(api: ApiClient, o: MultiplyBenchOptions) {
  const log = o.onStatus ?? (() => undefined);
  const cfg = readConfig(o.config);
  const line = cfg.businessLine;
  const sets = [
    { role: 'target', ref: cfg.spec.target.sampleSet, at: splitRef(cfg.spec.target.sampleSet, line) },
    ...(cfg.spec.sources as string[]).map((ref) => ({ role: 'source', ref, at: splitRef(ref, line) })),
  ];
  // the world's files, simulated only when a set must be imported and no --world was given
  const sim: { dir: string | null; ms: number | null } = { dir: null, ms: null };
  const worldDir = async (): Promise<string> => {
    if (o.world) return o.world;
    if (sim.dir) return sim.dir;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-bench-'));
    sim.dir = dir;
    log(`simulating the demo world (seed ${o.simSeed}, ${o.rows} impressions)`);
    const t = Date.now();
    await writeWorld(simulateWorld({ seed: o.simSeed, rows: o.rows }), dir);
    sim.ms = Date.now() - t;
    return dir;
  };
  try {
    const lines = await api.get<{ name: string }[]>('/business-lines');
    for (const l of new Set([line, ...sets.map((s) => s.at[0])])) {
      if (!lines.some((x) => x.name === l))
        await api.post('/business-lines', { name: l, description: 'simulated business line' });
    }
    const stamp = Date.now().toString(36);
    const setup: { ref: string; used: string; rows: number; imported: boolean }[] = [];
    let importMs = 0;
    for (const s of sets) {
      const [l, name] = s.at;
      const existing = o.reuse
        ? (
            await api.get<{ items: { id: string; name: string; rowCount: number }[] }>(
              `/sample-sets?businessLine=${encodeURIComponent(l)}&pageSize=500`,
            )
          ).items.find((x) => x.name === name)
        : undefined;
      if (existing) {
        setup.push({ ref: s.ref, used: `${l}/${name}`, rows: existing.rowCount, imported: false });
        continue;
      }
      // the demo world's convention: set demo-<line> is samples/<line>.parquet
      const file = path.join(await worldDir(), 'samples', `${l}.parquet`);
      if (!fs.existsSync(file)) throw new CliError(`${file} not found: no world samples for line ${l}`);
      const used = o.reuse ? name : `bench-${name}-${stamp}`;
      log(`importing ${l}/${used} through the API`);
      const t = Date.now();
      const ss = await api.upload<{ id: string; rowCount: number }>('/sample-sets', file, {
        name: used,
        businessLine: l,
        label: 'click',
        time: 'ts',
        keys: 'impression_id,user_id,item_id,context_id,domain',
        shareWith: '*',
      });
      importMs += Date.now() - t;
      setup.push({ ref: s.ref, used: `${l}/${used}`, rows: ss.rowCount, imported: true });
    }
    const spec = {
      ...cfg.spec,
      target: { ...cfg.spec.target, sampleSet: setup[0].used.slice(setup[0].used.indexOf('/') + 1) },
      sources: setup.slice(1).map((s) => s.used),
      ...(o.seeds ? { seeds: o.seeds } : {}),
      ...(o.strategies ? { strategies: o.strategies } : {}),
    };
    // the api's runtime (multiply trials do not record theirs; the worker is expected to run with the same settings)
    const health = await api.get<{ runtime?: unknown }>('/health');
    const loadBefore = os.loadavg()[0];
    log(`submitting multiply: ${line}/${spec.target.sampleSet} borrowing ${spec.sources.join(', ')}`);
    const t0 = Date.now();
    let e = await api.post<Experiment>('/experiments', { ...cfg, name: `bench: ${cfg.name ?? 'multiply'}`, spec });
    for (;;) {
      e = await api.get<Experiment>(`/experiments/${e.id}`);
      if (TERMINAL.includes(e.status)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const clientWallMs = Date.now() - t0;
    if (e.status !== 'succeeded') throw new CliError(`the bench experiment ${e.id} ${e.status}: ${e.error ?? ''}`);
    const split = multiplyPhases(e);
    const trainTotal = Object.values(split.phases.trainingMs).reduce((a, b) => a + b, 0);
    const ranked: [string, number][] = [
      ['queueWait', split.phases.queueWaitMs],
      ['unionAlign', split.phases.unionAlignMs],
      ['sampleBuild', split.phases.sampleBuildMs],
      ['training', trainTotal],
      ['compare', split.phases.compareMs],
    ];
    return {
      bench: 'experiment-multiply',
      experimentId: e.id,
      config: o.config,
      businessLine: line,
      sampleSets: setup,
      fresh: !setup.some((s) => !s.imported),
      // the file's, or the schema's defaults where it names none
      seeds: o.seeds ?? (cfg.spec.seeds as number[] | undefined) ?? [1, 2, 3],
      strategies: o.strategies ?? (cfg.spec.strategies as string[] | undefined) ?? ['union', 'pretrain_finetune'],
      backendUsed: [...new Set(e.trials.map((t) => t.backend).filter(Boolean))],
      apiRuntime: health.runtime ?? null,
      ...split,
      trainingTotalMs: trainTotal,
      slowestPhase: ranked.sort((a, b) => b[1] - a[1])[0][0],
      clientWallMs,
      setup: {
        world: o.world ?? (sim.dir ? `simulated: seed ${o.simSeed}, ${o.rows} impressions` : null),
        simulateMs: sim.ms,
        importMs,
      },
      result: {
        baselineAuc: e.result?.baseline?.auc ?? null,
        baselineTrainRows: e.result?.baseline?.trainRows ?? null,
        arms: (e.result?.results ?? []).map((r) => ({
          strategy: r.strategy,
          sources: r.sources,
          auc: r.auc,
          // test split (reported); the verdict read the validation split
          deltaAuc: r.deltaAuc.delta,
          validationDeltaAuc: r.validation?.delta ?? null,
          verdict: r.verdict,
        })),
      },
      machine: {
        cpus: os.cpus().length,
        cpu: os.cpus()[0]?.model ?? 'unknown',
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        // 1-minute load average at submit and at the end: other work on the machine shows here
        loadAvg1m: { atSubmit: Math.round(loadBefore * 100) / 100, atEnd: Math.round(os.loadavg()[0] * 100) / 100 },
      },
      date: new Date().toISOString(),
    };
  } finally {
    if (sim.dir) fs.rmSync(sim.dir, { recursive: true, force: true });
  }
}
