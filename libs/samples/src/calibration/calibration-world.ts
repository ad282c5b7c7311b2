import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { exactAuc } from '../metrics/exact-auc';
import { Prng } from '../simulator/prng';

export type CalibrationRole = 'strong' | 'weak' | 'redundant' | 'noise' | 'useful-candidate' | 'noise-candidate';
type Shape = 'normal' | 'lognormal' | 'step' | 'bimodal' | 'categorical';

export interface CalibrationFeature {
  name: string;
  role: CalibrationRole;
  kind: 'numeric' | 'categorical';
  shape: Shape;
  /** distinct values of a categorical */
  cardinality: number;
  /** fraction of rows left empty (an empty cell adds nothing to the logit) */
  missing: number;
  /** weight in the click logit (0 for noise) */
  effect: number;
  /** the feature a redundant copy is a noisy copy of */
  copyOf?: string;
}

export interface CalibrationTruth {
  seed: number;
  rows: number;
  /** rows at or after this time are the last 20%: what the platform's default split tests on */
  testFrom: number;
  baseRate: number;
  features: CalibrationFeature[];
  /** the model's features (everything but the two candidates) */
  base: string[];
  /** the add candidates, in submission order (which is useful is not given away by the order) */
  candidates: string[];
  /** on the test rows: AUC of the true logit, and of the true logit without the useful candidate's term */
  oracle: { auc: number; aucWithoutUseful: number; usefulGain: number };
}

export interface CalibrationWorld {
  file: string;
  label: 'click';
  time: 'ts';
  truth: CalibrationTruth;
}

const NUMERIC_SHAPES: Shape[] = ['normal', 'lognormal', 'step', 'bimodal'];
/** standard deviation of each shape's raw value (a redundant copy adds noise of 0.45 of it: |r| about 0.91) */
const SHAPE_SD: Record<Shape, number> = { normal: 1, lognormal: 2.16, step: 2.89, bimodal: 2.06, categorical: 1 };

/**
 * One flat world for the verdict calibration benchmark: a labelled table whose click logit is a sum
 * of planted effects — 2–3 strong features, 1–2 weak ones, 0–2 noisy copies of a strong numeric
 * (redundant), 3–5 pure-noise columns — plus two add candidates, one useful and one pure noise.
 * Row counts (±25% around `rows`), base rates, numeric shapes (normal, log-normal, step, bimodal),
 * categorical cardinalities (2 to 20,000) and missing values vary with the seed; column names do
 * not reveal the roles. Written as Parquet with a time column `ts` in row order.
 */
