import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Prng } from '@abacus/samples';
import { pairedSeedBootstrap } from '../stats/paired-bootstrap';
import { createExperimentSchema } from '../experiments/experiment.schemas';
import { MULTIPLY_RULE, labelRateFlag, multiplyVerdict, multiplySpecSchema } from './multiply-experiment.schema';
import { bestArm, compareArm, type SplitPredictions } from './multiply-compare.handler';

describe('multiply verdict rule', () => {
  it('recommends only with the interval above 0 and a gain on every seed', () => {
    expect(multiplyVerdict(0.001, 0.01, [0.004, 0.005, 0.003]).verdict).toBe('recommend');
    expect(multiplyVerdict(0.001, 0.01, [0.004, -0.001, 0.006]).verdict).toBe('no gain');
    expect(multiplyVerdict(-0.001, 0.01, [0.004, 0.005, 0.003]).verdict).toBe('no gain');
    expect(multiplyVerdict(-0.01, -0.001, [-0.004, -0.005, 0.001]).verdict).toBe('harmful');
  });
});

describe('label rate flag', () => {
  it('flags a source more than 3x or under a third of the target rate', () => {
    expect(labelRateFlag(0.12, 0.06)).toBeNull();
    expect(labelRateFlag(0.02, 0.06)).toBeNull();
    expect(labelRateFlag(0.19, 0.06)).toBe("label rate 0.1900 is 3.17× the target's 0.0600");
    expect(labelRateFlag(0.019, 0.06)).toContain('0.32×');
    expect(labelRateFlag(0, 0.06)).toContain('label rate 0.0000');
  });
});

describe('pairedSeedBootstrap', () => {
  const n = 4000;
  const rng = new Prng(3);
  const labels = new Float32Array(n);
  const signal = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    signal[i] = rng.next() * 2 - 1;
    labels[i] = rng.next() < 1 / (1 + Math.exp(-3 * signal[i])) ? 1 : 0;
  }
  // a model with more noise on the signal is worse, seed by seed
  const model = (noise: number, seed: number) => {
    const r = new Prng(seed);
    return Float32Array.from(signal, (s) => 1 / (1 + Math.exp(-(s + noise * (r.next() * 2 - 1)))));
  };

  it('is exactly 0 for identical models', () => {
    const a = [model(1, 1), model(1, 2)];
    const d = pairedSeedBootstrap(labels, a, a, { replicates: 100, seed: 1, alpha: 0.05 });
    expect(d.auc.delta).toBe(0);
    expect([d.auc.ciLow, d.auc.ciHigh]).toEqual([0, 0]);
    expect(d.perSeed).toEqual([0, 0]);
  });

  it('finds the better model on every seed, with an interval above 0 that holds the full-sample delta', () => {
    const worse = [model(2, 1), model(2, 2), model(2, 3)];
    const better = [model(0.2, 4), model(0.2, 5), model(0.2, 6)];
    const d = pairedSeedBootstrap(labels, worse, better, { replicates: 200, seed: 1, alpha: 0.05 });
    expect(d.perSeed.every((x) => x > 0)).toBe(true);
    expect(d.auc.delta).toBeCloseTo(d.perSeed.reduce((a, b) => a + b, 0) / 3, 12);
    expect(d.auc.ciLow).toBeGreaterThan(0);
    expect(d.auc.ciLow).toBeLessThanOrEqual(d.auc.delta);
    expect(d.auc.ciHigh).toBeGreaterThanOrEqual(d.auc.delta);
    const back = pairedSeedBootstrap(labels, better, worse, { replicates: 200, seed: 1, alpha: 0.05 });
    expect(back.auc.ciHigh).toBeLessThan(0);
    expect(multiplyVerdict(back.auc.ciLow, back.auc.ciHigh, back.perSeed).verdict).toBe('harmful');
  });
});

