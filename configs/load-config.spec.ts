import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildThreads, hostBatchThreads, hostFits, loadConfig, scoreThreads, scoreThreadsAlone, sizeWorkerThreadPool } from './load-config';

// the config files the tests write, removed afterwards
const dirs: string[] = [];
const tempFile = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-cfg-'));
  dirs.push(dir);
  return path.join(dir, 'c.json');
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('loadConfig', () => {
  it('applies defaults', () => {
    const c = loadConfig({}, { fresh: true });
    expect(c.ABACUS_API_PORT).toBe(3000);
    expect(c.ABACUS_RUNTIME_BACKEND).toBe('auto');
  });

  it('names the bad key and the reason', () => {
    expect(() => loadConfig({ ABACUS_API_PORT: 'abc' }, { fresh: true })).toThrow(/ABACUS_API_PORT: .*number/i);
    expect(() => loadConfig({ ABACUS_RUNTIME_BACKEND: 'tpu' }, { fresh: true })).toThrow(/ABACUS_RUNTIME_BACKEND/);
  });

  it('reads a JSON file and lets the environment win', () => {
    const file = tempFile();
    fs.writeFileSync(file, JSON.stringify({ ABACUS_API_PORT: 4000, ABACUS_QUEUE_PREFIX: 'x' }));
    const c = loadConfig({ ABACUS_CONFIG_FILE: file, ABACUS_QUEUE_PREFIX: 'y' }, { fresh: true });
    expect(c.ABACUS_API_PORT).toBe(4000);
    expect(c.ABACUS_QUEUE_PREFIX).toBe('y');
  });

  it('rejects unknown keys in the file', () => {
    const file = tempFile();
    fs.writeFileSync(file, JSON.stringify({ ABACUS_API_PROT: 1 }));
    expect(() => loadConfig({ ABACUS_CONFIG_FILE: file }, { fresh: true })).toThrow(/ABACUS_API_PROT/);
  });

  it('parses the access-control keys: CORS origins as a list, a rate limit, an API key of the right shape', () => {
    const c = loadConfig({}, { fresh: true });
    expect(c.ABACUS_CORS_ORIGINS).toEqual([]);
    expect(c.ABACUS_RATE_LIMIT_PER_MIN).toBe(600);
    const d = loadConfig(
      { ABACUS_CORS_ORIGINS: 'https://a.example.com, http://localhost:5173', ABACUS_RATE_LIMIT_PER_MIN: '5' },
      { fresh: true },
    );
    expect(d.ABACUS_CORS_ORIGINS).toEqual(['https://a.example.com', 'http://localhost:5173']);
    expect(d.ABACUS_RATE_LIMIT_PER_MIN).toBe(5);
    expect(() => loadConfig({ ABACUS_CORS_ORIGINS: 'https://a.example.com/path' }, { fresh: true })).toThrow(
      /ABACUS_CORS_ORIGINS\.0/,
    );
    expect(() => loadConfig({ ABACUS_API_KEY: 'secret' }, { fresh: true })).toThrow(/ABACUS_API_KEY: an Abacus API key/);
    expect(loadConfig({ ABACUS_API_KEY: `abk_${'a'.repeat(43)}` }, { fresh: true }).ABACUS_API_KEY).toMatch(/^abk_/);
  });
});

describe('sizeWorkerThreadPool', () => {
  it("sizes libuv's pool for the worker's fits unless UV_THREADPOOL_SIZE is set", () => {
    const env: NodeJS.ProcessEnv = {};
    const c = loadConfig({ ABACUS_WORKER_CONCURRENCY: '2', ABACUS_GPU_LANES: '3' }, { fresh: true });
    // on 16 cores: 2 trials x 4 fits at once (more than the 3 GPU lanes), twice over, 8 build and 16
    // scoring threads (a score experiment's, alone), and 4 for file reads
    expect(sizeWorkerThreadPool(c, env, 16)).toBe(44);
    expect(env.UV_THREADPOOL_SIZE).toBe('44');
    const set: NodeJS.ProcessEnv = { UV_THREADPOOL_SIZE: '4' };
    expect(sizeWorkerThreadPool(c, set, 16)).toBe(4);
    // on 2 cores, defaults (1 trial, 3 lanes): 1 x 3 x 2 + 2 + 2 + 4
    expect(sizeWorkerThreadPool(loadConfig({}, { fresh: true }), {}, 2)).toBe(14);
    // the thread counts set: as set, whatever the cores
    const set2 = loadConfig({ ABACUS_BUILD_THREADS: '3', ABACUS_SCORE_THREADS: '5' }, { fresh: true });
    expect(sizeWorkerThreadPool(set2, {}, 64)).toBe(4 + 8 + 3 + 5);
  });

  it('gives IV scoring the cores the build threads leave (2 to 64), or the counts set', () => {
    const c = loadConfig({}, { fresh: true });
    expect([2, 4, 16, 64, 200].map((cores) => [buildThreads(c, cores), scoreThreads(c, cores)])).toEqual([
      [2, 2],
      [4, 2],
      [8, 8],
      [8, 56],
      [8, 64],
    ]);
    const set = loadConfig({ ABACUS_BUILD_THREADS: '12', ABACUS_SCORE_THREADS: '3' }, { fresh: true });
    expect([buildThreads(set, 16), scoreThreads(set, 16)]).toEqual([12, 3]);
    expect(scoreThreads(loadConfig({ ABACUS_BUILD_THREADS: '12' }, { fresh: true }), 16)).toBe(4);
  });

  it('trains a batch of CPU fits min(4, cores) at once, each on its share of the runtime threads, or as set', () => {
    const c = loadConfig({}, { fresh: true });
    expect([1, 2, 3, 16, 64].map((cores) => [hostFits(c, cores), hostBatchThreads(c, cores)])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 4],
      [4, 16],
    ]);
    const set = loadConfig({ ABACUS_HOST_FITS: '1', ABACUS_RUNTIME_THREADS: '6' }, { fresh: true });
    expect([hostFits(set, 16), hostBatchThreads(set, 16)]).toEqual([1, 6]);
    expect(hostBatchThreads(loadConfig({ ABACUS_HOST_FITS: '4', ABACUS_RUNTIME_THREADS: '2' }, { fresh: true }), 16)).toBe(1);
  });

  it("gives a score experiment's scoring every core when no build runs beside it (2 to 64), or the count set", () => {
    const c = loadConfig({}, { fresh: true });
    expect([1, 2, 16, 64, 200].map((cores) => scoreThreadsAlone(c, cores))).toEqual([2, 2, 16, 64, 64]);
    expect(scoreThreadsAlone(loadConfig({ ABACUS_SCORE_THREADS: '3' }, { fresh: true }), 16)).toBe(3);
  });

  it('rejects a GPU lane count outside 1..16 and reads the borrow switch', () => {
    expect(() => loadConfig({ ABACUS_GPU_LANES: '0' }, { fresh: true })).toThrow(/ABACUS_GPU_LANES/);
    expect(loadConfig({}, { fresh: true }).ABACUS_GPU_BORROW).toBe(false);
    expect(loadConfig({ ABACUS_GPU_BORROW: 'true' }, { fresh: true }).ABACUS_GPU_BORROW).toBe(true);
  });
});
