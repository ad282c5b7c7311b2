import { featureExprSchema, type FeatureExpr, type WindowAgg } from './feature-expr.schema';
import { ExprError } from './feature-expr.check';

/**
 * The text form of feature expressions (CLI, web form):
 *
 *   price / (income + 1)                       arithmetic; `/` is safe (missing where the divisor is 0)
 *   log(price)   clip(age, 0, 90)              unary transforms; clip(x, min: 0) for one bound
 *   bucketize(age, [18, 25, 35, 50])           a number cut into categories
 *   cross(city, item_category, buckets: 100000) hashed cross of 2 or 3 categoricals
 *   freq(item_id)                              rows with this value before the impression's time
 *   count(by: user_id, over: 7d)               windowed aggregates over earlier rows of a key:
 *   sum(price, by: user_id, over: 12h)           count, sum, mean, distinct, and rate (the click rate)
 *   mean(price, by: [user_id, item_category], over: 30d)
 *   distinct(item_id, by: user_id, over: 1d)
 *   rate(by: [user_id, item_category], over: 7d)
 *   last(item_id, by: user_id, n: 10)          the last n values of earlier rows (a list of ids)
 *   since(by: user_id)                         seconds since the key's previous row
 *   @other_feature                             a registered feature (its expression or column)
 *
 * Names are letters, digits, `_` and `.`; any other column name is written in backticks.
 * Parse errors are ExprError(['text'], 'at column N: …').
 */
export function parseExprText(text: string): FeatureExpr {
  const p = new Parser(text);
  const e = p.expr();
  p.end();
  const r = featureExprSchema.safeParse(e);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ExprError(i.path as (string | number)[], i.message);
  }
  return r.data;
}

type Tok =
  | { t: 'num'; v: number; at: number }
  | { t: 'dur'; v: string; at: number }
  | { t: 'id'; v: string; at: number }
  | { t: 'ref'; v: string; at: number }
  | { t: 'sym'; v: string; at: number }
  | { t: 'end'; at: number };

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const err = (at: number, m: string): never => {
    throw new ExprError(['text'], `at column ${at + 1}: ${m}`);
  };
  while (i < s.length) {
    const c = s[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i;
    if (/[0-9.]/.test(c) && (c !== '.' || /[0-9]/.test(s[i + 1] ?? ''))) {
      const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(s.slice(i))!;
      i += m[0].length;
      if (/^[dhm]\b/.test(s.slice(i)) && /^[0-9]+$/.test(m[0])) {
        out.push({ t: 'dur', v: m[0] + s[i], at });
        i++;
      } else out.push({ t: 'num', v: Number(m[0]), at });
      continue;
    }
    if (/[A-Za-z_]/.test(c) || c === '`' || (c === '@' && i + 1 < s.length)) {
      const ref = c === '@';
      if (ref) i++;
      let v: string;
      if (s[i] === '`') {
        const close = s.indexOf('`', i + 1);
        if (close < 0) err(i, 'unclosed `');
        v = s.slice(i + 1, close);
        if (!v) err(i, 'empty name');
        i = close + 1;
      } else {
        const m = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(s.slice(i));
        if (!m) err(i, `expected a name after @`);
        v = m![0];
        i += v.length;
      }
      out.push({ t: ref ? 'ref' : 'id', v, at });
      continue;
    }
    if ('+-*/(),[]:'.includes(c)) {
      out.push({ t: 'sym', v: c, at });
      i++;
      continue;
    }
    err(at, `unexpected '${c}'`);
  }
  out.push({ t: 'end', at: s.length });
  return out;
}

const FUNCS = ['log', 'clip', 'bucketize', 'cross', 'freq', 'count', 'sum', 'mean', 'distinct', 'rate', 'last', 'since'];

type Arg = { name: string | null; value: Value; at: number };
type Value = { list: FeatureExpr[]; nums: number[] | null } | { dur: string } | { expr: FeatureExpr };

class Parser {
  private readonly toks: Tok[];
  private k = 0;

  constructor(src: string) {
    this.toks = lex(src);
  }

  private get peek(): Tok {
    return this.toks[this.k];
  }

  private err(at: number, m: string): never {
    throw new ExprError(['text'], `at column ${at + 1}: ${m}`);
  }

  private isSym(v: string): boolean {
    const t = this.peek;
    return t.t === 'sym' && t.v === v;
  }

  private expect(v: string): void {
    if (!this.isSym(v)) this.err(this.peek.at, `expected '${v}'${this.peek.t === 'end' ? ' before the end' : ''}`);
    this.k++;
  }

  end(): void {
    if (this.peek.t !== 'end') this.err(this.peek.at, 'unexpected text after the expression');
  }

  expr(): FeatureExpr {
    let left = this.term();
    while (this.isSym('+') || this.isSym('-')) {
      const op = (this.toks[this.k++] as { v: string }).v === '+' ? 'add' : 'sub';
      left = { op, args: [left, this.term()] };
    }
    return left;
  }

