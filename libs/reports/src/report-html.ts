import type { CurvePoint, ReportContent } from './report-content';

const esc = (s: unknown): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const num = (v: number | null | undefined, digits = 4): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(digits);
const pct = (v: number | null): string => (v === null ? '—' : `${(v * 100).toFixed(1)}%`);

/** The pruning curve as an inline SVG: features removed vs AUC drop, accepted / rejected, the maxDrop line. */
export function pruningCurveSvg(curve: CurvePoint[], maxDrop: number): string {
  if (!curve.length) return '';
  const W = 520;
  const H = 220;
  const pad = { l: 60, r: 16, t: 14, b: 36 };
  const xs = curve.map((p) => p.removed);
  const ys = curve.flatMap((p) => [p.drop, p.ciLow ?? p.drop, p.ciHigh ?? p.drop, maxDrop, 0]);
  const [x0, x1] = [0, Math.max(1, ...xs)];
  const [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const sx = (x: number) => pad.l + ((x - x0) / (x1 - x0 || 1)) * (W - pad.l - pad.r);
  const sy = (y: number) => H - pad.b - ((y - y0) / (y1 - y0 || 1)) * (H - pad.t - pad.b);
  const marks = curve
    .map((p) => {
      const colour = p.accepted ? '#2e7d32' : '#c62828';
      const bar =
        p.ciLow !== null && p.ciHigh !== null
          ? `<line x1="${sx(p.removed)}" x2="${sx(p.removed)}" y1="${sy(p.ciLow)}" y2="${sy(p.ciHigh)}" stroke="${colour}"/>`
          : '';
      const shape =
        p.check === 'retrain'
          ? `<rect x="${sx(p.removed) - 4}" y="${sy(p.drop) - 4}" width="8" height="8" fill="${colour}"/>`
          : `<circle cx="${sx(p.removed)}" cy="${sy(p.drop)}" r="4" fill="${colour}"/>`;
      return `<g><title>round ${p.round}: ${esc(p.check)}, ${p.removed} removed, drop ${num(p.drop)}</title>${bar}${shape}</g>`;
    })
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="pruning curve">
<line x1="${pad.l}" x2="${W - pad.r}" y1="${sy(0)}" y2="${sy(0)}" stroke="#999"/>
<line x1="${pad.l}" x2="${W - pad.r}" y1="${sy(maxDrop)}" y2="${sy(maxDrop)}" stroke="#e65100" stroke-dasharray="4 3"/>
<text x="${W - pad.r}" y="${sy(maxDrop) - 4}" text-anchor="end" font-size="11" fill="#e65100">maxDrop ${num(maxDrop)}</text>
<line x1="${pad.l}" x2="${pad.l}" y1="${pad.t}" y2="${H - pad.b}" stroke="#999"/>
<text x="${pad.l - 6}" y="${sy(y1) + 4}" text-anchor="end" font-size="11">${num(y1)}</text>
<text x="${pad.l - 6}" y="${sy(y0) + 4}" text-anchor="end" font-size="11">${num(y0)}</text>
<text x="${sx(x1)}" y="${H - pad.b + 16}" text-anchor="middle" font-size="11">${x1}</text>
<text x="${sx(0)}" y="${H - pad.b + 16}" text-anchor="middle" font-size="11">0</text>
<text x="${(pad.l + W - pad.r) / 2}" y="${H - 4}" text-anchor="middle" font-size="12">features removed (dot: permutation estimate, square: retraining)</text>
${marks}
</svg>`;
}

/** A whole report as a self-contained HTML document (e-mail body and GET /reports/:id/html). */
export function renderReportHtml(c: ReportContent, links: { report: string }): string {
  const ch = c.changes;
  const removable = c.features.filter((f) => f.removable);
  const row = (cells: unknown[]) => `<tr>${cells.map((x) => `<td>${esc(x)}</td>`).join('')}</tr>`;
  const list = (xs: string[]) => (xs.length ? xs.map(esc).join(', ') : 'none');
  const title = `Pruning report: ${c.model.businessLine}/${c.model.name} v${c.model.version}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{font-family:system-ui,sans-serif;color:#222;max-width:900px;margin:24px auto;padding:0 12px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;font-size:13px}
th{background:#f4f4f4}h2{margin-top:28px;font-size:18px}.muted{color:#666}
</style></head><body>
<h1>${esc(title)}</h1>
<p class="muted">Generated ${esc(c.generatedAt)} (${esc(c.trigger)} run for ${esc(c.fireAt)}) on sample set ${esc(c.sampleSet.name)}
(${c.sampleSet.rows} rows, ${esc(c.sampleSet.dataVersion ?? 'no data version')}). Subtract experiment ${esc(c.experimentId)}.
<a href="${esc(links.report)}">This report in Abacus</a>.</p>
<h2>${removable.length} of ${c.features.length} features removable</h2>
<p>Full model AUC ${num(c.full.auc)}; estimated AUC drop without the removable features ${num(c.estimatedDrop?.mean)}
[${num(c.estimatedDrop?.ciLow)}, ${num(c.estimatedDrop?.ciHigh)}] (limit ${num(c.maxDrop)}).
${c.retrainCheck ? `Retrain check: ${num(c.retrainCheck.fullAuc)} → ${num(c.retrainCheck.prunedAuc)} (drop ${num(c.retrainCheck.drop)}, seeds ${esc(c.retrainCheck.seeds.join(', '))}).` : 'No retrain check.'}
${c.confirmed ? `Confirmed on fresh seeds: AUC ${num(c.confirmed.auc)} vs ${num(c.confirmed.fullAuc)} (drop ${num(c.confirmed.aucDrop)}, ${c.confirmed.withinLimit ? 'within' : 'beyond'} the limit).` : ''}</p>
<table aria-label="removable features"><tr><th>feature</th><th>IV</th><th>shuffle AUC drop</th><th>interval</th><th>PSI vs previous</th></tr>
${removable.map((f) => row([f.feature, num(f.iv), num(f.shuffleDrop, 5), f.shuffleCi ? `[${num(f.shuffleCi[0], 5)}, ${num(f.shuffleCi[1], 5)}]` : '—', num(f.psi)])).join('\n')}
</table>
<h2>Changes since the previous report</h2>
${
  ch.previousReportId
    ? `<p class="muted">Previous report ${esc(ch.previousReportId)} of ${esc(ch.previousGeneratedAt)}; thresholds: PSI ≥ ${ch.thresholds.psi}, |ΔIV| ≥ ${ch.thresholds.ivDrift}.</p>
<ul><li>Newly removable: ${list(ch.newlyRemovable)}</li><li>No longer removable: ${list(ch.noLongerRemovable)}</li>
<li>PSI drift: ${list(ch.psiDrift)}</li><li>Features added to the registry: ${list(ch.featuresAdded.map((f) => f.name))}</li></ul>
${ch.ivDrift.length ? `<table aria-label="IV drift"><tr><th>feature</th><th>IV before</th><th>IV now</th><th>change</th></tr>${ch.ivDrift.map((d) => row([d.feature, num(d.before), num(d.after), num(d.change)])).join('')}</table>` : '<p>No IV drift beyond the threshold.</p>'}
${ch.psi.length ? `<table aria-label="PSI"><tr><th>feature</th><th>PSI</th><th>drift</th></tr>${ch.psi.map((d) => row([d.feature, num(d.psi), d.drift ? 'yes' : 'no'])).join('')}</table>` : ''}`
    : '<p>This is the first report of this model: nothing to compare with yet.</p>'
}
<h2>Resources pruning would save</h2>
<table aria-label="savings"><tr><th>resource</th><th>saved</th><th>of the model's</th><th>share</th></tr>
${c.savings.resources.map((r) => row([`${r.resource} (${r.unit})`, num(r.saved, 3), num(r.total, 3), pct(r.share)])).join('\n')}
</table>
${c.savings.withoutCosts.length ? `<p class="muted">Removable features without a cost figure: ${list(c.savings.withoutCosts)}.</p>` : ''}
<h2>Pruning curve</h2>
${pruningCurveSvg(c.curve, c.maxDrop)}
<h2>All features</h2>
<table aria-label="features"><tr><th>feature</th><th>removable</th><th>rank</th><th>IV</th><th>shuffle AUC drop</th><th>PSI</th></tr>
${c.features.map((f) => row([f.feature, f.removable ? 'yes' : 'no', num(f.combinedRank, 1), num(f.iv), num(f.shuffleDrop, 5), num(f.psi)])).join('\n')}
</table>
</body></html>`;
}

/** The plain-text part of the e-mail. */
export function renderReportText(c: ReportContent, links: { report: string }): string {
  const ch = c.changes;
  return [
    `Pruning report: ${c.model.businessLine}/${c.model.name} v${c.model.version} (${c.generatedAt})`,
    `${c.removable.length} of ${c.features.length} features removable: ${c.removable.join(', ') || 'none'}`,
    ch.previousReportId
      ? `Since the previous report: newly removable ${ch.newlyRemovable.join(', ') || 'none'}; no longer removable ${ch.noLongerRemovable.join(', ') || 'none'}; IV drift ${ch.ivDrift.map((d) => d.feature).join(', ') || 'none'}; PSI drift ${ch.psiDrift.join(', ') || 'none'}; features added ${ch.featuresAdded.map((f) => f.name).join(', ') || 'none'}`
      : 'First report of this model.',
    `Report: ${links.report}`,
  ].join('\n');
}
