import { describe, expect, it } from 'vitest';
import { renderMultiply } from './experiment.command';

const arm = (strategy: string, sources: string[], validation: number, test: number, verdict: string) => ({
  strategy,
  sources,
  auc: 0.7,
  logloss: 0.4,
  trainRows: 1000,
  perSeed: [{ deltaAuc: test }],
  deltaAuc: { delta: test, ciLow: test - 0.01, ciHigh: test + 0.01 },
  validation: { delta: validation, ciLow: validation - 0.01, ciHigh: validation + 0.01 },
  verdict,
});
const result = (best: unknown) => ({
  testFrom: 800,
  testRows: 500,
  validationFrom: 700,
  validationRows: 200,
  baseline: { auc: 0.68, logloss: 0.41, trainRows: 1000, validationAuc: 0.69 },
  sources: [],
  results: [
    arm('union', ['feed', 'search'], 0.042, 0.055, 'recommended'),
    arm('pretrain_finetune', ['feed'], 0.01, 0.02, 'no gain'),
  ],
  rule: 'the rule',
  ...(best === undefined ? {} : { best }),
});

describe('experiment show: multiply', () => {
  it('names the best arm, chosen on validation, with its test ΔAUC', () => {
    const out = renderMultiply(
      result({ strategy: 'union', sources: ['feed', 'search'], chosenOn: 'validation', validationDelta: 0.042, deltaAuc: 0.055 }),
    ).join('\n');
    expect(out).toContain('best: union with feed + search (chosen on the validation split: ΔAUC 0.04200; test ΔAUC 0.05500)');
  });

  it('says so when no arm is recommended', () => {
    expect(renderMultiply(result(null)).join('\n')).toMatch(/best: none \(no arm is recommended on the validation split/);
  });

  it('prints no best line for results of versions that had none', () => {
    expect(renderMultiply(result(undefined)).join('\n')).not.toMatch(/best:/);
  });
});
