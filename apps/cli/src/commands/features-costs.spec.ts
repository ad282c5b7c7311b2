import { describe, expect, it } from 'vitest';
import { costCell, formatCostLedger, type CostLedgerView } from './features.command';

const none = { value: null, unit: '', source: null, measuredAt: null };

describe('features costs output', () => {
  it('marks each figure measured or declared, with its date', () => {
    expect(costCell({ value: 8, unit: 'bytes/entity', source: 'measured', measuredAt: '2026-11-23T04:00:00.000Z' })).toBe(
      '8.00 (m 2026-11-23)',
    );
    expect(costCell({ value: 400, unit: 'bytes/request', source: 'declared', measuredAt: null })).toBe('400 (d)');
    expect(costCell({ value: 0.125, unit: 'share', source: 'measured', measuredAt: null }, true)).toBe('12.5% (m)');
    expect(costCell(none)).toBe('-');
  });

  it('lists a feature without any figure as "no cost"', () => {
    const l: CostLedgerView = {
      businessLine: 'feed',
      model: null,
      candidatesPerRequest: 100,
      features: [
        {
          name: 'i_price',
          businessLine: 'feed',
          kind: 'numeric',
          entity: 'item',
          storage: { value: 4, unit: 'bytes/entity', source: 'measured', measuredAt: '2026-11-23T04:00:00.000Z' },
          communication: { value: 400, unit: 'bytes/request', source: 'measured', measuredAt: '2026-11-23T04:00:00.000Z' },
          compute: { value: 0.02, unit: 'share', source: 'measured', measuredAt: '2026-11-23T04:00:00.000Z' },
          noCost: false,
        },
        {
          name: 'orphan',
          businessLine: 'feed',
          kind: 'numeric',
          entity: null,
          storage: none,
          communication: none,
          compute: none,
          noCost: true,
        },
      ],
      unregistered: ['x_col'],
    };
    const out = formatCostLedger(l);
    expect(out).toMatch(/i_price\s+numeric\s+item\s+4\.00 \(m 2026-11-23\)\s+400 \(m 2026-11-23\)\s+2\.0% \(m 2026-11-23\)/);
    expect(out).toMatch(/orphan\s+numeric\s+\?\s+no cost/);
    expect(out).toContain('not in the registry (no ledger row): x_col');
  });
});
