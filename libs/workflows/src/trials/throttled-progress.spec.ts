import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThrottledProgress } from './throttled-progress';

afterEach(() => vi.useRealTimers());

describe('ThrottledProgress', () => {
  it('writes the first report at once, then the latest at most every minMs, never two at a time', async () => {
    vi.useFakeTimers();
    const written: string[] = [];
    let active = 0;
    let most = 0;
    const p = new ThrottledProgress(async (_f, m) => {
      active++;
      most = Math.max(most, active);
      await new Promise((r) => setTimeout(r, 10));
      written.push(m);
      active--;
    }, 100);
    const first = p.report(0.1, 'a');
    for (const m of ['b', 'c', 'd']) void p.report(0.2, m);
    await vi.advanceTimersByTimeAsync(10);
    await first;
    expect(written).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(200);
    // b and c were replaced by d
    expect(written).toEqual(['a', 'd']);
    for (let i = 0; i < 50; i++) {
      void p.report(0.5, `e${i}`);
      await vi.advanceTimersByTimeAsync(5);
    }
    // 250 ms of reports every 5 ms: about one write every 100 ms
    expect(written.length).toBeGreaterThanOrEqual(3);
    expect(written.length).toBeLessThanOrEqual(5);
    expect(most).toBe(1);
    void p.report(0.9, 'last');
    const closing = p.close();
    await vi.advanceTimersByTimeAsync(50);
    await closing;
    expect(written.at(-1)).toBe('last');
    const n = written.length;
    await p.report(1, 'after close');
    await vi.advanceTimersByTimeAsync(500);
    expect(written.length).toBe(n);
  });

  it('drops what waits when closed without flushing, and a failed write does not fail the trial', async () => {
    const written: string[] = [];
    const p = new ThrottledProgress(async (_f, m) => {
      if (m === 'bad') throw new Error('database down');
      written.push(m);
    }, 1000);
    await expect(p.report(0.1, 'bad')).resolves.toBeUndefined();
    void p.report(0.2, 'waiting');
    await p.close(false);
    expect(written).toEqual([]);
  });
});