export async function writeCalibrationWorld(seed: number, rows: number, dir: string): Promise<CalibrationWorld> {
  const r = new Prng(seed * 15_485_863 + 101);
  const pick = <T>(xs: T[]) => xs[Math.floor(r.next() * xs.length)]!;
  const n = Math.round(rows * (0.75 + 0.5 * r.next()));
  const baseRate = 0.05 + 0.3 * r.next();
  const specs: Omit<CalibrationFeature, 'name'>[] = [];
  const numeric = (role: CalibrationRole, effect: number, shape = pick(NUMERIC_SHAPES)): Omit<CalibrationFeature, 'name'> => ({
    role,
    kind: 'numeric',
    shape,
    cardinality: 0,
    missing: r.next() < 0.3 ? 0.05 + 0.2 * r.next() : 0,
    effect,
  });
  const categorical = (role: CalibrationRole, effect: number, cards: number[]): Omit<CalibrationFeature, 'name'> => ({
    role,
    kind: 'categorical',
    shape: 'categorical',
    cardinality: pick(cards),
    missing: r.next() < 0.3 ? 0.05 + 0.2 * r.next() : 0,
    effect,
  });
  // strong: the first is numeric (so a redundant copy has something to copy)
  const strongCount = 2 + (r.next() < 0.5 ? 1 : 0);
  specs.push({ ...numeric('strong', 0.7 + 0.4 * r.next()), missing: 0 });
  for (let i = 1; i < strongCount; i++)
    specs.push(
      r.next() < 0.5 ? numeric('strong', 0.6 + 0.4 * r.next()) : categorical('strong', 0.6 + 0.4 * r.next(), [5, 20, 200]),
    );
  const weakCount = 1 + (r.next() < 0.5 ? 1 : 0);
  for (let i = 0; i < weakCount; i++)
    specs.push(r.next() < 0.6 ? numeric('weak', 0.15 + 0.1 * r.next()) : categorical('weak', 0.15 + 0.1 * r.next(), [3, 10, 50]));
  const redundantCount = Math.floor(r.next() * 3);
  for (let i = 0; i < redundantCount; i++) specs.push({ ...numeric('redundant', 0, specs[0].shape), copyOf: '#0', missing: 0 });
  const noiseCount = 3 + Math.floor(r.next() * 3);
  for (let i = 0; i < noiseCount; i++)
    specs.push(r.next() < 0.5 ? numeric('noise', 0) : categorical('noise', 0, [2, 30, 1_000, 20_000]));
  const useful =
    r.next() < 0.5
      ? numeric('useful-candidate', 0.3 + 0.2 * r.next())
      : categorical('useful-candidate', 0.35 + 0.2 * r.next(), [10, 50, 300]);
  const noiseCand = r.next() < 0.5 ? numeric('noise-candidate', 0) : categorical('noise-candidate', 0, [5, 100, 5_000]);

  // neutral names in a shuffled order, so nothing about a column's name or position tells its role
  const order = specs.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(r.next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const names = new Map<number, string>(order.map((k, pos) => [k, `f${String(pos + 1).padStart(2, '0')}`]));
  const features: CalibrationFeature[] = specs.map((s, k) => ({
    ...s,
    name: names.get(k)!,
    ...(s.copyOf ? { copyOf: names.get(0)! } : {}),
  }));
  const candFirst = r.next() < 0.5;
  const cands: CalibrationFeature[] = [
    { ...useful, name: candFirst ? 'c1' : 'c2' },
    { ...noiseCand, name: candFirst ? 'c2' : 'c1' },
  ];
  const all = [...features, ...cands];

  // per-category effects, centred and scaled to unit spread so `effect` is comparable across kinds
  const catEffects = all.map((f) => {
    if (f.kind !== 'categorical') return null;
    const e = Float64Array.from({ length: f.cardinality }, () => r.normal());
    const m = e.reduce((a, b) => a + b, 0) / e.length;
    const sd = Math.sqrt(e.reduce((a, b) => a + (b - m) ** 2, 0) / Math.max(1, e.length - 1)) || 1;
    return e.map((x) => (x - m) / sd);
  });
  const intercept = Math.log(baseRate / (1 - baseRate));
  const cols = all.map(() => new Array<string>(n));
  const logit = new Float64Array(n);
  const usefulTerm = new Float64Array(n);
  const labels = new Uint8Array(n);
  const ts = new Float64Array(n);
  const usefulIdx = all.indexOf(cands[0]!);
  const latent = new Float64Array(all.length);
  for (let i = 0; i < n; i++) {
    ts[i] = 1_700_000_000 + i * 30 + Math.floor(r.next() * 30);
    let z = intercept;
    for (let j = 0; j < all.length; j++) {
      const f = all[j]!;
      const miss = f.missing > 0 && r.next() < f.missing;
      let term = 0;
      let cell = '';
      if (f.kind === 'numeric') {
        let x: number;
        let signal: number;
        if (f.copyOf) {
          // a noisy copy of the first strong feature's raw value (|r| about 0.9)
          x = latent[0]! + 0.45 * SHAPE_SD[specs[0]!.shape] * r.normal();
          signal = 0;
        } else {
          const u = r.normal();
          if (f.shape === 'normal') [x, signal] = [u, u];
          else if (f.shape === 'lognormal') [x, signal] = [Math.exp(u), u];
          else if (f.shape === 'step') {
            x = 10 * r.next();
            signal = x > 5 ? 1 : -1;
          } else {
            const side = r.next() < 0.5 ? -1 : 1;
            x = 2 * side + 0.5 * u;
            signal = side;
          }
        }
        latent[j] = x;
        if (!miss) {
          term = f.effect * signal;
          cell = x.toFixed(5);
        }
      } else {
        const v = Math.floor(r.next() * f.cardinality);
        if (!miss) {
          term = f.effect * catEffects[j]![v]!;
          cell = `v${v}`;
        }
      }
      cols[j]![i] = cell;
      z += term;
      if (j === usefulIdx) usefulTerm[i] = term;
    }
    logit[i] = z;
    labels[i] = r.next() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  const testStart = Math.floor(0.8 * n);
  const testFrom = ts[testStart]!;
  const test = (a: Float64Array) => a.subarray(testStart);
  const lt = labels.subarray(testStart);
  const auc = exactAuc(test(logit), lt);
  const aucWithoutUseful = exactAuc(
    test(logit).map((z, i) => z - usefulTerm[testStart + i]!),
    lt,
  );

  fs.mkdirSync(dir, { recursive: true });
  const header = ['ts', ...all.map((f) => f.name), 'click'];
  const lines = [header.join(',')];
  for (let i = 0; i < n; i++) lines.push([String(ts[i]), ...all.map((_, j) => cols[j]![i]!), String(labels[i])].join(','));
  const csv = path.join(dir, `calibration-${seed}.csv`);
  fs.writeFileSync(csv, `${lines.join('\n')}\n`);
  const file = path.join(dir, `calibration-${seed}.parquet`);
  const types = Object.fromEntries(
    header.map((h) => {
      const f = all.find((x) => x.name === h);
      return [h, !f ? (h === 'click' ? 'INTEGER' : 'BIGINT') : f.kind === 'numeric' ? 'DOUBLE' : 'VARCHAR'];
    }),
  );
  const columns = Object.entries(types)
    .map(([k, t]) => `'${k}': '${t}'`)
    .join(', ');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run(
      `COPY (SELECT * FROM read_csv('${csv.replace(/'/g, "''")}', header = true, columns = {${columns}})) TO '${file.replace(/'/g, "''")}' (FORMAT parquet)`,
    );
  } finally {
    conn.closeSync();
    db.closeSync();
  }
  fs.rmSync(csv);
  return {
    file,
    label: 'click',
    time: 'ts',
    truth: {
      seed,
      rows: n,
      testFrom,
      baseRate,
      features: all,
      base: features.map((f) => f.name).sort(),
      candidates: ['c1', 'c2'],
      oracle: { auc, aucWithoutUseful, usefulGain: auc - aucWithoutUseful },
    },
  };
}
