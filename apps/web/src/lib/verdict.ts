/**
 * An experiment's answer in one or two sentences, from its result JSON: what to remove (subtract),
 * which candidates to adopt (add), which borrowings help (multiply), the tiers (divide), the
 * strongest features (score). Takes `unknown` and returns null when it cannot read the result
 * (a running experiment, an older shape), like the chart functions in charts.ts.
 */
import { LARGE_TIER, tierAlias } from '@abacus/workflows/browser';

const rec = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const strs = (v: unknown): string[] | null =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
const f4 = (v: number) => (Math.abs(v) >= 0.001 || v === 0 ? v.toFixed(4) : v.toExponential(1));

export interface Verdict {
  headline: string;
  detail: string | null;
  tone: 'good' | 'neutral' | 'bad';
}

function subtractVerdict(r: Record<string, unknown>): Verdict | null {
  const removable = strs(r.removable);
  const features = num(r.features);
  const maxDrop = num(r.maxDrop);
  if (!removable || features === null) return null;
  const confirmed = rec(r.confirmed);
  const drop = confirmed ? num(confirmed.aucDrop) : null;
  const within = confirmed ? confirmed.withinLimit === true : null;
  const headline = removable.length
    ? `${removable.length} of ${features} features can be removed: ${removable.join(', ')}`
    : `No feature can be removed within the limit${maxDrop !== null ? ` (max AUC drop ${maxDrop})` : ''}`;
  const detail =
    confirmed && drop !== null
      ? `Confirmed by retraining: AUC ${num(confirmed.auc) !== null ? f4(num(confirmed.auc)!) : '—'} without them, a drop of ${f4(drop)} — ${within ? 'within' : 'beyond'} the limit${maxDrop !== null ? ` of ${maxDrop}` : ''}.`
      : removable.length
        ? 'Not confirmed by retraining (confirm was off).'
        : null;
  return { headline, detail, tone: removable.length && within !== false ? 'good' : within === false ? 'bad' : 'neutral' };
}

function countBy(items: unknown[], key: string, name: (x: Record<string, unknown>) => string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of items) {
    const x = rec(raw);
    if (!x || typeof x[key] !== 'string') continue;
    out.set(x[key] as string, [...(out.get(x[key] as string) ?? []), name(x)]);
  }
  return out;
}

const listing = (groups: Map<string, string[]>, order: string[]) =>
  order
    .filter((k) => groups.get(k)?.length)
    .map((k) => `${k}: ${groups.get(k)!.join(', ')}`)
    .join('; ');

export function verdictOf(kind: string, result: unknown): Verdict | null {
  const r = rec(result);
  if (!r) return null;
  if (kind === 'subtract') return subtractVerdict(r);
  if (kind === 'add' && Array.isArray(r.candidates)) {
    const g = countBy(r.candidates, 'verdict', (c) => String(c.feature));
    if (!g.size) return null;
    const adopt = g.get('adopt') ?? [];
    return {
      headline: adopt.length ? `Adopt ${adopt.join(', ')}` : 'No candidate to adopt',
      detail: listing(g, ['adopt', 'inconclusive', 'reject']),
      tone: adopt.length ? 'good' : 'neutral',
    };
  }
  if (kind === 'discover' && Array.isArray(r.chosen)) {
    const g = countBy(r.chosen, 'verdict', (c) => String(c.text));
    const adopt = g.get('adopt') ?? [];
    const screened = num(r.candidates);
    return {
      headline: adopt.length ? `Adopt ${adopt.join(', ')}` : r.chosen.length ? 'No discovered feature to adopt' : 'No candidate added to the model on the screen',
      detail:
        `${screened !== null ? `${screened} candidate expressions screened, ` : ''}${r.chosen.length} verified` +
        (g.size ? `. ${listing(g, ['adopt', 'inconclusive', 'reject'])}` : ''),
      tone: adopt.length ? 'good' : 'neutral',
    };
  }
  if (kind === 'multiply' && Array.isArray(r.results)) {
    const g = countBy(r.results, 'verdict', (x) => `${String(x.strategy)} · ${(strs(x.sources) ?? []).join(' + ')}`);
    if (!g.size) return null;
    const recd = g.get('recommend') ?? [];
    return {
      headline: recd.length
        ? `Borrowing helps: ${recd.length} strateg${recd.length === 1 ? 'y' : 'ies'} recommended`
        : 'No borrowing recommended',
      detail: listing(g, ['recommend', 'no gain', 'harmful']),
      tone: recd.length ? 'good' : 'neutral',
    };
  }
  if (kind === 'divide' && Array.isArray(r.frontier)) {
    const tiers = r.frontier.map(rec).filter((t): t is Record<string, unknown> => !!t);
    if (!tiers.length) return null;
    const parts = tiers.map((t) => {
      const milp = rec(t.milp);
      const kept = milp ? num(milp.liftKept) : null;
      return `${String(t.alias ?? (typeof t.tier === 'number' ? tierAlias(t.tier) : 'tier'))}: ${milp && num(milp.features) !== null ? `${num(milp.features)} features` : '—'}${kept !== null ? `, ${Math.round(kept * 100)}% of the lift` : ''}`;
    });
    const large = tiers.some((t) => t.tier === LARGE_TIER);
    const budget = tiers.length - (large ? 1 : 0);
    const summary = rec(r.large);
    return {
      headline: `${budget} budget tier${budget === 1 ? '' : 's'}${large ? ' and a large tier' : ''} published`,
      detail:
        parts.join('; ') +
        (summary && typeof summary.verdict === 'string'
          ? `. The large tier: ${summary.verdict}${num(summary.aucGain) !== null ? ` (AUC ${num(summary.aucGain)! >= 0 ? '+' : ''}${num(summary.aucGain)!.toFixed(4)})` : ''}`
          : ''),
      tone: 'good',
    };
  }
  if (kind === 'score' && Array.isArray(r.ranking)) {
    const top = r.ranking
      .map(rec)
      .filter((x): x is Record<string, unknown> => !!x && typeof x.feature === 'string')
      .slice(0, 3)
      .map(
        (x) =>
          `${String(x.feature)}${num(x.iv) !== null ? ` (IV ${num(x.iv)!.toFixed(3)}${typeof x.strength === 'string' ? `, ${x.strength}` : ''})` : ''}`,
      );
    return top.length ? { headline: `Most informative: ${top.join(', ')}`, detail: null, tone: 'neutral' } : null;
  }
  return null;
}