  private term(): FeatureExpr {
    let left = this.unary();
    while (this.isSym('*') || this.isSym('/')) {
      const op = (this.toks[this.k++] as { v: string }).v === '*' ? 'mul' : 'div';
      left = { op, args: [left, this.unary()] };
    }
    return left;
  }

  private unary(): FeatureExpr {
    if (this.isSym('-')) {
      this.k++;
      const e = this.unary();
      return 'num' in e ? { num: -e.num } : { op: 'sub', args: [{ num: 0 }, e] };
    }
    return this.primary();
  }

  private primary(): FeatureExpr {
    const t = this.peek;
    if (t.t === 'num') {
      this.k++;
      return { num: t.v };
    }
    if (t.t === 'ref') {
      this.k++;
      return { ref: t.v };
    }
    if (t.t === 'sym' && t.v === '(') {
      this.k++;
      const e = this.expr();
      this.expect(')');
      return e;
    }
    if (t.t === 'id') {
      this.k++;
      if (!this.isSym('(')) return { col: t.v };
      if (!FUNCS.includes(t.v)) this.err(t.at, `unknown function '${t.v}' (one of ${FUNCS.join(', ')})`);
      this.k++;
      const args: Arg[] = [];
      if (!this.isSym(')')) {
        for (;;) {
          args.push(this.arg());
          if (!this.isSym(',')) break;
          this.k++;
        }
      }
      this.expect(')');
      return this.call(t.v, args, t.at);
    }
    if (t.t === 'dur') this.err(t.at, `a duration (${t.v}) is only an over: value`);
    return this.err(t.at, t.t === 'end' ? 'the expression ends too early' : `unexpected '${(t as { v: string }).v}'`);
  }

  private arg(): Arg {
    const t = this.peek;
    const next = this.toks[this.k + 1];
    if (t.t === 'id' && next?.t === 'sym' && next.v === ':') {
      this.k += 2;
      return { name: t.v, value: this.value(), at: t.at };
    }
    return { name: null, value: this.value(), at: t.at };
  }

  private value(): Value {
    const t = this.peek;
    if (t.t === 'dur') {
      this.k++;
      return { dur: t.v };
    }
    if (t.t === 'sym' && t.v === '[') {
      this.k++;
      const list: FeatureExpr[] = [];
      if (!this.isSym(']')) {
        for (;;) {
          list.push(this.expr());
          if (!this.isSym(',')) break;
          this.k++;
        }
      }
      this.expect(']');
      const nums = list.every((e) => 'num' in e) ? list.map((e) => (e as { num: number }).num) : null;
      return { list, nums };
    }
    return { expr: this.expr() };
  }

