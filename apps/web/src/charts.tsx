import { useState } from 'react';
import {
  chartsFor,
  COST_AXES,
  groupClass,
  labelColumn,
  type CostAxis,
  linearScale,
  ticks,
  type Chart,
  type BarChart,
  type IntervalChart,
  type ScatterChart,
} from './lib/charts';

/*
 * Charts as SVG drawn by React: geometry in attributes, every colour and stroke from classes in
 * styles.css — no inline style, so the page's CSP (style-src 'self') holds.
 */

const W = 720;
const fmt = (v: number) => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(2));

function Legend({ groups }: { groups: string[] }) {
  return (
    <ul className="chart-legend">
      {groups.map((g) => (
        <li key={g} className={`chart-key g-${groupClass(g)}`}>
          <svg width="10" height="10" aria-hidden="true">
            <circle cx="5" cy="5" r="4" className="chart-dot" />
          </svg>{' '}
          {g}
        </li>
      ))}
    </ul>
  );
}

const LINE_H = 12;

/** Row positions of a chart whose labels may take several lines: each row's top and height, and the bottom. */
function rowLayout(lines: string[][], rowH: number, top: number) {
  const heights = lines.map((l) => rowH + (l.length - 1) * LINE_H);
  const tops: number[] = [];
  let y = top;
  for (const hgt of heights) {
    tops.push(y);
    y += hgt;
  }
  return { tops, heights, bottom: y };
}

/** A row label right-aligned at x, its lines centred on cy. */
function RowLabel({ x, cy, lines }: { x: number; cy: number; lines: string[] }) {
  const first = cy + 4 - ((lines.length - 1) * LINE_H) / 2;
  return (
    <text x={x} y={first} textAnchor="end" className="chart-label">
      {lines.length === 1
        ? lines[0]
        : lines.map((l, k) => (
            <tspan key={k} x={x} dy={k === 0 ? 0 : LINE_H}>
              {l}
            </tspan>
          ))}
    </text>
  );
}

function IntervalSvg({ chart }: { chart: IntervalChart }) {
  const labels = labelColumn(chart.rows.map((r) => r.label));
  // the plot keeps at least 40 % of the width; the labels take the rest they need
  const left = Math.min(labels.width, Math.round(W * 0.6));
  const right = W - 20;
  const rowH = 22;
  const top = 10;
  const layout = rowLayout(labels.lines, rowH, top);
  const h = layout.bottom + 36;
  const values = chart.rows.flatMap((r) => [r.value, r.low ?? r.value, r.high ?? r.value]).concat(chart.refs.map((r) => r.value));
  const { scale, domain } = linearScale(values, [left, right]);
  const bottom = layout.bottom;
  const groups = [...new Set(chart.rows.map((r) => r.group))];
  return (
    <>
      <svg className="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label={chart.title}>
        {ticks(domain).map((t) => (
          <g key={t} className="chart-tick">
            <line x1={scale(t)} x2={scale(t)} y1={top} y2={bottom} className="chart-grid" />
            <text x={scale(t)} y={bottom + 14} textAnchor="middle">
              {fmt(t)}
            </text>
          </g>
        ))}
        {chart.refs.map((r) => (
          <g key={r.label} className="chart-ref">
            <line x1={scale(r.value)} x2={scale(r.value)} y1={top - 4} y2={bottom} />
            <text x={scale(r.value)} y={top - 1} textAnchor="middle">
              {r.label}
            </text>
          </g>
        ))}
        {chart.rows.map((r, i) => {
          const y = layout.tops[i] + layout.heights[i] / 2;
          return (
            <g key={`${r.label}-${i}`} className={`chart-mark g-${groupClass(r.group)}`}>
              <title>{`${r.label}: ${r.value}${r.low !== null && r.high !== null ? ` [${r.low}, ${r.high}]` : ''} (${r.group})`}</title>
              <RowLabel x={left - 8} cy={y} lines={labels.lines[i]} />
              {r.low !== null && r.high !== null ? (
                <line x1={scale(r.low)} x2={scale(r.high)} y1={y} y2={y} className="chart-bar" />
              ) : null}
              <circle cx={scale(r.value)} cy={y} r={4} className="chart-dot" />
            </g>
          );
        })}
        <text x={(left + right) / 2} y={h - 4} textAnchor="middle" className="chart-axis">
          {chart.axis}
        </text>
      </svg>
      <Legend groups={groups} />
    </>
  );
}

