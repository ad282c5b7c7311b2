import { describe, expect, it } from 'vitest';
import { exactAuc } from './exact-auc';

describe('exactAuc', () => {
  it('counts ties as one half', () => {
    // pairs (pos,neg): (0.8,0.1)=1 (0.8,0.5)=1 (0.5,0.1)=1 (0.5,0.5)=0.5 -> 3.5/4
    expect(exactAuc([0.8, 0.5, 0.1, 0.5], [1, 1, 0, 0])).toBe(0.875);
    expect(exactAuc([1, 1, 1], [1, 0, 0])).toBe(0.5);
    expect(exactAuc([0.1, 0.9], [1, 0])).toBe(0);
  });
  it('matches the O(n^2) definition on random data and honours the mask', () => {
    const s: number[] = [];
    const l: number[] = [];
    for (let i = 0; i < 300; i++) {
      s.push(Math.round(Math.sin(i * 12.9898) * 10));
      l.push(Math.cos(i * 78.233) > 0.3 ? 1 : 0);
    }
    const mask = (r: number): boolean => r % 3 !== 0;
    let w = 0;
    let n = 0;
    for (let i = 0; i < 300; i++)
      for (let j = 0; j < 300; j++)
        if (mask(i) && mask(j) && l[i] === 1 && l[j] === 0) {
          n++;
          w += s[i] > s[j] ? 1 : s[i] === s[j] ? 0.5 : 0;
        }
    expect(exactAuc(s, l, mask)).toBeCloseTo(w / n, 12);
    expect(exactAuc([1, 2], [1, 1])).toBeNaN();
  });
});