  private call(fn: string, args: Arg[], at: number): FeatureExpr {
    const named = new Map<string, Arg>();
    const pos: Arg[] = [];
    for (const a of args) {
      if (a.name === null) {
        if (named.size) this.err(a.at, 'a positional argument after a named one');
        pos.push(a);
      } else {
        if (named.has(a.name)) this.err(a.at, `'${a.name}' given twice`);
        named.set(a.name, a);
      }
    }
    const allowed: Record<string, string[]> = {
      log: [],
      clip: ['min', 'max'],
      bucketize: [],
      cross: ['buckets'],
      freq: [],
      count: ['by', 'over'],
      rate: ['by', 'over'],
      sum: ['by', 'over'],
      mean: ['by', 'over'],
      distinct: ['by', 'over'],
      last: ['by', 'n'],
      since: ['by'],
    };
    for (const [n, a] of named) if (!allowed[fn].includes(n)) this.err(a.at, `${fn}() takes no '${n}' (${allowed[fn].length ? 'it takes ' + allowed[fn].join(', ') : 'no named arguments'})`);
    const exprOf = (a: Arg | undefined, what: string): FeatureExpr => {
      if (!a) this.err(at, `${fn}() needs ${what}`);
      if (!('expr' in a!.value)) this.err(a!.at, `${what} of ${fn}() is an expression`);
      return (a!.value as { expr: FeatureExpr }).expr;
    };
    const numOf = (a: Arg | undefined, what: string): number | undefined => {
      if (!a) return undefined;
      const v = a.value;
      if (!('expr' in v) || !('num' in v.expr)) this.err(a.at, `${what} of ${fn}() is a number`);
      return ((v as { expr: { num: number } }).expr).num;
    };
    const keys = (): FeatureExpr[] => {
      const a = named.get('by');
      if (!a) this.err(at, `${fn}() needs by: (a key, or a list of keys in [ ])`);
      const v = a!.value;
      if ('list' in v) return v.list;
      if ('expr' in v) return [v.expr];
      return this.err(a!.at, 'by: is a key or a list of keys');
    };
    const over = (): string => {
      const a = named.get('over');
      if (!a) this.err(at, `${fn}() needs over: (a window length such as 7d, 12h or 30m)`);
      if (!('dur' in a!.value)) this.err(a!.at, 'over: is a window length such as 7d, 12h or 30m');
      return (a!.value as { dur: string }).dur;
    };
    const most = (n: number) => {
      if (pos.length > n) this.err(pos[n].at, `${fn}() takes ${n === 0 ? 'no' : `at most ${n}`} positional argument${n === 1 ? '' : 's'}`);
    };
    switch (fn) {
      case 'log':
        most(1);
        return { op: 'log', arg: exprOf(pos[0], 'its argument') };
      case 'freq':
        most(1);
        return { op: 'freq', arg: exprOf(pos[0], 'its argument') };
      case 'clip': {
        most(3);
        const min = numOf(named.get('min') ?? pos[1], 'min');
        const max = numOf(named.get('max') ?? pos[2], 'max');
        return { op: 'clip', arg: exprOf(pos[0], 'its argument'), ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
      }
      case 'bucketize': {
        most(2);
        const b = pos[1]?.value;
        if (!b || !('list' in b) || !b.nums) this.err(pos[1]?.at ?? at, 'bucketize(x, [b1, b2, …]) takes its boundaries as a list of numbers');
        return { op: 'bucketize', arg: exprOf(pos[0], 'its argument'), boundaries: (b as { nums: number[] }).nums };
      }
      case 'cross': {
        if (pos.length < 2) this.err(at, 'cross() takes 2 or 3 categorical values');
        most(3);
        const buckets = numOf(named.get('buckets'), 'buckets');
        if (buckets === undefined) this.err(at, 'cross() needs buckets: (how many ids its values are hashed into)');
        return { op: 'cross', args: pos.map((p, i) => exprOf(p, `argument ${i + 1}`)), buckets: buckets! };
      }
      case 'count':
      case 'rate':
        most(0);
        return { op: 'window', agg: fn as WindowAgg, by: keys(), over: over() };
      case 'sum':
      case 'mean':
      case 'distinct':
        most(1);
        return { op: 'window', agg: fn as WindowAgg, by: keys(), of: exprOf(pos[0], 'the value it aggregates'), over: over() };
      case 'last': {
        most(1);
        const n = numOf(named.get('n'), 'n');
        if (n === undefined) this.err(at, 'last() needs n: (how many earlier values)');
        return { op: 'last', by: keys(), of: exprOf(pos[0], 'the value it lists'), n: n! };
      }
      case 'since':
        most(0);
        return { op: 'since', by: keys() };
    }
    return this.err(at, `unknown function '${fn}'`);
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const nameText = (n: string) => (NAME.test(n) && !FUNCS.includes(n) ? n : `\`${n}\``);
const numText = (v: number) => String(v);

/** The text form of an expression (parseExprText reads it back to the same expression). */
export function exprToText(e: FeatureExpr): string {
  const prec = (x: FeatureExpr): number =>
    'op' in x && (x.op === 'add' || x.op === 'sub') ? 1 : 'op' in x && (x.op === 'mul' || x.op === 'div') ? 2 : 3;
  const wrap = (x: FeatureExpr, min: number) => (prec(x) < min ? `(${exprToText(x)})` : exprToText(x));
  if ('num' in e) return e.num < 0 ? `(${numText(e.num)})` : numText(e.num);
  if ('col' in e) return nameText(e.col);
  if ('ref' in e) return `@${NAME.test(e.ref) ? e.ref : `\`${e.ref}\``}`;
  const keys = (by: FeatureExpr[]) => (by.length === 1 ? exprToText(by[0]) : `[${by.map(exprToText).join(', ')}]`);
  switch (e.op) {
    case 'add':
      return `${wrap(e.args[0], 1)} + ${wrap(e.args[1], 2)}`;
    case 'sub':
      return `${wrap(e.args[0], 1)} - ${wrap(e.args[1], 2)}`;
    case 'mul':
      return `${wrap(e.args[0], 2)} * ${wrap(e.args[1], 3)}`;
    case 'div':
      return `${wrap(e.args[0], 2)} / ${wrap(e.args[1], 3)}`;
    case 'log':
      return `log(${exprToText(e.arg)})`;
    case 'freq':
      return `freq(${exprToText(e.arg)})`;
    case 'clip':
      return `clip(${exprToText(e.arg)}${e.min !== undefined ? `, min: ${numText(e.min)}` : ''}${e.max !== undefined ? `, max: ${numText(e.max)}` : ''})`;
    case 'bucketize':
      return `bucketize(${exprToText(e.arg)}, [${e.boundaries.map(numText).join(', ')}])`;
    case 'cross':
      return `cross(${e.args.map(exprToText).join(', ')}, buckets: ${e.buckets})`;
    case 'window':
      return `${e.agg}(${e.of ? exprToText(e.of) + ', ' : ''}by: ${keys(e.by)}, over: ${e.over})`;
    case 'last':
      return `last(${exprToText(e.of)}, by: ${keys(e.by)}, n: ${e.n})`;
    case 'since':
      return `since(by: ${keys(e.by)})`;
  }
}
