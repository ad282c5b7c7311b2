import { describe, expect, it } from 'vitest';
import {
  experimentsQuery,
  hasExperimentFilters,
  hasFilters,
  parseBankSearch,
  parseColumns,
  parseExperimentsSearch,
  parseNewExperimentSearch,
  safeRedirect,
  sampleSetQuery,
  validateBankFilters,
} from './search';

describe('data page filters ↔ URL ↔ api query', () => {
  it('parses a comma-separated column list: trimmed, empty items and repeats dropped', () => {
    expect(parseColumns(' strong, color,,strong ,')).toEqual(['strong', 'color']);
    expect(parseColumns('')).toEqual([]);
    expect(parseColumns(undefined)).toEqual([]);
  });

  it('reads the URL search: empty values dropped, page only when > 1 and whole', () => {
    expect(parseBankSearch({ line: 'feed', semantics: 'click->order', columns: 'a, b', page: 2 })).toEqual({
      line: 'feed',
      semantics: 'click->order',
      columns: 'a,b',
      page: 2,
    });
    expect(parseBankSearch({ line: '  ', semantics: '', columns: ' , ', page: 1 })).toEqual({});
    expect(parseBankSearch({ page: '3' })).toEqual({ page: 3 });
    expect(parseBankSearch({ page: 'x' })).toEqual({});
    expect(parseBankSearch({ page: 2.5 })).toEqual({});
    expect(parseBankSearch({ line: { nested: true } })).toEqual({});
  });

  it('builds the GET /sample-sets query the api understands', () => {
    expect(sampleSetQuery({})).toBe('page=1&pageSize=20');
    const q = new URLSearchParams(
      sampleSetQuery({ line: 'search', semantics: 'click->order', columns: 'strong, color', page: 3 }, 50),
    );
    expect(Object.fromEntries(q)).toEqual({
      businessLine: 'search',
      labelSemantics: 'click->order',
      hasColumns: 'strong,color',
      page: '3',
      pageSize: '50',
    });
    // '>' is encoded, so the semantics survive the URL
    expect(sampleSetQuery({ semantics: 'exposure->click' })).toContain('labelSemantics=exposure-%3Eclick');
  });

  it('validates filters as the api would, per field', () => {
    expect(validateBankFilters({ line: 'feed', semantics: 'exposure->click', columns: 'a,b' })).toEqual({});
    expect(validateBankFilters({ semantics: 'Exposure click' }).semantics).toMatch(/event->outcome/);
    expect(validateBankFilters({ line: 'Feed!' }).line).toMatch(/business line/);
    expect(validateBankFilters({ columns: `ok,${'x'.repeat(201)}` }).columns).toMatch(/200 characters/);
  });

  it('knows when filters are set', () => {
    expect(hasFilters({})).toBe(false);
    expect(hasFilters({ page: 2 })).toBe(false);
    expect(hasFilters({ columns: 'a' })).toBe(true);
  });

  it('experiments page: page in the URL, newest-first page query', () => {
    expect(parseExperimentsSearch({ page: '2' })).toEqual({ page: 2 });
    expect(parseExperimentsSearch({ page: '0' })).toEqual({});
    expect(experimentsQuery({})).toBe('page=1&pageSize=25');
    expect(experimentsQuery({ page: 4 }, 10)).toBe('page=4&pageSize=10');
  });

  it('experiments filters: kind, status, line, owner in the URL; values the api would refuse dropped', () => {
    expect(parseExperimentsSearch({ kind: 'subtract', status: 'running', line: 'feed', owner: ' ana ', page: 3 })).toEqual({
      kind: 'subtract',
      status: 'running',
      line: 'feed',
      owner: 'ana',
      page: 3,
    });
    expect(parseExperimentsSearch({ kind: 'bogus', status: 'done', line: 'Feed!', owner: '' })).toEqual({});
    expect(experimentsQuery({ kind: 'add', status: 'failed', line: 'feed', owner: 'a b' })).toBe(
      'kind=add&status=failed&businessLine=feed&owner=a+b&page=1&pageSize=25',
    );
    expect(hasExperimentFilters({ page: 2 })).toBe(false);
    expect(hasExperimentFilters({ owner: 'ana' })).toBe(true);
  });

  it('new experiment: the kind and line in the URL', () => {
    expect(parseNewExperimentSearch({ kind: 'divide', line: 'search' })).toEqual({ kind: 'divide', line: 'search' });
    expect(parseNewExperimentSearch({ kind: 'nope', line: 'BAD' })).toEqual({});
  });

  it('follows only same-app paths after sign-in', () => {
    expect(safeRedirect('/data?line=feed')).toBe('/data?line=feed');
    expect(safeRedirect('https://evil.example.com/')).toBe('/experiments');
    expect(safeRedirect('//evil.example.com/')).toBe('/experiments');
    expect(safeRedirect('/signin?redirect=/data')).toBe('/experiments');
    expect(safeRedirect(undefined)).toBe('/experiments');
  });
});
