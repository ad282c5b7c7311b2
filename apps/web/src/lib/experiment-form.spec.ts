import { describe, expect, it } from 'vitest';
import { issuesOf } from './api';
import {
  buildBody,
  deepMerge,
  EXPERIMENT_KINDS,
  featureColumns,
  fieldFor,
  groupIssues,
  initialState,
  knobDefaults,
  parseAdvanced,
  placeIssues,
  validateForm,
  type FormState,
} from './experiment-form';

const subtract = (over: Partial<FormState> = {}): FormState => ({
  ...initialState('subtract', 'feed'),
  name: 'prune feed',
  sampleSet: 'feed-clicks',
  features: ['strong', 'weak', 'noise'],
  ...over,
});

describe('knob defaults come from the api schemas', () => {
  it('subtract: scorers, maxDrop, batchFraction, retrainSeeds, retrain, confirm', () => {
    expect(knobDefaults('subtract')).toEqual({
      scorers: ['iv', 'shuffle'],
      maxDrop: '0.001',
      batchFraction: '0.1',
      retrainSeeds: '5',
      retrain: 'auto',
      confirm: true,
    });
  });

  it('every kind: the defaults alone (plus a sample set) make a valid request', () => {
    for (const kind of EXPERIMENT_KINDS) {
      const s = { ...initialState(kind, 'feed'), sampleSet: 'feed-clicks', features: ['a'] };
      const r = validateForm(s);
      expect(r.ok, `${kind}: ${JSON.stringify(r)}`).toBe(true);
    }
  });

  it('divide tiers and multiply strategies and seeds as the inputs show them', () => {
    expect(knobDefaults('divide')).toMatchObject({ tiers: '1, 0.7, 0.5, 0.3', seeds: '3', publishAs: '' });
    expect(knobDefaults('multiply')).toMatchObject({
      sources: 'auto',
      strategies: ['union', 'pretrain_finetune', 'shared_embedding'],
      seeds: '1, 2, 3',
    });
    expect(knobDefaults('add')).toMatchObject({ candidates: 'auto', minGain: '0.001', leaveOneIn: false });
  });
});

describe('buildBody', () => {
  it('subtract from a sample set: the model, its checked columns plus named features, the knobs', () => {
    const r = buildBody(
      subtract({ extraFeatures: 'u_age, strong , ', knobs: { ...knobDefaults('subtract'), maxDrop: '0.005' } }),
    );
    expect(r).toEqual({
      body: {
        kind: 'subtract',
        name: 'prune feed',
        businessLine: 'feed',
        spec: {
          model: { sampleSet: 'feed-clicks', features: ['strong', 'weak', 'noise', 'u_age'] },
          scorers: ['iv', 'shuffle'],
          maxDrop: 0.005,
          batchFraction: 0.1,
          retrainSeeds: 5,
          retrain: 'auto',
          confirm: true,
        },
      },
    });
  });

  it('a registered model names no features; score keeps its sample set at the top of the spec', () => {
    const m = buildBody(subtract({ source: 'model', model: 'base' }));
    expect('body' in m && (m.body.spec as Record<string, unknown>).model).toEqual({ model: 'base' });
    const sc = buildBody({ ...initialState('score', 'feed'), sampleSet: 'ss', features: ['a'] });
    expect('body' in sc && sc.body.spec).toEqual({
      sampleSet: 'ss',
      features: ['a'],
      binning: { maxBins: 10, prebins: 20, minBinShare: 0.05 },
    });
  });

  it('an empty number input is left out (the default applies); text that is no number stays NaN for the schema to refuse', () => {
    const r = buildBody(subtract({ knobs: { ...knobDefaults('subtract'), maxDrop: '', retrainSeeds: 'x' } }));
    const spec = 'body' in r ? (r.body.spec as Record<string, unknown>) : {};
    expect('maxDrop' in spec).toBe(false);
    expect(spec.retrainSeeds).toBeNaN();
  });

  it('names: auto or a list; numbers: a list', () => {
    const add = buildBody({
      ...initialState('add', 'feed'),
      sampleSet: 's',
      features: ['a'],
      knobs: { ...knobDefaults('add'), candidates: 'x, y' },
    });
    expect('body' in add && (add.body.spec as Record<string, unknown>).candidates).toEqual(['x', 'y']);
    const div = buildBody({
      ...initialState('divide', 'feed'),
      sampleSet: 's',
      features: ['a'],
      knobs: { ...knobDefaults('divide'), tiers: '1, 0.5' },
    });
    expect('body' in div && (div.body.spec as Record<string, unknown>).tiers).toEqual([1, 0.5]);
  });

  it('the advanced JSON is merged over what the fields build', () => {
    const r = buildBody(subtract({ advanced: '{"folds": 5, "model": {"training": {"epochs": 3}}, "maxDrop": 0.01}' }));
    const spec = 'body' in r ? (r.body.spec as Record<string, unknown>) : {};
    expect(spec.folds).toBe(5);
    expect(spec.maxDrop).toBe(0.01);
    expect(spec.model).toEqual({ sampleSet: 'feed-clicks', features: ['strong', 'weak', 'noise'], training: { epochs: 3 } });
  });

  it('advanced JSON that does not parse, or is not an object, is an error of that field', () => {
    expect(parseAdvanced('')).toEqual({ ok: true, value: {} });
    expect(parseAdvanced('[1]')).toEqual({ ok: false, message: 'must be a JSON object, e.g. {"folds": 5}' });
    expect(parseAdvanced('{oops')).toMatchObject({ ok: false, message: expect.stringMatching(/^not valid JSON/) });
    expect(validateForm(subtract({ advanced: '{oops' }))).toMatchObject({
      ok: false,
      issues: [{ field: 'advanced', path: 'advanced' }],
    });
  });

  it('deepMerge replaces arrays and scalars, merges objects', () => {
    expect(deepMerge({ a: { b: 1, c: [1] }, d: 1 }, { a: { c: [2] }, e: 2 })).toEqual({ a: { b: 1, c: [2] }, d: 1, e: 2 });
  });
});