function ScatterSvg({ chart }: { chart: ScatterChart }) {
  const left = 70;
  const right = W - 20;
  const top = 14;
  const bottom = 260;
  const h = bottom + 40;
  const xs = linearScale(
    chart.points.map((p) => p.x),
    [left, right],
  );
  const ys = linearScale(chart.points.flatMap((p) => [p.y, p.low ?? p.y, p.high ?? p.y]).concat(chart.refs.map((r) => r.value)), [
    bottom,
    top,
  ]);
  const groups = [...new Set(chart.points.map((p) => p.series))];
  return (
    <>
      <svg className="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label={chart.title}>
        {ticks(xs.domain, 5, chart.xIntegers).map((t) => (
          <g key={`x${t}`} className="chart-tick">
            <line x1={xs.scale(t)} x2={xs.scale(t)} y1={top} y2={bottom} className="chart-grid" />
            <text x={xs.scale(t)} y={bottom + 14} textAnchor="middle">
              {fmt(t)}
            </text>
          </g>
        ))}
        {ticks(ys.domain).map((t) => (
          <g key={`y${t}`} className="chart-tick">
            <line x1={left} x2={right} y1={ys.scale(t)} y2={ys.scale(t)} className="chart-grid" />
            <text x={left - 6} y={ys.scale(t) + 4} textAnchor="end">
              {fmt(t)}
            </text>
          </g>
        ))}
        {chart.refs.map((r) => (
          <g key={r.label} className="chart-ref">
            <line x1={left} x2={right} y1={ys.scale(r.value)} y2={ys.scale(r.value)} />
            <text x={right} y={ys.scale(r.value) - 3} textAnchor="end">
              {r.label}
            </text>
          </g>
        ))}
        {chart.lines.map((s) => {
          const pts = chart.points.filter((p) => p.series === s).sort((a, b) => a.x - b.x);
          return pts.length > 1 ? (
            <polyline
              key={`line-${s}`}
              className={`chart-line g-${groupClass(s)}`}
              points={pts.map((p) => `${xs.scale(p.x)},${ys.scale(p.y)}`).join(' ')}
            />
          ) : null;
        })}
        {chart.points.map((p, i) => (
          <g key={`${p.series}-${p.label}-${i}`} className={`chart-mark g-${groupClass(p.series)}`}>
            <title>{`${p.label} (${p.series}): x ${p.x}, y ${p.y}${p.low !== null && p.high !== null ? ` [${p.low}, ${p.high}]` : ''}`}</title>
            {p.low !== null && p.high !== null ? (
              <line x1={xs.scale(p.x)} x2={xs.scale(p.x)} y1={ys.scale(p.low)} y2={ys.scale(p.high)} className="chart-bar" />
            ) : null}
            <circle cx={xs.scale(p.x)} cy={ys.scale(p.y)} r={4} className="chart-dot" />
            {chart.labelled?.includes(p.series) ? (
              <text x={xs.scale(p.x)} y={ys.scale(p.y) - 9} textAnchor="middle" className="chart-point-label">
                {p.label}
              </text>
            ) : null}
          </g>
        ))}
        <text x={(left + right) / 2} y={h - 4} textAnchor="middle" className="chart-axis">
          {chart.xAxis}
        </text>
        <text
          x={12}
          y={(top + bottom) / 2}
          textAnchor="middle"
          className="chart-axis"
          transform={`rotate(-90 12 ${(top + bottom) / 2})`}
        >
          {chart.yAxis}
        </text>
      </svg>
      <Legend groups={groups} />
    </>
  );
}

