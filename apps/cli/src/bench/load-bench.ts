import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startPlatform, TERMINAL, until } from './private-platform';

export interface LoadBenchOptions {
  experiments: number;
  clients: number;
  readers: number;
  workers: number;
  rows: number;
  subtractShare: number;
  seed: number;
  onStatus?: (line: string) => void;
}

/** A small labelled table: two informative numeric columns, noise, two categoricals. */
function writeSamples(file: string, rows: number, seed: number): void {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
  const out = ['ts,a,b,c,noise1,noise2,color,size,click'];
  for (let i = 0; i < rows; i++) {
    const [a, b, c, n1, n2] = [rand() * 2 - 1, rand() * 2 - 1, rand() * 2 - 1, rand(), rand()];
    const color = ['red', 'green', 'blue'][Math.floor(rand() * 3)];
    const size = ['s', 'm', 'l', 'xl'][Math.floor(rand() * 4)];
    const logit = -1 + 2.5 * a + 0.8 * b + 0.3 * c + (color === 'red' ? 0.7 : 0);
    out.push(
      `${1000 + i},${a.toFixed(4)},${b.toFixed(4)},${c.toFixed(4)},${n1.toFixed(4)},${n2.toFixed(4)},${color},${size},${rand() < 1 / (1 + Math.exp(-logit)) ? 1 : 0}`,
    );
  }
  fs.writeFileSync(file, `${out.join('\n')}\n`);
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 10) / 10;
};

/**
 * Load on a private platform (loopback only): `experiments` submitted by `clients` concurrent
 * clients while `readers` clients read lists, status and results; `workers` worker processes. Reports
 * API throughput and latency per operation and checks that every experiment ended exactly once and
 * that the workers shared the trials (from the workers' logs: who started and who finalized what).
 */
