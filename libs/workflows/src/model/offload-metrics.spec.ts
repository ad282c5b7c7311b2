import { describe, expect, it } from 'vitest';
import type { RuntimeModel } from '@abacus/runtime';
import { offloadMetrics } from './model-trainer';

const withCache = (embeddingCache: unknown) => ({ embeddingCache }) as unknown as RuntimeModel;

describe('offloadMetrics', () => {
  it('says nothing when the tables are on the device', () => {
    expect(offloadMetrics(withCache(undefined))).toEqual({});
  });

  it('names the host-memory placement, the cache and its hit rate', () => {
    const m = offloadMetrics(withCache({ rows: 1000, tableRows: 8000, loads: 250, writebacks: 40, hits: 750 }));
    expect(m).toEqual({ embeddingTables: { placement: 'host memory', cacheRows: 1000, tableRows: 8000, hitRate: 0.75, loads: 250, writebacks: 40 } });
  });

  it('reports a hit rate of 0 before any fill', () => {
    expect(offloadMetrics(withCache({ rows: 10, tableRows: 100, loads: 0, writebacks: 0, hits: 0 })).embeddingTables?.hitRate).toBe(0);
  });
});