/** Reference lines with a label only where it has room (labels closer than 48 px to the last one drawn keep their line and tooltip). */
function spacedRefs(refs: { value: number; label: string }[], scale: (v: number) => number) {
  let last = -Infinity;
  return [...refs]
    .sort((a, b) => a.value - b.value)
    .map((ref) => {
      const x = scale(ref.value);
      const labelled = x - last >= 48;
      if (labelled) last = x;
      return { ref, labelled };
    });
}

function BarsSvg({ chart }: { chart: BarChart }) {
  const labels = labelColumn(chart.rows.map((r) => r.label));
  const left = Math.min(labels.width, Math.round(W * 0.6));
  const right = W - 20;
  const rowH = 22;
  const top = 14;
  const layout = rowLayout(labels.lines, rowH, top);
  const h = layout.bottom + 36;
  // bars start at 0, so 0 is always on the axis
  const { scale, domain } = linearScale(
    chart.rows
      .map((r) => r.value)
      .concat(
        chart.refs.map((r) => r.value),
        [0],
      ),
    [left, right],
  );
  const bottom = layout.bottom;
  const groups = [...new Set(chart.rows.map((r) => r.group))];
  const x0 = scale(0);
  return (
    <>
      <svg className="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label={chart.title}>
        {ticks(domain).map((t) => (
          <g key={t} className="chart-tick">
            <line x1={scale(t)} x2={scale(t)} y1={top} y2={bottom} className="chart-grid" />
            <text x={scale(t)} y={bottom + 14} textAnchor="middle">
              {fmt(t)}
            </text>
          </g>
        ))}
        {chart.rows.map((r, i) => {
          const cy = layout.tops[i] + layout.heights[i] / 2;
          const y = cy - (rowH - 8) / 2;
          const x = scale(r.value);
          return (
            <g key={`${r.label}-${i}`} className={`chart-mark g-${groupClass(r.group)}`}>
              <title>{`${r.label}: ${r.value} (${r.group})${r.note ? `; ${r.note}` : ''}`}</title>
              <RowLabel x={left - 8} cy={cy} lines={labels.lines[i]} />
              <rect x={Math.min(x, x0)} y={y} width={Math.max(1, Math.abs(x - x0))} height={rowH - 8} className="chart-rect" />
            </g>
          );
        })}
        {spacedRefs(chart.refs, scale).map(({ ref: r, labelled }) => (
          <g key={r.label} className="chart-ref">
            <title>{`${r.label}: ${r.value}`}</title>
            <line x1={scale(r.value)} x2={scale(r.value)} y1={top - 4} y2={bottom} />
            {labelled ? (
              <text x={scale(r.value)} y={top - 4} textAnchor="middle">
                {r.label}
              </text>
            ) : null}
          </g>
        ))}
        <text x={(left + right) / 2} y={h - 4} textAnchor="middle" className="chart-axis">
          {chart.axis}
        </text>
      </svg>
      <Legend groups={groups} />
    </>
  );
}

export function ChartView({ chart }: { chart: Chart }) {
  return (
    <figure className="chart-figure" data-chart={chart.kind}>
      <figcaption>{chart.title}</figcaption>
      {chart.kind === 'interval' ? (
        <IntervalSvg chart={chart} />
      ) : chart.kind === 'bars' ? (
        <BarsSvg chart={chart} />
      ) : (
        <ScatterSvg chart={chart} />
      )}
    </figure>
  );
}

/** The charts of a result, above its tables; nothing for kinds without charts or results that cannot be read. */
export function ResultCharts({ kind, result }: { kind: string; result: unknown }) {
  const [costAxis, setCostAxis] = useState<CostAxis>('mean');
  const charts = chartsFor(kind, result, costAxis);
  if (!charts.length) return null;
  return (
    <div className="charts">
      {kind === 'divide' ? (
        <label className="chart-option">
          Cost axis{' '}
          <select value={costAxis} onChange={(ev) => setCostAxis(ev.target.value as CostAxis)}>
            {COST_AXES.map((a) => (
              <option key={a} value={a}>
                {a === 'mean' ? 'mean of the three resources' : a}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      {charts.map((c) => (
        <ChartView key={c.title} chart={c} />
      ))}
    </div>
  );
}