export async function runLoadBench(o: LoadBenchOptions): Promise<Record<string, unknown>> {
  const log = o.onStatus ?? (() => undefined);
  const platform = await startPlatform({ workers: o.workers, name: 'load' }, log);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-load-samples-'));
  try {
    const { api } = platform;
    await api.post('/business-lines', { name: 'load', description: 'load benchmark' });
    const file = path.join(tmp, 'load.csv');
    writeSamples(file, o.rows, o.seed);
    await api.upload('/sample-sets', file, { name: 'load-samples', businessLine: 'load', label: 'click', time: 'ts' });

    const latency: Record<string, number[]> = { submit: [], get: [], list: [], results: [] };
    const errors: Record<string, number> = {};
    const timed = async <T>(op: string, fn: () => Promise<T>): Promise<T | null> => {
      const t0 = performance.now();
      try {
        return await fn();
      } catch (err) {
        const key = `${op}: ${(err as Error).message.split('\n')[0]!.slice(0, 120)}`;
        errors[key] = (errors[key] ?? 0) + 1;
        return null;
      } finally {
        latency[op]!.push(performance.now() - t0);
      }
    };
    const ids: string[] = [];
    let next = 0;
    let submitting = true;
    const t0 = performance.now();
    log(`submitting ${o.experiments} experiments from ${o.clients} clients, ${o.readers} readers, ${o.workers} workers`);
    const submitters = Array.from({ length: o.clients }, async () => {
      for (;;) {
        const i = next++;
        if (i >= o.experiments) return;
        const subtract = o.subtractShare > 0 && i % Math.round(1 / o.subtractShare) === 0;
        const body = subtract
          ? {
              kind: 'subtract',
              businessLine: 'load',
              name: `load ${i}`,
              spec: {
                model: { sampleSet: 'load-samples', training: { epochs: 2, batchSize: 256 } },
                retrainSeeds: 1,
                seed: i,
              },
            }
          : { kind: 'score', businessLine: 'load', name: `load ${i}`, spec: { sampleSet: 'load-samples', featuresPerTrial: 2 } };
        const r = await timed('submit', () => api.post<{ id: string }>('/experiments', body));
        if (r) ids.push(r.id);
      }
    });
    const readers = Array.from({ length: o.readers }, async (_, k) => {
      let n = k;
      while (submitting || ids.length === 0) {
        n++;
        const id = ids[Math.floor((((n * 7919) % 1000) / 1000) * ids.length)];
        if (n % 3 === 0 || !id) await timed('list', () => api.get('/experiments?pageSize=20'));
        else if (n % 3 === 1) await timed('get', () => api.get(`/experiments/${id}`));
        else await timed('results', () => api.get(`/experiments/${id}/results`));
      }
    });
    await Promise.all(submitters);
    const submitMs = performance.now() - t0;
    // readers keep reading while the workers drain the queue
    const drained = until(
      async () => {
        const page = await api.get<{ items: { status: string }[]; total: number }>('/experiments?pageSize=1&status=queued');
        const running = await api.get<{ total: number }>('/experiments?pageSize=1&status=running');
        log(`waiting: ${page.total} queued, ${running.total} running`);
        return page.total === 0 && running.total === 0;
      },
      3_600_000,
      'every experiment to end',
    ).finally(() => (submitting = false));
    await drained;
    await Promise.all(readers);
    const totalMs = performance.now() - t0;

    // the outcome of every experiment, from the API
    const status: Record<string, number> = {};
    const trialAttempts: Record<string, number> = {};
    for (const id of ids) {
      const e = await api.get<{ status: string; trials: { attempts: number }[] }>(`/experiments/${id}`);
      status[e.status] = (status[e.status] ?? 0) + 1;
      for (const t of e.trials) trialAttempts[String(t.attempts)] = (trialAttempts[String(t.attempts)] ?? 0) + 1;
    }
    // who did what, from the workers' logs
    const started = new Map<string, number>();
    const finalized = new Map<string, number>();
    const perWorker = platform.workers.map((w) => {
      let trials = 0;
      let finals = 0;
      for (const m of w
        .out()
        .matchAll(/\[trial ([0-9a-f-]{8,36}) \/ experiment ([0-9a-f-]{8,36})\] started \w+ \(attempt (\d+)\)/g)) {
        trials++;
        started.set(`${m[1]}/${m[2]}`, (started.get(`${m[1]}/${m[2]}`) ?? 0) + 1);
      }
      for (const m of w.out().matchAll(/experiment ([0-9a-f-]{36}) (succeeded|failed)/g)) {
        finals++;
        finalized.set(m[1]!, (finalized.get(m[1]!) ?? 0) + 1);
      }
      return { pid: w.proc.pid, trialsStarted: trials, experimentsFinalized: finals };
    });
    const endedOnce = ids.filter((id) => finalized.get(id) === 1).length;
    const requests = Object.values(latency).reduce((a, xs) => a + xs.length, 0);
    return {
      bench: 'load',
      date: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpu: os.cpus()[0]?.model ?? 'unknown',
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        node: process.version,
      },
      options: { ...o, onStatus: undefined },
      submitted: ids.length,
      wallMs: Math.round(totalMs),
      submitPhaseMs: Math.round(submitMs),
      api: {
        requests,
        requestsPerSecond: Math.round((requests / totalMs) * 1000 * 10) / 10,
        submitsPerSecond: Math.round((latency.submit!.length / submitMs) * 1000 * 10) / 10,
        latencyMs: Object.fromEntries(
          Object.entries(latency).map(([op, xs]) => [
            op,
            { n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), max: pct(xs, 100) },
          ]),
        ),
        errors,
      },
      experiments: { byStatus: status, trialsByAttempts: trialAttempts },
      checks: {
        everyExperimentEnded: ids.length === o.experiments && Object.keys(status).every((s) => TERMINAL.includes(s)),
        everyExperimentEndedOnce: endedOnce === ids.length,
        experimentsFinalizedMoreThanOnce: [...finalized.values()].filter((n) => n > 1).length,
        trialsStartedMoreThanOnce: [...started.values()].filter((n) => n > 1).length,
        workersShared: perWorker.filter((w) => w.trialsStarted > 0).length === perWorker.length,
      },
      workers: perWorker,
    };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    await platform.stop();
  }
}