describe('compareArm: decided on validation, reported on test', () => {
  /** labels from a signal, and per seed a model's predictions with more or less noise on it */
  const split = (n: number, seed: number) => {
    const rng = new Prng(seed);
    const signal = Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
    const labels = Float32Array.from(signal, (s) => (rng.next() < 1 / (1 + Math.exp(-3 * s)) ? 1 : 0));
    const model = (noise: number, s: number) => {
      const r = new Prng(s);
      return Float32Array.from(signal, (x) => 1 / (1 + Math.exp(-(x + noise * (r.next() * 2 - 1)))));
    };
    return { labels, model };
  };
  const validation = split(3000, 11);
  const test = split(3000, 12);
  const preds = (s: ReturnType<typeof split>, noise: number, seed0: number): SplitPredictions => ({
    labels: s.labels,
    preds: [0, 1, 2].map((k) => s.model(noise, seed0 + k)),
  });
  const base = { validation: preds(validation, 1, 1), test: preds(test, 1, 1) };
  const opts = { replicates: 200, seed: 1, alpha: 0.05 };

  it('recommends from the validation split although the test split shows a loss, and reports the test ΔAUC', async () => {
    // better than the baseline on validation, worse on test
    const arm = { validation: preds(validation, 0.2, 20), test: preds(test, 2.5, 20) };
    const c = await compareArm(base, arm, opts);
    expect(c.validation.split).toBe('validation');
    expect(c.deltaAuc.split).toBe('test');
    expect(c.validation.ciLow).toBeGreaterThan(0);
    expect(c.validation.perSeed.every((d) => d > 0)).toBe(true);
    expect(c.deltaAuc.delta).toBeLessThan(0);
    expect(c.deltaAuc.ciHigh).toBeLessThan(0);
    expect(c.testPerSeed.every((d) => d < 0)).toBe(true);
    expect(c.verdict).toBe('recommend');
    expect({ verdict: c.verdict, reason: c.reason }).toEqual(
      multiplyVerdict(c.validation.ciLow, c.validation.ciHigh, c.validation.perSeed),
    );
    // the reported number is the test split's seed-averaged ΔAUC, not the validation one
    expect(c.deltaAuc.delta).toBeCloseTo(c.testPerSeed.reduce((a, b) => a + b, 0) / 3, 12);
    expect(c.deltaAuc.delta).not.toBeCloseTo(c.validation.delta, 3);
  });

  it('calls harmful what validation shows harmful, whatever the test split says', async () => {
    const arm = { validation: preds(validation, 2.5, 30), test: preds(test, 0.2, 30) };
    const c = await compareArm(base, arm, opts);
    expect(c.validation.ciHigh).toBeLessThan(0);
    expect(c.deltaAuc.ciLow).toBeGreaterThan(0);
    expect(c.verdict).toBe('harmful');
  });

  it('picks the best arm by its validation ΔAUC among the recommended ones, not by the test ΔAUC', () => {
    const arms = [
      { name: 'a', verdict: 'recommend', validation: { delta: 0.01 }, deltaAuc: { delta: 0.03 } },
      { name: 'b', verdict: 'recommend', validation: { delta: 0.02 }, deltaAuc: { delta: 0.001 } },
      { name: 'c', verdict: 'no gain', validation: { delta: 0.05 }, deltaAuc: { delta: 0.05 } },
    ];
    expect(bestArm(arms)?.name).toBe('b');
    expect(bestArm(arms.filter((a) => a.verdict !== 'recommend'))).toBeNull();
  });

  it('the rule says so', () => {
    expect(MULTIPLY_RULE).toMatch(/^decided on the validation split/);
    expect(MULTIPLY_RULE).toContain('largest validation ΔAUC');
    expect(MULTIPLY_RULE).toContain('measured on the test split');
  });
});

describe('multiply spec', () => {
  it('defaults to every strategy, per source, three seeds, unweighted and unfrozen', () => {
    const s = multiplySpecSchema.parse({ target: { sampleSet: 'm' }, sources: 'auto' });
    expect([s.strategies, s.perSource, s.seeds, s.sourceWeights, s.freezeEmbeddings]).toEqual([
      ['union', 'pretrain_finetune', 'shared_embedding'],
      true,
      [1, 2, 3],
      {},
      false,
    ]);
  });

  it('names the field of a bad value', () => {
    const r = multiplySpecSchema.safeParse({ target: { sampleSet: 'm' }, sources: ['a'], strategies: ['shared_table'] });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0].path).toEqual(['strategies', 0]);
    const w = multiplySpecSchema.safeParse({ target: { sampleSet: 'm' }, sources: ['a'], sourceWeights: { a: 0 } });
    expect(w.error!.issues[0].path).toEqual(['sourceWeights', 'a']);
    const both = multiplySpecSchema.safeParse({ target: { sampleSet: 'm', model: 'base' }, sources: ['a'] });
    expect(both.error!.issues[0].path).toEqual(['target', 'sampleSet']);
    const name = multiplySpecSchema.safeParse({ target: { sampleSet: 'm' }, sources: ['a'], embedding: { name: 'a b' } });
    expect(name.error!.issues[0].path).toEqual(['embedding', 'name']);
    const dup = multiplySpecSchema.safeParse({ target: { sampleSet: 'm' }, sources: ['a'], seeds: [1, 1] });
    expect(dup.error!.issues[0].path).toEqual(['seeds']);
  });
});

describe('configs/examples/multiply.json', () => {
  it('is a valid multiply submission', () => {
    const body: unknown = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'configs/examples/multiply.json'), 'utf8'));
    const r = createExperimentSchema.safeParse(body);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
    expect(r.data!.kind).toBe('multiply');
  });
});
