/**
 * What one experiment said about one feature, read from the experiment's stored result (each kind's
 * `summarize` shape). Pure: takes the JSON as stored and drops what it cannot read, so an old or a
 * partial result gives a "mentioned" row, never an error.
 */

export type ProvenanceVerdict =
  // score
  | 'useless'
  | 'weak'
  | 'medium'
  | 'strong'
  | 'suspicious'
  // subtract
  | 'removable'
  | 'kept'
  // add
  | 'adopt'
  | 'reject'
  | 'inconclusive'
  | 'base feature'
  // divide
  | 'in tiers'
  | 'in no tier'
  // multiply
  | 'used as a feature'
  // any kind: no result yet, or a result that does not name the feature
  | 'pending'
  | 'no result'
  | 'mentioned';

export interface FeatureVerdict {
  verdict: ProvenanceVerdict;
  /** the figures behind the verdict, by name (iv, rank, shuffleDrop, gain, tiers...) */
  values: Record<string, number | string | boolean | null | number[] | string[]>;
  /** one sentence: what the experiment measured for the feature */
  detail: string;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => !!v && typeof v === 'object' && !Array.isArray(v);
const recs = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter(isRec) : []);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const fmt = (v: number | null, digits = 4): string => (v === null ? '—' : v.toFixed(digits));
const SCORE_STRENGTHS = ['useless', 'weak', 'medium', 'strong', 'suspicious'] as const;
const ADD_VERDICTS = ['adopt', 'reject', 'inconclusive'] as const;

export function featureVerdict(kind: string, status: string, feature: string, spec: unknown, result: unknown): FeatureVerdict {
  if (status !== 'succeeded' || !isRec(result)) {
    return status === 'queued' || status === 'running'
      ? { verdict: 'pending', values: {}, detail: `the experiment is ${status}` }
      : { verdict: 'no result', values: {}, detail: `the experiment ${status} without a result` };
  }
  const found =
    kind === 'score'
      ? fromScore(feature, result)
      : kind === 'subtract'
        ? fromSubtract(feature, result)
        : kind === 'add'
          ? fromAdd(feature, spec, result)
          : kind === 'divide'
            ? fromDivide(feature, result)
            : kind === 'multiply'
              ? fromMultiply(feature, spec, result)
              : kind === 'discover'
                ? // its verified comparison is add's, kept whole in the result
                  fromAdd(feature, spec, isRec(result.verification) ? result.verification : {})
                : null;
  return (
    found ?? {
      verdict: 'mentioned',
      values: {},
      detail: `the ${kind} experiment names the feature but its result has no figure for it`,
    }
  );
}

function fromScore(feature: string, r: Rec): FeatureVerdict | null {
  const ranking = recs(r.ranking);
  const row = ranking.find((x) => x.feature === feature);
  if (!row) return null;
  const iv = num(row.iv);
  const strength = SCORE_STRENGTHS.find((s) => s === row.strength);
  if (iv === null || !strength) return null;
  const rank = num(row.rank);
  return {
    verdict: strength,
    values: { iv, rank, of: ranking.length, psi: num(row.psi) },
    detail: `IV ${fmt(iv)} (${strength})${rank !== null ? `, rank ${rank} of ${ranking.length}` : ''}`,
  };
}

function fromSubtract(feature: string, r: Rec): FeatureVerdict | null {
  const row = recs(r.perFeature).find((x) => x.feature === feature);
  const removable = strs(r.removable).includes(feature) || row?.removable === true;
  const kept = strs(r.kept).includes(feature);
  if (!row && !removable && !kept) return null;
  const drop = num(row?.shuffleDrop);
  const ci = Array.isArray(row?.shuffleCi) ? (row.shuffleCi as unknown[]).map(num) : [];
  const ciText = ci.length === 2 && ci[0] !== null && ci[1] !== null ? ` [${fmt(ci[0])}, ${fmt(ci[1])}]` : '';
  return {
    verdict: removable ? 'removable' : 'kept',
    values: {
      shuffleDrop: drop,
      ...(ci.length === 2 && ci[0] !== null && ci[1] !== null ? { shuffleCi: [ci[0], ci[1]] } : {}),
      iv: num(row?.iv),
      combinedRank: num(row?.combinedRank),
    },
    detail: `${removable ? 'removable' : 'kept'}: AUC drop when shuffled ${fmt(drop)}${ciText}`,
  };
}

function fromAdd(feature: string, spec: unknown, r: Rec): FeatureVerdict | null {
  const c = recs(r.candidates).find((x) => x.feature === feature);
  if (c) {
    const verdict = ADD_VERDICTS.find((v) => v === c.verdict);
    if (!verdict) return null;
    const loi = isRec(c.leaveOneIn) ? c.leaveOneIn : null;
    const contribution = isRec(c.contribution) ? c.contribution : null;
    const gain = num(loi?.delta) ?? num(contribution?.mean);
    const lo = num(loi?.ciLow) ?? num(contribution?.ciLow);
    const hi = num(loi?.ciHigh) ?? num(contribution?.ciHigh);
    return {
      verdict,
      values: {
        gain,
        ...(lo !== null && hi !== null ? { gainCi: [lo, hi] } : {}),
        evidence: typeof c.evidence === 'string' ? c.evidence : null,
      },
      detail: `${verdict}: AUC gain ${fmt(gain)}${lo !== null && hi !== null ? ` [${fmt(lo)}, ${fmt(hi)}]` : ''}`,
    };
  }
  const resolved = isRec(spec) && isRec(spec.resolved) ? spec.resolved : null;
  if (resolved && strs(resolved.base).includes(feature)) {
    return { verdict: 'base feature', values: {}, detail: 'in the base model the candidates were added to' };
  }
  return null;
}

function fromDivide(feature: string, r: Rec): FeatureVerdict | null {
  const frontier = recs(r.frontier);
  const tiers = frontier
    .filter((f) => strs(isRec(f.milp) ? f.milp.selected : null).includes(feature))
    .map((f) => (typeof f.alias === 'string' ? f.alias : `tier-${String(f.tier)}`));
  if (!tiers.length) return null;
  // tier-0 is the full model: a feature only there was dropped by every budget
  const budgeted = tiers.filter((t) => t !== 'tier-0');
  return {
    verdict: budgeted.length ? 'in tiers' : 'in no tier',
    values: { tiers, of: frontier.length },
    detail: budgeted.length
      ? `kept in ${tiers.length} of ${frontier.length} tiers: ${tiers.join(', ')}`
      : `in the full model only: dropped by every budget tier`,
  };
}

function fromMultiply(feature: string, spec: unknown, r: Rec): FeatureVerdict | null {
  const resolved = isRec(spec) && isRec(spec.resolved) ? spec.resolved : null;
  const target = resolved && isRec(resolved.target) ? resolved.target : null;
  if (!strs(target?.features).includes(feature)) return null;
  const best = isRec(r.best) ? r.best : null;
  const bestText = best
    ? `best: ${String(best.strategy)} from ${strs(best.sources).join(' + ')} (ΔAUC ${fmt(num(best.deltaAuc))})`
    : 'no strategy recommended';
  return {
    verdict: 'used as a feature',
    values: { bestStrategy: best ? String(best.strategy) : null, bestDeltaAuc: num(best?.deltaAuc) },
    detail: `a feature of the target model; ${bestText}`,
  };
}
