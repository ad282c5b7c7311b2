import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes';
import { waitUntil } from '../support/test-env';

// scripts/gpu-host.sh runs each worker under the supervisor loop it defines in SUPERVISE: the exact
// text is taken from the script and run here with a stand-in worker.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-supervise-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('gpu-host.sh worker supervision', () => {
  it('starts the worker again when it exits non-zero (75 after a GPU fault); SIGTERM stops worker and loop', async () => {
    const script = fs.readFileSync(path.join(ROOT, 'scripts/gpu-host.sh'), 'utf8');
    const m = /^SUPERVISE='([\s\S]*?)^done'$/m.exec(script);
    expect(m, 'SUPERVISE in scripts/gpu-host.sh').not.toBeNull();
    const supervise = execFileSync('bash', ['-c', `${m![0]}\nprintf %s "$SUPERVISE"`], { encoding: 'utf8' });
    const count = path.join(dir, 'runs');
    const pidFile = path.join(dir, 'worker.pid');
    const workerPid = path.join(dir, 'child.pid');
    // exits 75 on its first two runs, then stays up like a healthy worker
    const worker = `n=$(cat ${count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${count}; echo "run $n"; [ $n -lt 3 ] && exit 75; echo $$ > ${workerPid}; exec sleep 60`;
    const loop = spawn('bash', ['-c', supervise, pidFile, 'bash', '-c', worker], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    loop.stdout.on('data', (d) => (out += String(d)));
    await waitUntil(async () => fs.existsSync(workerPid) && fs.readFileSync(workerPid, 'utf8').trim() !== '', 20_000, 'the third run');
    expect(out).toContain('run 3');
    expect(out.match(/worker exited with status 75: restarting it/g)).toHaveLength(2);
    expect(Number(fs.readFileSync(pidFile, 'utf8'))).toBe(loop.pid);
    const child = Number(fs.readFileSync(workerPid, 'utf8'));
    expect(alive(child)).toBe(true);
    const exited = new Promise<number | null>((resolve) => loop.once('exit', (code) => resolve(code)));
    loop.kill('SIGTERM');
    expect(await exited).toBe(0);
    await waitUntil(async () => !alive(child), 5_000, 'the worker to stop with its loop');
    expect(fs.readFileSync(count, 'utf8').trim()).toBe('3');
  });
});
