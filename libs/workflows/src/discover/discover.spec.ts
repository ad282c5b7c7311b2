import { describe, expect, it } from 'vitest';
import { featureExprSchema, parseExprText } from '@abacus/samples';
import { enumerateCandidates, type ColumnProfile } from './candidates';
import { binnedScore, binsOf, dropNearCopies, screenEncoding, screenScore, selectForward, type ScreenRows } from './screen';

const profile = (name: string, cls: ColumnProfile['cls'], distinct: number, extra: Partial<ColumnProfile> = {}): ColumnProfile => ({
  name,
  cls,
  distinct,
  min: cls === 'float' || cls === 'integer' ? 0 : null,
  key: false,
  ...extra,
});

describe('discover: candidates over feature-table features', () => {
  it('reads them by reference in pairs, crosses and partitions, by their own names, never as plain columns', () => {
    const c = enumerateCandidates(
      [
        profile('user_id', 'integer', 5_000, { key: true }),
        profile('d_region', 'string', 8),
        profile('@d_slot', 'string', 6, { ref: true }),
        profile('d_spend', 'float', 10_000),
        profile('@d_visits', 'float', 10_000, { ref: true }),
      ],
      new Set(),
      true,
      100_000,
      { windows: ['7d'] },
    );
    const byText = new Map(c.map((x) => [x.text, x]));
    expect(byText.get('d_spend / @d_visits')).toMatchObject({ columns: ['@d_visits', 'd_spend'], expr: { op: 'div', args: [{ col: 'd_spend' }, { ref: 'd_visits' }] } });
    expect(byText.get('cross(d_region, @d_slot, buckets: 128)')?.expr).toMatchObject({ args: [{ col: 'd_region' }, { ref: 'd_slot' }] });
    expect(byText.has('rate(by: [user_id, @d_slot], over: 7d)')).toBe(true);
    expect(byText.has('mean(@d_visits, by: user_id, over: 7d)')).toBe(true);
    expect(c.filter((x) => x.family === 'column').map((x) => x.text)).toEqual(['d_region', 'd_spend']);
    for (const x of c) expect(featureExprSchema.safeParse(x.expr).success, x.text).toBe(true);
  });
});

describe('discover: candidates', () => {
  const columns = [
    profile('impression_id', 'integer', 100_000, { key: true }),
    profile('user_id', 'integer', 5_000, { key: true }),
    profile('domain', 'string', 1, { key: true }),
    profile('i_category', 'string', 40),
    profile('d_region', 'string', 8),
    profile('d_slot', 'string', 6),
    profile('city', 'string', 5_000),
    profile('price', 'float', 10_000),
    profile('spend', 'float', 10_000),
    profile('visits', 'float', 10_000, { min: -1 }),
    profile('tags', 'list', 100),
  ];

  it('proposes every family over the right columns, each expression valid and named for the registry', () => {
    const c = enumerateCandidates(columns, new Set(['price', 'i_category']), true, 100_000);
    const texts = new Set(c.map((x) => x.text));
    for (const t of [
      'spend',
      'log(spend)',
      'price / spend',
      'price * visits',
      'spend - visits',
      'cross(d_region, d_slot, buckets: 128)',
      'cross(d_region, i_category, buckets: 1024)',
      'rate(by: [user_id, i_category], over: 7d)',
      'count(by: user_id, over: 1d)',
      'mean(price, by: user_id, over: 30d)',
      'since(by: user_id)',
      'freq(user_id)',
    ])
      expect(texts.has(t), t).toBe(true);
    // no plain column the base reads, no log of a possibly negative number, no history of an impression id or a constant key
    expect(texts.has('price')).toBe(false);
    expect(texts.has('log(visits)')).toBe(false);
    expect([...texts].some((t) => /impression_id|domain/.test(t))).toBe(false);
    // a high-cardinality category is not crossed
    expect([...texts].some((t) => t.startsWith('cross(') && t.includes('city'))).toBe(false);
    for (const x of c) {
      expect(featureExprSchema.parse(x.expr)).toEqual(x.expr);
      expect(parseExprText(x.text)).toEqual(x.expr);
      expect(x.name).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/);
      expect(x.name.length).toBeLessThanOrEqual(120);
    }
    expect(new Set(c.map((x) => x.name)).size).toBe(c.length);
    // without a time column: no aggregates
    expect(enumerateCandidates(columns, new Set(), false, 100_000).some((x) => ['rate', 'count', 'since', 'freq'].includes(x.family))).toBe(false);
  });

  it('caps the count with every family represented', () => {
    const many = Array.from({ length: 40 }, (_, i) => profile(`n${i}`, 'float', 1000));
    const c = enumerateCandidates([...many, ...columns], new Set(), true, 100_000, { maxCandidates: 300 });
    expect(c).toHaveLength(300);
    const families = new Set(c.map((x) => x.family));
    for (const f of ['column', 'log', 'ratio', 'product', 'difference', 'cross', 'rate', 'count', 'mean', 'since', 'freq']) expect(families.has(f as never), f).toBe(true);
  });
});

