import { describe, expect, it } from 'vitest';
import {
  featuresQuery,
  formatDelivery,
  formatFractions,
  formatSignals,
  groupModels,
  hasFeatureFilters,
  parseFeaturesSearch,
  parseModelsSearch,
  placeFieldIssues,
  summarizeProvenance,
  switchLogPage,
  verdictTone,
  versionLabel,
} from './catalog';

describe('features search parameters', () => {
  it('keeps the filters the api accepts and drops the rest', () => {
    expect(
      parseFeaturesSearch({ q: ' age ', line: 'feed', kind: 'numeric', owner: 'ana', role: 'candidate', page: '3' }),
    ).toEqual({ q: 'age', line: 'feed', kind: 'numeric', owner: 'ana', role: 'candidate', page: 3 });
    expect(parseFeaturesSearch({ q: '', line: 'Bad Line', kind: 'float', role: 'maybe', page: '1', owner: '   ' })).toEqual({});
    expect(parseFeaturesSearch({ page: 'x', q: 'x'.repeat(201) })).toEqual({});
  });

  it('builds the api query: name, businessLine, kind, owner, role, page, pageSize', () => {
    expect(featuresQuery({ q: 'a b', line: 'feed', kind: 'multi_id', owner: 'ana', role: 'in-model', page: 2 })).toBe(
      'name=a+b&businessLine=feed&kind=multi_id&owner=ana&role=in-model&page=2&pageSize=25',
    );
    expect(featuresQuery({})).toBe('page=1&pageSize=25');
  });

  it('knows when the list is filtered (the page number alone is not a filter)', () => {
    expect(hasFeatureFilters({ page: 2 })).toBe(false);
    expect(hasFeatureFilters({ role: 'candidate' })).toBe(true);
  });

  it('reads the models page line', () => {
    expect(parseModelsSearch({ line: 'feed' })).toEqual({ line: 'feed' });
    expect(parseModelsSearch({ line: '../x' })).toEqual({});
  });
});

describe('provenance', () => {
  it('colours verdicts by what they mean for the feature', () => {
    expect(verdictTone('adopt')).toBe('good');
    expect(verdictTone('kept')).toBe('good');
    expect(verdictTone('removable')).toBe('bad');
    expect(verdictTone('reject')).toBe('bad');
    expect(verdictTone('inconclusive')).toBe('neutral');
    expect(verdictTone('weak')).toBe('neutral');
    expect(verdictTone('pending')).toBe('pending');
  });

  it('sums the verdicts up, most frequent first, and says when only a page is counted', () => {
    expect(summarizeProvenance([])).toBe('not measured by any experiment yet');
    expect(summarizeProvenance([{ verdict: 'kept' }, { verdict: 'adopt' }, { verdict: 'kept' }])).toBe(
      '3 experiments: 2 kept, 1 adopt',
    );
    expect(summarizeProvenance([{ verdict: 'strong' }], 1)).toBe('1 experiment: 1 strong');
    expect(summarizeProvenance([{ verdict: 'strong' }], 30)).toBe('30 experiments: 1 strong on this page');
  });
});

describe('models', () => {
  const m = (businessLine: string, name: string, version: number, tier: number | null = null) => ({
    businessLine,
    name,
    version,
    tier,
  });

  it('groups versions by line and name, newest version first', () => {
    const groups = groupModels([
      m('feed', 'ctr', 1),
      m('search', 'ctr', 1),
      m('feed', 'ctr', 3, 1),
      m('feed', 'base', 2),
      m('feed', 'ctr', 2, 0),
    ]);
    expect(groups.map((g) => g.key)).toEqual(['feed/base', 'feed/ctr', 'search/ctr']);
    expect(groups[1].versions.map((v) => v.version)).toEqual([3, 2, 1]);
  });

  it('labels divide tiers and plain versions', () => {
    expect(versionLabel({ version: 4, tier: 2 })).toBe('tier-2 (v4)');
    expect(versionLabel({ version: 4, tier: null })).toBe('v4');
    expect(versionLabel({ version: 1, tier: 0 })).toBe('tier-0 (v1)');
  });

  it('formats cost fractions per resource', () => {
    expect(formatFractions({ storage: 0.5, communication: 0.504, compute: 0.4 })).toBe(
      'storage 50% · communication 50% · compute 40%',
    );
    expect(formatFractions(null)).toBe('—');
    expect(formatFractions({ storage: 'x' })).toBe('—');
  });
});

describe('serving', () => {
  it('formats load signals in a fixed order', () => {
    expect(formatSignals({ qps: 1200.4, cpu: 0.92, p99LatencyMs: 180.2, errorRate: 0.01 })).toBe(
      'cpu 92% · p99 180 ms · errors 1.0% · 1,200 qps',
    );
    expect(formatSignals(null)).toBe('—');
    expect(formatSignals({})).toBe('—');
  });

  it('describes webhook deliveries with their HTTP statuses', () => {
    const d = { id: 'd', attempts: 2, statusCodes: [0, 200], lastError: null, deliveredAt: 'x' };
    expect(formatDelivery({ ...d, status: 'delivered' })).toBe('delivered after 2 attempts (HTTP no answer, 200)');
    expect(formatDelivery({ ...d, status: 'failed', statusCodes: [500], attempts: 1, lastError: 'HTTP 500' })).toBe(
      'failed after 1 attempt (HTTP 500): HTTP 500',
    );
    expect(formatDelivery({ ...d, status: 'pending', attempts: 0, statusCodes: [] })).toBe('pending');
  });

  it('pages the switch log newest first and clamps the page', () => {
    const log = Array.from({ length: 45 }, (_, i) => i);
    expect(switchLogPage(log, 1, 20)).toEqual({ items: Array.from({ length: 20 }, (_, i) => 44 - i), pages: 3, page: 1 });
    expect(switchLogPage(log, 3, 20).items).toEqual([4, 3, 2, 1, 0]);
    expect(switchLogPage(log, 9, 20).page).toBe(3);
    expect(switchLogPage([], 1, 20)).toEqual({ items: [], pages: 1, page: 1 });
  });
});

describe('placing a 400 on form fields', () => {
  it('puts each issue on the longest field its path starts with, the rest in the summary', () => {
    const placed = placeFieldIssues(
      [
        { path: 'entityKey', message: 'column "x" is not in the file' },
        { path: 'costs.computeCost', message: 'too small' },
        { path: 'name', message: 'required' },
        { path: 'name', message: 'bad characters' },
        { path: 'other', message: 'unknown key' },
        { path: '', message: 'root' },
      ],
      ['name', 'entityKey', 'costs', 'costs.computeCost'],
    );
    expect(placed.byField).toEqual({
      entityKey: ['column "x" is not in the file'],
      'costs.computeCost': ['too small'],
      name: ['required', 'bad characters'],
    });
    expect(placed.summary.map((i) => i.path)).toEqual(['other', '']);
  });

  it('does not take a field for another one that merely starts with its name', () => {
    expect(placeFieldIssues([{ path: 'timeColumn', message: 'm' }], ['time']).summary).toHaveLength(1);
  });
});
