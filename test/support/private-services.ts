import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './processes';
import { waitUntil } from './test-env';

/**
 * Redis and Postgres servers of a test's own, on spare loopback ports, for tests that stop and
 * restart them: the shared servers other tests use are never touched. Each is removed again by
 * stop(), and killed at process exit if a test died before calling it.
 */
export interface PrivateService {
  port: number;
  /** Redis: redis://127.0.0.1:PORT; Postgres: postgres://postgres@127.0.0.1:PORT (no database) */
  url: string;
  /** stops the server and starts it again on the same port (Redis comes back empty: no persistence) */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const atExit = new Set<() => void>();
process.once('exit', () => atExit.forEach((f) => f()));

async function answers(port: number, probe: string, expect: RegExp): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.setTimeout(1000);
    s.on('connect', () => s.write(probe));
    s.on('data', (d) => {
      got += String(d);
      if (expect.test(got)) {
        s.destroy();
        resolve(true);
      }
    });
    s.on('timeout', () => (s.destroy(), resolve(false)));
    s.on('error', () => resolve(false));
    s.on('close', () => resolve(expect.test(got)));
  });
}

export async function startPrivateRedis(): Promise<PrivateService> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-redis-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  let log = '';
  const start = async () => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (d) => (log += String(d)));
    child.stderr?.on('data', (d) => (log += String(d)));
    await waitUntil(() => answers(port, 'PING\r\n', /\+PONG/), 10_000, `private redis on ${port}\n${log}`);
  };
  const halt = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  };
  const kill = () => child?.kill('SIGKILL');
  atExit.add(kill);
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    restart: async () => {
      await halt();
      await start();
    },
    stop: async () => {
      await halt();
      atExit.delete(kill);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** initdb and pg_ctl from PATH, else from Debian's versioned directory. */
function pgBin(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (fs.existsSync(path.join(root, v, 'bin', name))) return path.join(root, v, 'bin', name);
  throw new Error(`${name} not found on PATH or under ${root}/*/bin`);
}

/** Postgres refuses to run as root: run its tools as the postgres user then. */
function asPostgresUser(dir: string): SpawnOptions {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  fs.chownSync(dir, uid, gid);
  return { uid, gid };
}

function run(cmd: string, args: string[], opts: SpawnOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout?.on('data', (d) => (out += String(d)));
    c.stderr?.on('data', (d) => (out += String(d)));
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out}`))));
  });
}

export async function startPrivatePostgres(): Promise<PrivateService> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-pg-'));
  const opts = asPostgresUser(dir);
  const data = path.join(dir, 'data');
  const port = await freePort();
  await run(pgBin('initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], opts);
  // no fsync: a throwaway cluster needs no durability, and it keeps restarts fast
  const serverOpts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  const pgCtl = (...args: string[]) => run(pgBin('pg_ctl'), ['-D', data, '-w', '-t', '30', ...args], opts);
  const start = () => pgCtl('-o', serverOpts, '-l', path.join(dir, 'server.log'), 'start');
  const kill = () => {
    spawnSync(pgBin('pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { ...opts, stdio: 'ignore' });
  };
  atExit.add(kill);
  await start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}`,
    restart: async () => {
      await pgCtl('-m', 'fast', 'stop');
      await start();
    },
    stop: async () => {
      await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
      atExit.delete(kill);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
