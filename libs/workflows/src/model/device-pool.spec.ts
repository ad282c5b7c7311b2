import { describe, expect, it } from 'vitest';
import { DevicePool } from './device-pool';

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
