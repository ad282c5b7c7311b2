import { describe, expect, it } from 'vitest';
import { wilsonInterval } from './wilson-interval';

describe('wilsonInterval', () => {
  it('matches published values', () => {
    // 0 of 20: [0, 0.1611]; 20 of 20: [0.8389, 1]; 8 of 10: [0.4902, 0.9433] (Newcombe 1998, method 3)
    const zero = wilsonInterval(0, 20);
    expect(zero.ciLow).toBe(0);
    expect(zero.ciHigh).toBeCloseTo(0.1611, 4);
    const all = wilsonInterval(20, 20);
    expect(all.ciLow).toBeCloseTo(0.8389, 4);
    expect(all.ciHigh).toBeCloseTo(1, 10);
    const eight = wilsonInterval(8, 10);
    expect(eight.ciLow).toBeCloseTo(0.4902, 4);
    expect(eight.ciHigh).toBeCloseTo(0.9433, 4);
  });

  it('says nothing about an empty sample', () => {
    expect(wilsonInterval(0, 0)).toMatchObject({ ciLow: 0, ciHigh: 1 });
  });
});
