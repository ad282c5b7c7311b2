import { describe, expect, it } from 'vitest';
import { verdictFor } from './verdict';

describe('verdictFor', () => {
  const minGain = 0.001;
  it('adopts only a significant gain at least minGain', () => {
    expect(verdictFor(0.004, 0.002, 0.006, minGain).verdict).toBe('adopt');
    expect(verdictFor(0.001, 0.0002, 0.0018, minGain).verdict).toBe('adopt');
    // significant but smaller than what a feature must give: not adopted
    expect(verdictFor(0.0006, 0.0001, 0.0011, minGain).verdict).toBe('inconclusive');
    // large but not significant
    expect(verdictFor(0.004, -0.001, 0.009, minGain).verdict).toBe('inconclusive');
  });

  it('rejects when the whole interval is below minGain, whatever its sign', () => {
    expect(verdictFor(0.0, -0.0005, 0.0005, minGain).verdict).toBe('reject');
    expect(verdictFor(0.0004, 0.0001, 0.0008, minGain).verdict).toBe('reject');
    expect(verdictFor(-0.01, -0.02, -0.005, minGain).verdict).toBe('reject');
  });

  it('never adopts and rejects at once', () => {
    for (let i = 0; i < 500; i++) {
      const est = (i % 41) / 10_000 - 0.001;
      const half = ((i * 7) % 23) / 10_000;
      const v = verdictFor(est, est - half, est + half, minGain);
      if (v.verdict === 'adopt') expect(est - half > 0 && est >= minGain).toBe(true);
      if (v.verdict === 'reject') expect(est + half < minGain).toBe(true);
    }
  });
});
