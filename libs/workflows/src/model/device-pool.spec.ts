import { describe, expect, it } from 'vitest';
import { DevicePool, onDevices } from './device-pool';

describe('DevicePool', () => {
  it('hands each GPU to one trial at a time and queues the rest', async () => {
    const pool = new DevicePool(2);
    const a = await pool.acquire();
    const b = await pool.acquire();
    expect([a, b].sort()).toEqual([0, 1]);
    let third: number | undefined = -1;
    const waiting = pool.acquire().then((d) => (third = d));
    await Promise.resolve();
    expect(third).toBe(-1);
    pool.release(b);
    await waiting;
    expect(third).toBe(b);
  });

  it('has no device off the GPU', async () => {
    expect(await new DevicePool(0).acquire()).toBeUndefined();
  });
});

describe('onDevices', () => {
  const tracker = () => {
    const running = new Map<number | undefined, number>();
    let peak = 0;
    const peakOn = new Map<number | undefined, number>();
    const task =
      (i: number, ms: number, fail = false) =>
      async (d: number | undefined) => {
        running.set(d, (running.get(d) ?? 0) + 1);
        peakOn.set(d, Math.max(peakOn.get(d) ?? 0, running.get(d)!));
        peak = Math.max(
          peak,
          [...running.values()].reduce((a, b) => a + b, 0),
        );
        await new Promise((r) => setTimeout(r, ms));
        running.set(d, running.get(d)! - 1);
        if (fail) throw new Error(`task ${i} failed`);
        return { i, d };
      };
    return { task, peak: () => peak, peakOn, running };
  };

  it('runs lanes at a time on the own GPU and borrows the free ones, results in task order', async () => {
    const pool = new DevicePool(3, 2, true);
    const own = await pool.acquire();
    const busy = await pool.acquire(); // another trial holds this one
    const t = tracker();
    const out = await onDevices(
      pool,
      own,
      Array.from({ length: 7 }, (_, i) => t.task(i, 5 + ((i * 7) % 5))),
    );
    expect(out.map((r) => r.i)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // own (2 lanes) + the one free GPU (2 lanes); never the busy one
    expect(t.peak()).toBe(4);
    expect(new Set(out.map((r) => r.d))).toEqual(new Set([own, 2]));
    expect(out.some((r) => r.d === busy)).toBe(false);
    expect(Math.max(...t.peakOn.values())).toBe(2);
    // the borrowed GPU went back to the pool
    expect(pool.tryAcquire()).toBe(2);
  });

  it('borrows no more GPUs than the tasks need', async () => {
    const pool = new DevicePool(4, 3, true);
    const own = await pool.acquire();
    const t = tracker();
    await onDevices(pool, own, [t.task(0, 1), t.task(1, 1), t.task(2, 1), t.task(3, 1)]);
    // 4 tasks: own (3 lanes) + one borrowed
    expect(t.peakOn.size).toBe(2);
  });

  it('keeps to the own GPU unless the pool lets trials borrow', async () => {
    const pool = new DevicePool(2, 2);
    const own = await pool.acquire();
    const t = tracker();
    const out = await onDevices(
      pool,
      own,
      Array.from({ length: 5 }, (_, i) => t.task(i, 2)),
    );
    expect(out.map((r) => r.i)).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(out.map((r) => r.d))).toEqual(new Set([own]));
    expect(t.peak()).toBe(2);
  });

  it('runs one at a time off the GPU with one host fit (whatever the GPU lanes)', async () => {
    const pool = new DevicePool(0, 4);
    const t = tracker();
    const out = await onDevices(pool, await pool.acquire(), [t.task(0, 2), t.task(1, 1), t.task(2, 1)]);
    expect(out.map((r) => r.i)).toEqual([0, 1, 2]);
    expect(t.peak()).toBe(1);
  });

  it('runs hostFits at a time off the GPU (lanes asked for or not), results in task order', async () => {
    const pool = new DevicePool(0, 3, false, 0, false, true, 2);
    for (const lanes of [undefined, 5]) {
      const t = tracker();
      const out = await onDevices(pool, undefined, [t.task(0, 30), t.task(1, 5), t.task(2, 5), t.task(3, 5)], lanes);
      expect(out.map((r) => r.i)).toEqual([0, 1, 2, 3]);
      expect(out.every((r) => r.d === undefined)).toBe(true);
      expect(t.peak()).toBe(2);
    }
    // a failure off the GPU: nothing new starts, the running one finishes, then it throws
    const t = tracker();
    const started: number[] = [];
    const tasks = Array.from({ length: 5 }, (_, i) => (d: number | undefined) => {
      started.push(i);
      return t.task(i, i === 0 ? 2 : 20, i === 0)(d);
    });
    await expect(onDevices(pool, undefined, tasks)).rejects.toThrow('task 0 failed');
    expect(started).toEqual([0, 1]);
    expect([...t.running.values()].every((n) => n === 0)).toBe(true);
    expect(() => new DevicePool(0, 1, false, 0, false, true, 0)).toThrow('hostFits must be a positive integer');
    // a caller may ask for one at a time off the GPU (the prune's warm checks)
    const one = tracker();
    await onDevices(pool, undefined, [one.task(0, 5), one.task(1, 5), one.task(2, 5)], undefined, 1);
    expect(one.peak()).toBe(1);
  });

  it('after a failure starts no new task, waits for the running ones, then throws and hands borrowed GPUs back', async () => {
    const pool = new DevicePool(2, 1, true);
    const own = await pool.acquire();
    const t = tracker();
    const started: number[] = [];
    const tasks = Array.from({ length: 6 }, (_, i) => (d: number | undefined) => {
      started.push(i);
      return t.task(i, i === 0 ? 2 : 20, i === 0)(d);
    });
    await expect(onDevices(pool, own, tasks)).rejects.toThrow('task 0 failed');
    // task 1 was running on the borrowed GPU when task 0 failed: it finished, nothing else began
    expect(started).toEqual([0, 1]);
    expect([...t.running.values()].every((n) => n === 0)).toBe(true);
    expect(pool.tryAcquire()).toBe(1);
  });

  it('rejects a lane count that is not a positive integer', () => {
    expect(() => new DevicePool(1, 0)).toThrow('lanes must be a positive integer');
  });
});