describe('validation issues placed next to their fields', () => {
  it('maxDrop 2: one issue on the maxDrop field, nothing to send', () => {
    const r = validateForm(subtract({ knobs: { ...knobDefaults('subtract'), maxDrop: '2' } }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issues).toEqual([{ path: 'spec.maxDrop', message: expect.stringMatching(/0\.5/), field: 'maxDrop' }]);
  });

  it('no feature checked: an issue on the features group; no sample set: on the sample set', () => {
    const r = validateForm(subtract({ features: [] }));
    expect(!r.ok && r.issues.map((i) => [i.path, i.field])).toEqual([['spec.model.features', 'features']]);
    const r2 = validateForm(subtract({ sampleSet: '' }));
    expect(!r2.ok && r2.issues.map((i) => i.field)).toEqual(['sampleSet']);
  });

  it('a bad name, a bad line, no scorer, a bad tier: each on its field', () => {
    const r = validateForm(
      subtract({ name: 'x'.repeat(201), businessLine: 'Feed', knobs: { ...knobDefaults('subtract'), scorers: [] } }),
    );
    expect(!r.ok && r.issues.map((i) => i.field).sort()).toEqual(['businessLine', 'name', 'scorers']);
    const d = validateForm({
      ...initialState('divide', 'feed'),
      sampleSet: 's',
      features: ['a'],
      knobs: { ...knobDefaults('divide'), tiers: '1, 0.5, 0.7' },
    });
    expect(!d.ok && d.issues.map((i) => [i.path, i.field])).toEqual([['spec.tiers.2', 'tiers']]);
  });

  it('discover: its defaults, a body the api accepts from a model, and a bad family or window on its field', () => {
    expect(knobDefaults('discover')).toMatchObject({ windows: '1d, 7d, 30d', maxCandidates: '2000', topK: '10', register: true });
    expect((knobDefaults('discover').families as string[]).length).toBe(13);
    const ok = validateForm({ ...initialState('discover', 'feed'), source: 'model', model: 'base' });
    expect(ok.ok && ok.body).toMatchObject({ kind: 'discover', businessLine: 'feed', spec: { base: { model: 'base' }, windows: ['1d', '7d', '30d'], topK: 10 } });
    const bad = validateForm({
      ...initialState('discover', 'feed'),
      source: 'model',
      model: 'base',
      knobs: { ...knobDefaults('discover'), families: [], windows: '7d, 7days' },
    });
    expect(!bad.ok && bad.issues.map((i) => [i.path, i.field]).sort()).toEqual([
      ['spec.families', 'families'],
      ['spec.windows.1', 'windows'],
    ]);
  });

  it('an unknown key from the advanced JSON has no field: it goes to the summary', () => {
    const r = validateForm(subtract({ advanced: '{"bogus": 1}' }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const { byField, summary } = groupIssues(r.issues);
    expect(byField).toEqual({});
    expect(summary.map((i) => i.path)).toEqual(['spec']);
  });

  it("the api's 400 paths: a named feature past the checked columns belongs to the 'more features' input", () => {
    const s = subtract({ extraFeatures: 'nope' });
    expect(fieldFor('spec.model.features.3', s)).toBe('extraFeatures');
    expect(fieldFor('spec.model.features.1', s)).toBe('features');
    expect(fieldFor('spec.model.features', s)).toBe('features');
    expect(fieldFor('spec.model.sampleSet', s)).toBe('sampleSet');
    expect(fieldFor('spec.model.training.epochs', s)).toBeNull();
    expect(fieldFor('(root)', s)).toBeNull();
    // with a registered model, the sample-set inputs are hidden: the model field takes the model's paths
    const m = subtract({ source: 'model', model: '' });
    expect(fieldFor('spec.model.model', m)).toBe('model');
    expect(fieldFor('spec.model.features', m)).toBeNull();
    expect(fieldFor('spec.sources.1', { ...initialState('multiply', 'feed') })).toBe('sources');
  });

  it('issuesOf reads the api error body, placeIssues and groupIssues sort them', () => {
    const body = {
      statusCode: 400,
      message: 'Validation failed',
      issues: [
        {
          path: 'spec.model.features.3',
          message: '"nope" is neither a column of sample set feed-clicks nor a registered feature',
          code: 'invalid_input',
        },
        { path: '(root)', message: 'odd', code: 'x' },
        { bad: true },
      ],
    };
    const issues = issuesOf(body);
    expect(issues).toHaveLength(2);
    const grouped = groupIssues(placeIssues(issues, subtract({ extraFeatures: 'nope' })));
    expect(grouped.byField).toEqual({ extraFeatures: [issues[0].message] });
    expect(grouped.summary.map((i) => i.path)).toEqual(['(root)']);
    expect(issuesOf({ message: 'x' })).toEqual([]);
    expect(issuesOf(null)).toEqual([]);
  });
});

describe('featureColumns', () => {
  it('leaves out the label, time and key columns and unsupported ones', () => {
    expect(
      featureColumns({
        schema: [
          { name: 'ts', kind: 'numeric' },
          { name: 'uid', kind: 'categorical' },
          { name: 'click', kind: 'numeric' },
          { name: 'a', kind: 'numeric' },
          { name: 'blob', kind: 'unsupported' },
          { name: 'b', kind: 'multi_id' },
        ],
        labelColumn: 'click',
        timeColumn: 'ts',
        keyColumns: ['uid'],
      }).map((c) => c.name),
    ).toEqual(['a', 'b']);
  });
});
