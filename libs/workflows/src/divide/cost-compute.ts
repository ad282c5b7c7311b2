import os from 'node:os';
import type { CostMeasureJob } from '@abacus/queue';
import { cudaDeviceNames, resolveBackend, type BackendChoice } from '@abacus/runtime';
import { clockOf, defaultComputeRows, measureCompute, type ComputeMeasurement } from './cost-meter';

/** Where a compute measurement ran: the process, its host and backend, the clock it timed with. */
export interface MeasuredWhere {
  process: 'api' | 'worker';
  host: string;
  pid: number;
  backend: string;
  clock: 'wall' | 'cpu' | 'device';
  /** the GPU's name on the cuda backend */
  gpu: string | null;
}

/** One compute measurement's figures per input, with where and how it ran (a cost job's result). */
export interface ComputeRun {
  where: MeasuredWhere;
  rows: number;
  /** per input name; the timings of each round are left out */
  measurements: Record<string, Omit<ComputeMeasurement, 'allMs' | 'withoutMs'>>;
}

// measurements of one process run one at a time: two timings side by side would distort each other
let serial: Promise<unknown> = Promise.resolve();

/**
 * Times the forward of `job.inputs` with and without each input (`measureCompute`, fitted design) on
 * this process's backend, after any measurement this process is already running.
 */
export function runComputeMeasurement(
  job: Omit<CostMeasureJob, 'requestId'>,
  at: { process: 'api' | 'worker'; backend: BackendChoice; threads: number },
): Promise<ComputeRun> {
  const run = serial.then(async (): Promise<ComputeRun> => {
    const o = {
      backend: at.backend,
      threads: at.threads,
      rows: defaultComputeRows({ backend: at.backend, threads: at.threads, rows: job.rows }),
      repeats: job.repeats,
      ...(job.architecture ? { architecture: job.architecture } : {}),
    };
    const got = await measureCompute(job.inputs, o);
    const backend = resolveBackend(at.backend);
    const measurements: ComputeRun['measurements'] = {};
    for (const [name, m] of got) {
      const { allMs: _a, withoutMs: _w, ...rest } = m;
      measurements[name] = rest;
    }
    return {
      where: {
        process: at.process,
        host: os.hostname(),
        pid: process.pid,
        backend,
        clock: clockOf(o),
        gpu: backend === 'cuda' ? (cudaDeviceNames()[0] ?? null) : null,
      },
      rows: o.rows,
      measurements,
    };
  });
  serial = run.catch(() => undefined);
  return run;
}

/** The worker's handler of `costs.measure` / `costs.measure-gpu`: the measurement on its backend. */
export class CostMeasureHandler {
  constructor(private readonly at: { backend: BackendChoice; threads: number }) {}

  handle(payload: CostMeasureJob): Promise<ComputeRun> {
    return runComputeMeasurement(payload, { process: 'worker', ...this.at });
  }
}
