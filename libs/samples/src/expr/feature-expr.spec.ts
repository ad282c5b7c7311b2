import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_CROSS_BUCKETS, featureExprSchema, type FeatureExpr } from './feature-expr.schema';
import { ExprError, checkExpr, parseExprJson, type ColumnClass, type ExprContext, type RefTarget } from './feature-expr.check';
import { exprToText, parseExprText } from './feature-expr.text';

const columns = new Map<string, ColumnClass>([
  ['user_id', 'integer'],
  ['item_id', 'integer'],
  ['city', 'string'],
  ['category', 'string'],
  ['price', 'float'],
  ['income', 'float'],
  ['ts', 'time'],
  ['tags', 'list'],
  ['click', 'integer'],
  ['blob', 'unsupported'],
]);
const ctx = (refs: Record<string, RefTarget> = {}, hasTime = true): ExprContext => ({
  columns,
  label: 'click',
  hasTime,
  resolveRef: (n) => refs[n] ?? null,
});
const errorOf = (f: () => unknown): ExprError => {
  try {
    f();
  } catch (e) {
    if (e instanceof ExprError) return e;
    throw e;
  }
  throw new Error('no error');
};

describe('feature expressions: text', () => {
  it.each([
    ['price / (income + 1)', { op: 'div', args: [{ col: 'price' }, { op: 'add', args: [{ col: 'income' }, { num: 1 }] }] }],
    ['log(price)', { op: 'log', arg: { col: 'price' } }],
    ['clip(price, 0, 100)', { op: 'clip', arg: { col: 'price' }, min: 0, max: 100 }],
    ['clip(price, max: 5)', { op: 'clip', arg: { col: 'price' }, max: 5 }],
    ['bucketize(price, [-1, 0, 2.5])', { op: 'bucketize', arg: { col: 'price' }, boundaries: [-1, 0, 2.5] }],
    ['cross(city, category, buckets: 1000)', { op: 'cross', args: [{ col: 'city' }, { col: 'category' }], buckets: 1000 }],
    ['rate(by: [user_id, category], over: 7d)', { op: 'window', agg: 'rate', by: [{ col: 'user_id' }, { col: 'category' }], over: '7d' }],
    ['mean(price, by: user_id, over: 12h)', { op: 'window', agg: 'mean', by: [{ col: 'user_id' }], of: { col: 'price' }, over: '12h' }],
    ['last(item_id, by: user_id, n: 5)', { op: 'last', by: [{ col: 'user_id' }], of: { col: 'item_id' }, n: 5 }],
    ['since(by: user_id)', { op: 'since', by: [{ col: 'user_id' }] }],
    ['freq(`odd name`) * -2', { op: 'mul', args: [{ op: 'freq', arg: { col: 'odd name' } }, { num: -2 }] }],
    ['@ctr_7d - 1', { op: 'sub', args: [{ ref: 'ctr_7d' }, { num: 1 }] }],
  ])('%s', (text, ast) => {
    expect(parseExprText(text)).toEqual(ast);
    expect(parseExprText(exprToText(ast as FeatureExpr))).toEqual(ast);
  });

  it.each([
    ['price +', /at column 8: the expression ends too early/],
    ['foo(price)', /unknown function 'foo'/],
    ['mean(price, over: 7d)', /mean\(\) needs by:/],
    ['count(by: user_id, over: 7)', /over: is a window length/],
    ['cross(city, category)', /cross\(\) needs buckets:/],
    ['log(price) price', /unexpected text after the expression/],
    ['clip(price, lo: 1)', /clip\(\) takes no 'lo'/],
    ['count(by: user_id, over: 7d', /expected '\)' before the end/],
  ])('rejects %s', (text, msg) => {
    const e = errorOf(() => parseExprText(text));
    expect(e.path).toEqual(['text']);
    expect(e.reason).toMatch(msg);
  });

  it('text and JSON are one language: any expression written as text reads back the same', () => {
    const col = fc.constantFrom<FeatureExpr>({ col: 'price' }, { col: 'user_id' }, { col: 'odd name' }, { ref: 'f1' });
    const num = fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).map((v): FeatureExpr => ({ num: Object.is(v, -0) ? 0 : v }));
    const { expr } = fc.letrec((tie) => ({
      expr: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        col,
        num,
        fc.record({ op: fc.constantFrom('add', 'sub', 'mul', 'div'), args: fc.tuple(tie('expr'), tie('expr')) }),
        fc.record({ op: fc.constant('log'), arg: tie('expr') }),
        fc.record({ op: fc.constant('freq'), arg: col }),
        fc.record({ op: fc.constant('cross'), args: fc.array(col, { minLength: 2, maxLength: 3 }), buckets: fc.integer({ min: 2, max: 1e6 }) }),
        fc.record({
          op: fc.constant('window'),
          agg: fc.constantFrom('count', 'rate'),
          by: fc.array(col, { minLength: 1, maxLength: 3 }),
          over: fc.constantFrom('1d', '12h', '30m'),
        }),
        fc.record({ op: fc.constant('window'), agg: fc.constantFrom('sum', 'mean', 'distinct'), by: fc.array(col, { minLength: 1, maxLength: 2 }), of: tie('expr'), over: fc.constantFrom('7d', '1h') }),
        fc.record({ op: fc.constant('last'), by: fc.array(col, { minLength: 1, maxLength: 2 }), of: col, n: fc.integer({ min: 1, max: 50 }) }),
        fc.record({ op: fc.constant('since'), by: fc.array(col, { minLength: 1, maxLength: 2 }) }),
      ),
    })) as { expr: fc.Arbitrary<FeatureExpr> };
    fc.assert(
      fc.property(expr, (e) => {
        expect(parseExprText(exprToText(e))).toEqual(featureExprSchema.parse(e));
      }),
      { numRuns: 300 },
    );
  });
});

