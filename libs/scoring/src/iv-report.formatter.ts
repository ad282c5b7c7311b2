import type { IvReport } from './iv-report.types';

const show = (v: string | string[], max = 48): string => {
  const s = Array.isArray(v) ? v.join(', ') : v;
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
};

/** Readable report: a ranking table, then each feature's bins (at most `maxBinsShown` per feature). */
export function formatIvReport(report: IvReport, maxBinsShown = 12): string {
  const hasPsi = report.features.some((f) => f.psi !== undefined);
  const out: string[] = [];
  out.push(
    `label ${report.label} (positive = ${report.positive}), ${report.rows.fit} fitted rows${report.rows.test !== undefined ? `, ${report.rows.test} test rows (PSI)` : ''}, ${report.events} events`,
  );
  out.push(`WOE: ${report.woeConvention}`);
  out.push('');
  const header = ['rank', 'feature', 'kind', 'iv', ...(hasPsi ? ['psi'] : []), 'bins'];
  const rows = report.features.map((f, i) => [
    String(i + 1),
    f.name,
    f.kind,
    f.iv.toFixed(4),
    ...(hasPsi ? [f.psi === undefined ? '' : f.psi.toFixed(4)] : []),
    String(f.bins.length),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  out.push(header.map((h, c) => h.padEnd(widths[c])).join('  '));
  for (const r of rows) out.push(r.map((v, c) => v.padEnd(widths[c])).join('  '));
  for (const f of report.features) {
    out.push('');
    out.push(`${f.name} (${f.kind}${f.trend ? `, event rate ${f.trend}` : ''}): iv ${f.iv.toFixed(4)}`);
    for (const b of f.bins.slice(0, maxBinsShown)) {
      out.push(
        `  ${show(b.range_or_values).padEnd(50)} count ${String(b.count).padStart(9)}  events ${String(b.events).padStart(8)}  woe ${b.woe.toFixed(4).padStart(8)}`,
      );
    }
    if (f.bins.length > maxBinsShown) out.push(`  ... ${f.bins.length - maxBinsShown} more bins (use --json for all)`);
  }
  return out.join('\n');
}
