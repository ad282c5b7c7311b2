import { BadRequestException } from '@nestjs/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ZodValidationPipe } from '@abacus/core';
import { addSpecSchema } from '../add/add-experiment.schema';
import { scoreSpecSchema } from '../score/score-experiment.schema';
import { subtractSpecSchema } from '../subtract/subtract-experiment.schema';
import { createExperimentSchema } from './experiment.schemas';

const RUNS = { numRuns: 300 };
const pipe = new ZodValidationPipe(createExperimentSchema);

/** The pipe either returns a value or throws a 400 whose body lists issues with a path and a reason. */
function validatesOrReports(body: unknown): void {
  try {
    pipe.transform(body);
  } catch (err) {
    expect(err).toBeInstanceOf(BadRequestException);
    const res = (err as BadRequestException).getResponse() as { statusCode: number; issues: unknown };
    expect(res.statusCode).toBe(400);
    expect(Array.isArray(res.issues) && res.issues.length > 0).toBe(true);
    for (const i of res.issues as { path: unknown; message: unknown; code: unknown }[]) {
      expect(typeof i.path).toBe('string');
      expect((i.path as string).length).toBeGreaterThan(0);
      expect(typeof i.message).toBe('string');
      expect((i.message as string).length).toBeGreaterThan(0);
      expect(typeof i.code).toBe('string');
    }
  }
}

/** a double as a JSON body can carry it (JSON has no -0) */
const jsonDouble = (c: fc.DoubleConstraints) => fc.double(c).map((x) => (x === 0 ? 0 : x));

const kind = fc.constantFrom('score', 'subtract', 'add', 'divide', '');
const name = fc.string({ minLength: 1, maxLength: 12 });
const features = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/), { minLength: 1, maxLength: 6 });

const architecture = fc.record(
  {
    embeddingDim: fc.integer({ min: 1, max: 256 }),
    pooling: fc.constantFrom('sum', 'mean'),
    hidden: fc.array(fc.integer({ min: 1, max: 4096 }), { maxLength: 6 }),
    wide: fc.boolean(),
  },
  { requiredKeys: [] },
);
const training = fc.record(
  {
    epochs: fc.integer({ min: 1, max: 100 }),
    batchSize: fc.integer({ min: 16, max: 1 << 18 }),
    learningRate: jsonDouble({ min: 1e-6, max: 1, noNaN: true }),
    sparseOptimizer: fc.constantFrom('adagrad', 'adam'),
    validationFraction: jsonDouble({ min: 0, max: 0.5, noNaN: true }),
    patience: fc.integer({ min: 1, max: 20 }),
    seed: fc.integer({ min: 0, max: 2 ** 31 }),
  },
  { requiredKeys: [] },
);
const modelRef = fc.oneof(
  fc.record({ model: name }),
  fc.record(
    {
      sampleSet: name,
      features,
      architecture,
      training,
      testFrom: fc.integer(),
      filter: fc.record({ column: name, values: fc.array(name, { minLength: 1, maxLength: 3 }) }),
    },
    { requiredKeys: ['sampleSet'] },
  ),
);

const scoreSpec = fc.record(
  {
    sampleSet: name,
    features,
    positive: name,
    binning: fc.record(
      {
        prebins: fc.integer({ min: 2, max: 200 }),
        maxBins: fc.integer({ min: 2, max: 100 }),
        minBinShare: jsonDouble({ min: 0, max: 0.5, noNaN: true }),
        minCategoryShare: jsonDouble({ min: 0, max: 0.5, noNaN: true }),
        smoothing: jsonDouble({ min: 0, max: 10, noNaN: true }),
      },
      { requiredKeys: [] },
    ),
    psiSplitTime: jsonDouble({ noNaN: true, noDefaultInfinity: true }),
    featuresPerTrial: fc.integer({ min: 1, max: 10_000 }),
  },
  { requiredKeys: ['sampleSet'] },
);
const subtractSpec = fc.record(
  {
    model: modelRef,
    scorers: fc.uniqueArray(fc.constantFrom('iv', 'shuffle'), { minLength: 1 }),
    maxDrop: jsonDouble({ min: 0, max: 0.5, noNaN: true }),
    repeats: fc.integer({ min: 1, max: 50 }),
    folds: fc.integer({ min: 2, max: 50 }),
    alpha: jsonDouble({ min: 1e-6, max: 0.5, noNaN: true }),
    redundancyThreshold: jsonDouble({ min: 0, max: 1, noNaN: true }),
    retrainSeeds: fc.integer({ min: 0, max: 10 }),
    confirm: fc.boolean(),
    batchSize: fc.integer({ min: 1, max: 1000 }),
  },
  { requiredKeys: ['model'] },
);
const addSpec = fc.record(
  {
    base: modelRef,
    candidates: fc.oneof(features, fc.constant('auto' as const)),
    repeats: fc.integer({ min: 1, max: 50 }),
    folds: fc.integer({ min: 2, max: 50 }),
    alpha: jsonDouble({ min: 1e-6, max: 0.5, noNaN: true }),
    bootstrap: fc.integer({ min: 50, max: 5000 }),
    minGain: jsonDouble({ min: 0, max: 0.1, noNaN: true }),
    leaveOneIn: fc.boolean(),
    notify: fc.boolean(),
  },
  { requiredKeys: ['base', 'candidates'] },
);

describe('experiment spec schemas (property-based)', () => {
  it('arbitrary JSON bodies: a value or a 400 issue list, never another error', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => validatesOrReports(body)),
      RUNS,
    );
  });

  it('arbitrary JSON specs under every kind: a value or a 400 issue list, never another error', () => {
    fc.assert(
      fc.property(kind, fc.jsonValue(), fc.option(name), (k, spec, bl) =>
        validatesOrReports({ kind: k, businessLine: bl ?? 'feed', name: 'x', spec }),
      ),
      RUNS,
    );
  });

  it('valid specs with one field mangled still answer with issues, not exceptions', () => {
    const mangle = fc.tuple(fc.oneof(scoreSpec, subtractSpec, addSpec), fc.string({ maxLength: 12 }), fc.jsonValue());
    fc.assert(
      fc.property(mangle, kind, ([spec, key, value], k) =>
        validatesOrReports({ kind: k, businessLine: 'feed', spec: { ...spec, [key]: value } }),
      ),
      RUNS,
    );
  });

  const roundTrip = <T>(schema: { safeParse(v: unknown): { success: boolean; data?: T; error?: unknown } }, spec: unknown) => {
    const first = schema.safeParse(spec);
    expect(first.success, JSON.stringify(first.error)).toBe(true);
    // defaults applied once: the parsed spec (as stored, JSON) parses to itself
    const stored = JSON.parse(JSON.stringify(first.data));
    const second = schema.safeParse(stored);
    expect(second.success).toBe(true);
    expect(second.data).toEqual(first.data);
  };

  it('generated valid score specs parse and round-trip through JSON unchanged', () => {
    fc.assert(
      fc.property(scoreSpec, (spec) => roundTrip(scoreSpecSchema, spec)),
      RUNS,
    );
  });

  it('generated valid subtract specs parse and round-trip through JSON unchanged', () => {
    fc.assert(
      fc.property(subtractSpec, (spec) => roundTrip(subtractSpecSchema, spec)),
      RUNS,
    );
  });

  it('generated valid add specs parse and round-trip, also inside the request body', () => {
    fc.assert(
      fc.property(addSpec, (spec) => {
        roundTrip(addSpecSchema, spec);
        roundTrip(createExperimentSchema, { kind: 'add', businessLine: 'feed', spec });
      }),
      RUNS,
    );
  });
});