describe('feature expressions: checks', () => {
  it('types an expression and records its lineage', () => {
    const c = checkExpr(parseExprText('rate(by: [user_id, category], over: 7d) * log(price / income)'), ctx());
    expect(c.kind).toBe('numeric');
    expect(c.lineage).toEqual({
      columns: ['category', 'income', 'price', 'user_id'],
      refs: [],
      tables: [],
      windows: [{ op: 'window', agg: 'rate', by: ['user_id', 'category'], over: '7d' }],
      readsLabel: true,
      outcomes: [],
      historySeconds: 7 * 86_400,
    });
    expect(checkExpr(parseExprText('cross(city, user_id, buckets: 100)'), ctx()).kind).toBe('categorical');
    expect(checkExpr(parseExprText('last(item_id, by: user_id, n: 3)'), ctx()).kind).toBe('multi_id');
    // an integer column is a number unless it is asked for as a category
    expect(checkExpr({ col: 'item_id' }, ctx()).kind).toBe('numeric');
    expect(checkExpr({ col: 'item_id' }, ctx(), 'categorical').kind).toBe('categorical');
  });

  it.each([
    ['mean(price, by: usr, over: 7d)', ['by', 0, 'col'], /unknown column 'usr' \(columns: user_id, item_id/],
    ['mean(city, by: user_id, over: 7d)', ['of', 'col'], /mean of a categorical column \('city'\) is not a number/],
    ['sum(price, by: price, over: 7d)', ['by', 0, 'col'], /holds numbers with fractions or times, not categories/],
    ['log(city)', ['arg', 'col'], /column 'city' \(text\) is categorical, where a number is needed/],
    ['price + click', ['args', 1, 'col'], /'click' is the label: known only after the impression/],
    ['count(by: click, over: 1d)', ['by', 0, 'col'], /'click' is the label: .* never the row's own value or a key/],
    ['mean(freq(city), by: user_id, over: 1d)', ['of'], /no aggregate inside an aggregate/],
    ['cross(city, tags, buckets: 10)', ['args', 1, 'col'], /column 'tags' \(a list\) is multi_id, where a categorical value is needed/],
    ['count(by: user_id, over: 7d) + last(item_id, by: user_id, n: 2)', ['args', 1], /last\(…\) is multi_id, where a number is needed/],
    ['log(blob)', ['arg', 'col'], /column 'blob' has a type an expression cannot read/],
  ])('%s is refused at its path', (text, path, msg) => {
    const e = errorOf(() => checkExpr(parseExprText(text), ctx()));
    expect(e.path).toEqual(path);
    expect(e.reason).toMatch(msg);
  });

  it('a window needs a time column', () => {
    const e = errorOf(() => checkExpr(parseExprText('log(1 + count(by: user_id, over: 7d))'), ctx({}, false)));
    expect(e.path).toEqual(['arg', 'args', 1, 'over']);
    expect(e.reason).toMatch(/count\(\) needs the sample set's time column/);
    expect(errorOf(() => checkExpr(parseExprText('since(by: city)'), ctx({}, false))).reason).toMatch(/since\(\) needs/);
  });

  it('an over-large cross and malformed JSON are refused by the schema at their paths', () => {
    let e = errorOf(() => parseExprJson({ op: 'add', args: [{ num: 1 }, { op: 'cross', args: [{ col: 'a' }, { col: 'b' }], buckets: MAX_CROSS_BUCKETS + 1 }] }));
    expect(e.path).toEqual(['args', 1, 'buckets']);
    expect(e.reason).toMatch(/at most 16777216 buckets/);
    e = errorOf(() => parseExprJson({ op: 'window', agg: 'median', by: [{ col: 'a' }], over: '7d' }));
    expect(e.path).toEqual(['agg']);
    e = errorOf(() => parseExprJson({ op: 'div', args: [{ col: 'a' }] }));
    expect(e.path[0]).toBe('args');
    e = errorOf(() => parseExprJson({ op: 'window', agg: 'count', by: [{ col: 'a' }], over: '9000d' }));
    expect(e.path).toEqual(['over']);
  });

  it('references expand to what they name; a cycle is refused at the reference that closes it', () => {
    const refs: Record<string, RefTarget> = {
      ctr: { kind: 'numeric', expression: parseExprText('rate(by: user_id, over: 7d)') },
      ratio: { kind: 'numeric', expression: parseExprText('@ctr / (1 + @plain)') },
      plain: { kind: 'numeric', column: 'price' },
      a: { kind: 'numeric', expression: parseExprText('@b + 1') },
      b: { kind: 'numeric', expression: parseExprText('log(@a)') },
      joined: { kind: 'numeric', table: 'user_profile' },
    };
    const c = checkExpr(parseExprText('@ratio * 2'), ctx(refs));
    expect(c.lineage.refs).toEqual(['ctr', 'plain', 'ratio']);
    expect(c.lineage.columns).toEqual(['price', 'user_id']);
    expect(JSON.stringify(c.expr)).not.toContain('ref');
    let e = errorOf(() => checkExpr(parseExprText('2 * @a'), ctx(refs)));
    expect(e.path).toEqual(['args', 1, 'ref']);
    expect(e.reason).toMatch(/cyclic definition: a -> b -> a/);
    e = errorOf(() => checkExpr(parseExprText('@nope'), ctx(refs)));
    expect(e.reason).toMatch(/no registered feature 'nope'/);
    // a feature-table feature stays a reference (joined by the builder), read as its registered kind
    const j = checkExpr(parseExprText('mean(@joined, by: user_id, over: 7d) / (1 + @joined)'), ctx(refs));
    expect(j.lineage.tables).toEqual([{ feature: 'joined', table: 'user_profile' }]);
    expect(j.lineage.refs).toEqual(['joined']);
    expect(JSON.stringify(j.expr)).toContain('{"ref":"joined"}');
    e = errorOf(() => checkExpr(parseExprText('cross(@joined, city, buckets: 16)'), ctx(refs)));
    expect(e.path).toEqual(['args', 0, 'ref']);
    expect(e.reason).toMatch(/'joined' \(joined from user_profile\) is a number, not categories/);
    e = errorOf(() => checkExpr(parseExprText('@gone + 1'), ctx({ ...refs, gone: { kind: 'numeric', table: 'p', error: 'its table joins on user_id, which the set lacks' } })));
    expect(e.path).toEqual(['args', 0, 'ref']);
    expect(e.reason).toMatch(/joins on user_id/);
  });

  it('an expression too large after expansion is refused', () => {
    let text = 'price';
    for (let i = 0; i < 40; i++) text = `(${text} + 1)`;
    expect(errorOf(() => checkExpr(parseExprText(text), ctx())).reason).toMatch(/nodes|nested/);
  });
});