describe('discover: screen', () => {
  // 40,000 rows: the base logit knows x; the click also depends on c (categorical) and on r; noise does not matter
  let s = 7;
  const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0), s / 2 ** 32);
  const n = 40_000;
  const x = Float32Array.from({ length: n }, () => rnd() * 2 - 1);
  const r = Float32Array.from({ length: n }, () => rnd() * 2 - 1);
  const c = Int32Array.from({ length: n }, () => Math.floor(rnd() * 12));
  const noise = Float32Array.from({ length: n }, () => rnd());
  const noiseCat = Int32Array.from({ length: n }, () => Math.floor(rnd() * 50));
  const effect = Array.from({ length: 12 }, () => rnd() * 2 - 1);
  const rows: ScreenRows = { logit: new Float64Array(n), label: new Float32Array(n), half: new Uint8Array(n) };
  for (let i = 0; i < n; i++) {
    rows.logit[i] = -2 + x[i];
    const truth = -2 + x[i] + effect[c[i]] + 0.8 * r[i];
    rows.label[i] = rnd() < 1 / (1 + Math.exp(-truth)) ? 1 : 0;
    rows.half[i] = i % 2;
  }

  it('scores planted signal above noise, and noise about zero or below', () => {
    const cat = screenScore({ kind: 'categorical', ids: c }, rows).gain;
    const num = screenScore({ kind: 'numeric', values: r }, rows).gain;
    const nz = screenScore({ kind: 'numeric', values: noise }, rows).gain;
    const nc = screenScore({ kind: 'categorical', ids: noiseCat }, rows).gain;
    // what the base already has adds nothing
    const known = screenScore({ kind: 'numeric', values: x }, rows).gain;
    expect(cat).toBeGreaterThan(0.005);
    expect(num).toBeGreaterThan(0.005);
    for (const g of [nz, nc, known]) expect(g).toBeLessThan(0.0005);
  });

  it('drops a near-copy of a better candidate and keeps the distinct ones', () => {
    const copy = Float32Array.from(r, (v) => v * 3 + 1);
    const order = [0, 1, 2];
    const encodings = new Map([
      [0, screenEncoding({ kind: 'numeric', values: r }, rows)],
      [1, screenEncoding({ kind: 'numeric', values: copy }, rows)],
      [2, screenEncoding({ kind: 'categorical', ids: c }, rows)],
    ]);
    const { kept, copies } = dropNearCopies(order, encodings);
    expect(kept).toEqual([0, 2]);
    expect(copies.get(1)).toBe(0);
  });

  it('selects forward: a variant of a chosen signal gives its place to one that carries something else', () => {
    // r + noise and r × (1 + noise) carry r's signal, not near-copies of it by correlation; c carries its own
    const variant = Float32Array.from(r, (v, i) => v + 0.6 * (noise[i] - 0.5));
    const scaled = Float32Array.from(r, (v, i) => v * (0.5 + noise[i]));
    const pool = [r, variant, scaled].map((v) => binsOf({ kind: 'numeric', values: v }));
    pool.push(binsOf({ kind: 'categorical', ids: c }), binsOf({ kind: 'categorical', ids: noiseCat }));
    // alone, the variants score above zero
    for (const b of pool.slice(0, 3)) expect(binnedScore(b, rows).gain).toBeGreaterThan(0.002);
    const picks = selectForward(pool, rows, 3).map((x) => x.index);
    // r (or a variant) and c; never two of r's three; the noise never
    expect(picks).toContain(3);
    expect(picks.filter((i) => i < 3).length).toBe(1);
    expect(picks).not.toContain(4);
    // with room for all, what is left after r and c adds (about) nothing: the selection stops short
    const all = selectForward(pool, rows, 5);
    expect(all.length).toBeLessThan(5);
    for (const x of all.slice(2)) expect(x.gain).toBeLessThan(0.0005);
  });
});
