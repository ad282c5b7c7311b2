import type * as TF from '@tensorflow/tfjs';

import type { NativeAblation, NativeMetrics, NativeModelState, NativePredictResult, NativeProgress, NativeTensor, NativeTrainOptions, NativeTrainResult } from './binding';
import { isShardDataset, type ColumnarDataset, type RuntimeData } from './dataset.types';
import { computeMetrics } from './metrics';
import type { AblationGroupIndex, ModelBackend } from './model-backend.types';
import type { ModelSpec } from './model-spec.schema';
import { checkColumnar } from './native-data.mapper';
import { readShardSync } from './shard-format';

type Tf = typeof TF;
let tfCache: { tf: Tf; engine: string } | undefined;

/** @tensorflow/tfjs-node-gpu or -node when the user installed one (optional), else pure-JS tfjs. */
export function loadTfjs(): { tf: Tf; engine: string } {
  if (tfCache) return tfCache;
  for (const name of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node', '@tensorflow/tfjs']) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const tf = require(name) as Tf;
      tfCache = { tf, engine: name };
      return tfCache;
    } catch {
      /* try the next one */
    }
  }
  throw new Error('@tensorflow/tfjs is not installed');
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function seededPermutation(n: number, seed: number): Int32Array {
  const p = new Int32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  const r = mulberry32(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}

interface Batch {
  B: number;
  x: Float32Array;
  labels: Float32Array;
  weights: Float32Array;
  uniq: number[];
  idx: Int32Array[];
  seg: Int32Array[];
  scale: Float32Array[];
}

/**
 * The reference implementation: the same model through @tensorflow/tfjs ops, gradients by tfjs
 * autodiff, and the same optimizer arithmetic as the native code applied in JS.
 */
export class TfjsBackend implements ModelBackend {
  readonly kind = 'tfjs' as const;
  readonly engine: string;
  private readonly tf: Tf;
  private readonly N: number;
  private readonly S: number;
  private readonly D: number;
  private readonly base: number[] = [];
  private readonly rows: number;
  private readonly layers: { in: number; out: number; w: Float32Array; b: Float32Array }[] = [];
  private readonly params: NativeTensor[] = [];
  private readonly opt: NativeTensor[] = [];
  private readonly dense: Float32Array;
  private readonly denseM: Float32Array;
  private readonly denseV: Float32Array;
  private readonly table: Float32Array;
  private readonly wideTable: Float32Array;
  private readonly wideNum: Float32Array;
  private readonly mean: Float32Array;
  private readonly std: Float32Array;
  private readonly spM: Float32Array;
  private readonly spV: Float32Array;
  private readonly wspM: Float32Array;
  private readonly wspV: Float32Array;
  private state: NativeModelState;
  private cancelled = false;

  constructor(private readonly spec: ModelSpec) {
    const { tf, engine } = loadTfjs();
    this.tf = tf;
    this.engine = engine;
    this.N = spec.numeric.length;
    this.S = spec.slots.length;
    this.D = spec.embeddingDim;
    let rows = 0;
    for (const s of spec.slots) {
      this.base.push(rows);
      rows += s.vocab;
    }
    this.rows = rows;
    const rnd = mulberry32(spec.seed * 2 + 1);
    this.mean = new Float32Array(this.N);
    this.std = new Float32Array(this.N).fill(1);
    // same distributions as the CPU backend; 'torch': embeddings N(0, 1), Linear U(+-1/sqrt(fan_in))
    const torchInit = spec.init === 'torch';
    const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rnd(), 1e-300))) * Math.cos(2 * Math.PI * rnd());
    this.table = new Float32Array(rows * this.D).map(() => (torchInit ? gauss() : rnd() * 0.1 - 0.05));
    const dims = [this.N + this.S * this.D, ...spec.hidden, 1];
    let total = 0;
    for (let l = 0; l + 1 < dims.length; l++) total += dims[l]! * dims[l + 1]! + dims[l + 1]!;
    const wideOff = total;
    if (spec.wide) total += this.N;
    this.dense = new Float32Array(total);
    this.denseM = new Float32Array(total);
    this.denseV = new Float32Array(total);
    let off = 0;
    for (let l = 0; l + 1 < dims.length; l++) {
      const i = dims[l]!, o = dims[l + 1]!;
      const w = this.dense.subarray(off, off + i * o);
      const a = torchInit ? 1 / Math.sqrt(i) : Math.sqrt(6 / (i + o));
      for (let k = 0; k < w.length; k++) w[k] = (rnd() * 2 - 1) * a;
      off += i * o;
      const b = this.dense.subarray(off, off + o);
      if (torchInit) for (let k = 0; k < o; k++) b[k] = (rnd() * 2 - 1) * a;
      off += o;
      this.layers.push({ in: i, out: o, w, b });
    }
    this.wideNum = spec.wide ? this.dense.subarray(wideOff, wideOff + this.N) : new Float32Array(0);
    this.wideTable = new Float32Array(spec.wide ? rows : 0);
    const adam = spec.optimizer.sparse.kind === 'adam';
    const acc0 = adam ? 0 : spec.optimizer.sparse.initialAccumulator;
    this.spM = new Float32Array(rows * this.D).fill(acc0);
    this.spV = new Float32Array(adam ? rows * this.D : 0);
    this.wspM = new Float32Array(spec.wide ? rows : 0).fill(acc0);
    this.wspV = new Float32Array(spec.wide && adam ? rows : 0);
    this.params.push({ name: 'normalization.mean', shape: [this.N], data: this.mean }, { name: 'normalization.std', shape: [this.N], data: this.std }, { name: 'embedding.table', shape: [rows, this.D], data: this.table });
    if (spec.wide) this.params.push({ name: 'wide.table', shape: [rows], data: this.wideTable }, { name: 'wide.numeric', shape: [this.N], data: this.wideNum });
    this.layers.forEach((L, l) => this.params.push({ name: `mlp.${l}.weight`, shape: [L.in, L.out], data: L.w }, { name: `mlp.${l}.bias`, shape: [L.out], data: L.b }));
    this.opt.push({ name: 'dense.adam.m', shape: [total], data: this.denseM }, { name: 'dense.adam.v', shape: [total], data: this.denseV });
    this.opt.push({ name: adam ? 'sparse.adam.m.embedding' : 'sparse.adagrad.acc.embedding', shape: [rows, this.D], data: this.spM });
    if (adam) this.opt.push({ name: 'sparse.adam.v.embedding', shape: [rows, this.D], data: this.spV });
    if (spec.wide) {
      this.opt.push({ name: adam ? 'sparse.adam.m.wide' : 'sparse.adagrad.acc.wide', shape: [rows], data: this.wspM });
      if (adam) this.opt.push({ name: 'sparse.adam.v.wide', shape: [rows], data: this.wspV });
    }
    this.state = { step: 0, normalized: false, frozen: spec.slots.map(() => false) };
  }

  tensors() {
    return this.params;
  }
  optimizerTensors() {
    return this.opt;
  }
  getState() {
    return { ...this.state, frozen: [...this.state.frozen] };
  }
  setState(s: Partial<NativeModelState>) {
    if (s.step !== undefined) this.state.step = s.step;
    if (s.normalized !== undefined) this.state.normalized = s.normalized;
    if (s.frozen) this.state.frozen = this.spec.slots.map((_, i) => !!s.frozen![i]);
    if (s.inputsOff?.some(Boolean)) throw new Error('inputsOff: the tfjs reference backend cannot switch inputs off in place');
  }
  readonly inPlace = false;
  copyFrom(): void {
    throw new Error('copyFrom: not supported by the tfjs reference backend');
  }
  cancel() {
    this.cancelled = true;
  }

  private columnar(data: RuntimeData): { d: ColumnarDataset; numMap: number[]; slotMap: number[] } {
    let d: ColumnarDataset;
    if (isShardDataset(data)) {
      const parts = data.shards.map((s) => readShardSync(s.path));
      d = parts.length === 1 ? parts[0]! : concatColumnar(parts);
    } else d = data;
    checkColumnar(d);
    const numMap = this.spec.numeric.map((n) => {
      const j = d.numericNames.indexOf(n);
      if (j < 0) throw new Error(`dataset has no numeric column "${n}"`);
      return j;
    });
    const slotMap = this.spec.slots.map((s) => {
      const k = d.slots.findIndex((x) => x.name === s.name);
      if (k < 0) throw new Error(`dataset has no slot "${s.name}"`);
      return k;
    });
    return { d, numMap, slotMap };
  }

  private fitNormalization(d: ColumnarDataset, numMap: number[], rows: ArrayLike<number>) {
    const stride = d.numericNames.length;
    for (let j = 0; j < this.N; j++) {
      let s = 0, q = 0;
      for (let i = 0; i < rows.length; i++) {
        let v = d.numeric[rows[i]! * stride + numMap[j]!]!;
        if (!Number.isFinite(v)) v = 0;
        s += v;
        q += v * v;
      }
      const m = s / rows.length, sd = Math.sqrt(Math.max(0, q / rows.length - m * m));
      this.mean[j] = m;
      this.std[j] = sd > 1e-6 ? sd : 1;
    }
    this.state.normalized = true;
  }

  private batch(d: ColumnarDataset, numMap: number[], slotMap: number[], rows: ArrayLike<number>, numSrc?: (j: number, r: number) => number, slotSrc?: (s: number, r: number) => number): Batch {
    const B = rows.length, N = this.N, stride = d.numericNames.length;
    const x = new Float32Array(B * N), labels = new Float32Array(B), weights = new Float32Array(B);
    for (let r = 0; r < B; r++) {
      const row = rows[r]!;
      for (let j = 0; j < N; j++) {
        const src = numSrc ? numSrc(j, r) : row;
        const v = d.numeric[src * stride + numMap[j]!]!;
        x[r * N + j] = Number.isFinite(v) ? (v - this.mean[j]!) / this.std[j]! : 0;
      }
      labels[r] = d.labels[row]!;
      weights[r] = d.weights ? d.weights[row]! : 1;
    }
    const uniqMap = new Map<number, number>();
    const uniq: number[] = [];
    const idx: Int32Array[] = [], seg: Int32Array[] = [], scale: Float32Array[] = [];
    for (let s = 0; s < this.S; s++) {
      const col = d.slots[slotMap[s]!]!;
      const vocab = this.spec.slots[s]!.vocab;
      const li: number[] = [], sg: number[] = [], sc: number[] = [];
      for (let r = 0; r < B; r++) {
        const src = slotSrc ? slotSrc(s, r) : rows[r]!;
        const start = li.length;
        for (let p = col.offsets[src]!; p < col.offsets[src + 1]!; p++) {
          const id = col.ids[p]!;
          if (id < 0) continue;
          if (id >= vocab) throw new Error(`slot ${this.spec.slots[s]!.name}: id ${id} is outside its vocabulary (${vocab} rows)`);
          const g = this.base[s]! + id;
          let u = uniqMap.get(g);
          if (u === undefined) {
            u = uniq.length;
            uniqMap.set(g, u);
            uniq.push(g);
          }
          li.push(u);
          sg.push(r);
        }
        const cnt = li.length - start;
        for (let k = 0; k < cnt; k++) sc.push(this.spec.pooling === 'mean' ? 1 / cnt : 1);
      }
      idx.push(Int32Array.from(li));
      seg.push(Int32Array.from(sg));
      scale.push(Float32Array.from(sc));
    }
    return { B, x, labels, weights, uniq, idx, seg, scale };
  }

  /** Builds the forward graph; returns the logits, and the loss when asked. */
  private graph(b: Batch, embU: TF.Tensor2D, wideU: TF.Tensor1D | null, dense: TF.Tensor[]): { logits: TF.Tensor1D; loss: TF.Scalar } {
    const tf = this.tf;
    const cols: TF.Tensor2D[] = [];
    const xt = tf.tensor2d(b.x, [b.B, this.N]);
    if (this.N) cols.push(xt);
    let wideSum: TF.Tensor1D | null = null;
    for (let s = 0; s < this.S; s++) {
      if (b.idx[s]!.length === 0) {
        cols.push(tf.zeros([b.B, this.D]));
        continue;
      }
      const ix = tf.tensor1d(b.idx[s]!, 'int32'), sg = tf.tensor1d(b.seg[s]!, 'int32'), sc = tf.tensor1d(b.scale[s]!);
      cols.push(tf.unsortedSegmentSum(tf.gather(embU, ix).mul(sc.expandDims(1)), sg, b.B) as TF.Tensor2D);
      if (wideU) {
        const w = tf.unsortedSegmentSum(tf.gather(wideU, ix).mul(sc), sg, b.B) as TF.Tensor1D;
        wideSum = wideSum ? (wideSum.add(w) as TF.Tensor1D) : w;
      }
    }
    let h: TF.Tensor2D = cols.length === 1 ? cols[0]! : tf.concat(cols, 1);
    const L = this.layers.length;
    for (let l = 0; l < L; l++) {
      const z = tf.matMul(h, dense[2 * l] as TF.Tensor2D).add(dense[2 * l + 1]!) as TF.Tensor2D;
      h = l < L - 1 ? tf.relu(z) : z;
    }
    let logits = h.reshape([b.B]) as TF.Tensor1D;
    if (this.spec.wide) {
      if (this.N) logits = logits.add(tf.matMul(xt, (dense[2 * L] as TF.Tensor1D).reshape([this.N, 1])).reshape([b.B]));
      if (wideSum) logits = logits.add(wideSum);
    }
    const y = tf.tensor1d(b.labels), w = tf.tensor1d(b.weights);
    const per = tf.relu(logits).sub(logits.mul(y)).add(tf.log1p(tf.exp(tf.abs(logits).neg())));
    const loss = per.mul(w).sum().div(w.sum().maximum(1e-30)) as TF.Scalar;
    return { logits, loss };
  }

  private denseTensors(): TF.Tensor[] {
    const tf = this.tf;
    const out: TF.Tensor[] = [];
    for (const L of this.layers) out.push(tf.tensor2d(L.w, [L.in, L.out]), tf.tensor1d(L.b));
    if (this.spec.wide) out.push(tf.tensor1d(this.wideNum));
    return out;
  }

  /**
   * Pooled embeddings computed in JS: x = [numeric | slot 0 | … | slot S-1] (B × (N + S·D)) and the
   * wide sums. tfjs's CPU unsortedSegmentSum (and gather's gradient, which uses it) loops over every
   * segment with a full-size mask (O(B · nnz · D) per slot): at batch 8192 a single step took minutes
   * and gigabytes. train and predict therefore pool here and scatter the pooled gradient back by
   * hand (O(nnz · D)); gradients() keeps the all-tfjs graph as the oracle.
   */
  private pooled(b: Batch): { x: Float32Array; wide: Float32Array | null } {
    const N = this.N, D = this.D, W = N + this.S * D;
    const x = new Float32Array(b.B * W);
    for (let r = 0; r < b.B; r++) for (let j = 0; j < N; j++) x[r * W + j] = b.x[r * N + j]!;
    const wide = this.spec.wide ? new Float32Array(b.B) : null;
    for (let s = 0; s < this.S; s++) {
      const ix = b.idx[s]!, sg = b.seg[s]!, sc = b.scale[s]!;
      for (let k = 0; k < ix.length; k++) {
        const g = b.uniq[ix[k]!]!, r = sg[k]!, c = sc[k]!, o = r * W + N + s * D;
        for (let d = 0; d < D; d++) x[o + d] += c * this.table[g * D + d]!;
        if (wide) wide[r] += c * this.wideTable[g]!;
      }
    }
    return { x, wide };
  }

  /** The graph above the pooling (MLP, wide part, loss) on pooled inputs xIn (B × (N + S·D)). */
  private pooledGraph(b: Batch, xIn: TF.Tensor2D, wideIn: TF.Tensor1D | null, dense: TF.Tensor[]): { logits: TF.Tensor1D; loss: TF.Scalar } {
    const tf = this.tf;
    let h: TF.Tensor2D = xIn;
    const L = this.layers.length;
    for (let l = 0; l < L; l++) {
      const z = tf.matMul(h, dense[2 * l] as TF.Tensor2D).add(dense[2 * l + 1]!) as TF.Tensor2D;
      h = l < L - 1 ? tf.relu(z) : z;
    }
    let logits = h.reshape([b.B]) as TF.Tensor1D;
    if (this.spec.wide) {
      if (this.N) logits = logits.add(tf.matMul(tf.slice(xIn, [0, 0], [b.B, this.N]), (dense[2 * L] as TF.Tensor1D).reshape([this.N, 1])).reshape([b.B]));
      if (wideIn) logits = logits.add(wideIn);
    }
    const y = tf.tensor1d(b.labels), w = tf.tensor1d(b.weights);
    const per = tf.relu(logits).sub(logits.mul(y)).add(tf.log1p(tf.exp(tf.abs(logits).neg())));
    const loss = per.mul(w).sum().div(w.sum().maximum(1e-30)) as TF.Scalar;
    return { logits, loss };
  }

  /** stepGrads through pooledGraph: the pooled gradient is scattered to the unique rows in JS. */
  private stepGradsPooled(b: Batch): ReturnType<TfjsBackend['stepGrads']> {
    const tf = this.tf;
    const N = this.N, D = this.D, W = N + this.S * D;
    const p = this.pooled(b);
    let out: ReturnType<TfjsBackend['stepGrads']> | undefined;
    tf.tidy(() => {
      const xIn = tf.tensor2d(p.x, [b.B, W]);
      const wIn = p.wide ? tf.tensor1d(p.wide) : null;
      const dense = this.denseTensors();
      const inputs: TF.Tensor[] = [xIn, ...(wIn ? [wIn] : []), ...dense];
      let logitsOut: Float32Array = new Float32Array(0);
      const f = (...args: TF.Tensor[]) => {
        const { logits, loss } = this.pooledGraph(b, args[0] as TF.Tensor2D, wIn ? (args[1] as TF.Tensor1D) : null, args.slice(wIn ? 2 : 1));
        logitsOut = logits.dataSync() as Float32Array;
        return loss;
      };
      const { value, grads } = tf.valueAndGrads(f)(inputs);
      const g = grads.map((t) => t.dataSync() as Float32Array);
      const gx = g[0]!, gw = wIn ? g[1]! : null;
      const gEmb = new Float32Array(Math.max(1, b.uniq.length) * D);
      const gWide = gw ? new Float32Array(Math.max(1, b.uniq.length)) : null;
      for (let s = 0; s < this.S; s++) {
        const ix = b.idx[s]!, sg = b.seg[s]!, sc = b.scale[s]!;
        for (let k = 0; k < ix.length; k++) {
          const u = ix[k]!, r = sg[k]!, c = sc[k]!, o = r * W + N + s * D;
          for (let d = 0; d < D; d++) gEmb[u * D + d] += c * gx[o + d]!;
          if (gWide) gWide[u] += c * gw![r]!;
        }
      }
      out = { loss: value.dataSync()[0]!, logits: logitsOut, gEmb, gWide, gDense: g.slice(wIn ? 2 : 1) };
    });
    return out!;
  }

  private embU(b: Batch): { emb: TF.Tensor2D; wide: TF.Tensor1D | null } {
    const D = this.D;
    const e = new Float32Array(Math.max(1, b.uniq.length) * D);
    b.uniq.forEach((g, u) => e.set(this.table.subarray(g * D, g * D + D), u * D));
    const w = this.spec.wide ? Float32Array.from(b.uniq.length ? b.uniq.map((g) => this.wideTable[g]!) : [0]) : null;
    return { emb: this.tf.tensor2d(e, [Math.max(1, b.uniq.length), D]), wide: w ? this.tf.tensor1d(w) : null };
  }

  /** loss, logits, and gradients (dense: flat order of `dense`; embedding: per unique row) */
  private stepGrads(b: Batch): { loss: number; logits: Float32Array; gEmb: Float32Array; gWide: Float32Array | null; gDense: Float32Array[] } {
    const tf = this.tf;
    let out: { loss: number; logits: Float32Array; gEmb: Float32Array; gWide: Float32Array | null; gDense: Float32Array[] } | undefined;
    tf.tidy(() => {
      const { emb, wide } = this.embU(b);
      const dense = this.denseTensors();
      const inputs: TF.Tensor[] = [emb, ...(wide ? [wide] : []), ...dense];
      let logitsOut: Float32Array = new Float32Array(0);
      const f = (...args: TF.Tensor[]) => {
        const e = args[0] as TF.Tensor2D;
        const w = wide ? (args[1] as TF.Tensor1D) : null;
        const { logits, loss } = this.graph(b, e, w, args.slice(wide ? 2 : 1));
        logitsOut = logits.dataSync() as Float32Array;
        return loss;
      };
      const { value, grads } = tf.valueAndGrads(f)(inputs);
      const g = grads.map((t) => t.dataSync() as Float32Array);
      out = { loss: value.dataSync()[0]!, logits: logitsOut, gEmb: g[0]!, gWide: wide ? g[1]! : null, gDense: g.slice(wide ? 2 : 1) };
    });
    return out!;
  }

  gradients(data: RuntimeData) {
    const { d, numMap, slotMap } = this.columnar(data);
    const all = Array.from({ length: d.rows }, (_, i) => i);
    if (!this.state.normalized) this.fitNormalization(d, numMap, all);
    const b = this.batch(d, numMap, slotMap, all);
    const r = this.stepGrads(b);
    const grads: Record<string, Float32Array> = {};
    const ge = new Float32Array(this.rows * this.D);
    b.uniq.forEach((g, u) => ge.set(r.gEmb.subarray(u * this.D, u * this.D + this.D), g * this.D));
    grads['embedding.table'] = ge;
    if (this.spec.wide) {
      const gw = new Float32Array(this.rows);
      b.uniq.forEach((g, u) => (gw[g] = r.gWide![u]!));
      grads['wide.table'] = gw;
      grads['wide.numeric'] = r.gDense[2 * this.layers.length]!;
    }
    this.layers.forEach((_, l) => {
      grads[`mlp.${l}.weight`] = r.gDense[2 * l]!;
      grads[`mlp.${l}.bias`] = r.gDense[2 * l + 1]!;
    });
    return { loss: r.loss, logits: r.logits, grads };
  }

  private applyUpdates(b: Batch, r: ReturnType<TfjsBackend['stepGrads']>) {
    const step = ++this.state.step;
    const o = this.spec.optimizer.dense;
    const flat = new Float32Array(this.dense.length);
    let off = 0;
    for (const g of r.gDense) {
      flat.set(g, off);
      off += g.length;
    }
    const bc1 = 1 - Math.pow(o.beta1, step), bc2 = 1 - Math.pow(o.beta2, step);
    for (let i = 0; i < flat.length; i++) {
      const g = flat[i]! + o.weightDecay * this.dense[i]!;
      this.denseM[i] = o.beta1 * this.denseM[i]! + (1 - o.beta1) * g;
      this.denseV[i] = o.beta2 * this.denseV[i]! + (1 - o.beta2) * g * g;
      this.dense[i] = this.dense[i]! - ((o.lr / bc1) * this.denseM[i]!) / (Math.sqrt(this.denseV[i]!) / Math.sqrt(bc2) + o.eps);
    }
    const so = this.spec.optimizer.sparse;
    const sbc1 = 1 - Math.pow(so.beta1, step), sbc2 = 1 - Math.pow(so.beta2, step);
    const upd = (w: Float32Array, m: Float32Array, v: Float32Array, at: number, g: number) => {
      if (so.kind === 'adagrad') {
        m[at] = m[at]! + g * g;
        w[at] = w[at]! - (so.lr * g) / (Math.sqrt(m[at]!) + so.eps);
      } else {
        m[at] = so.beta1 * m[at]! + (1 - so.beta1) * g;
        v[at] = so.beta2 * v[at]! + (1 - so.beta2) * g * g;
        w[at] = w[at]! - ((so.lr / sbc1) * m[at]!) / (Math.sqrt(v[at]!) / Math.sqrt(sbc2) + so.eps);
      }
    };
    const frozenRow = (g: number) => {
      for (let s = this.S - 1; s >= 0; s--) if (g >= this.base[s]!) return this.state.frozen[s]!;
      return false;
    };
    b.uniq.forEach((g, u) => {
      if (frozenRow(g)) return;
      for (let k = 0; k < this.D; k++) upd(this.table, this.spM, this.spV, g * this.D + k, r.gEmb[u * this.D + k]!);
      if (r.gWide) upd(this.wideTable, this.wspM, this.wspV, g, r.gWide[u]!);
    });
  }

  async train(data: RuntimeData, val: RuntimeData | undefined, o: NativeTrainOptions, onProgress: (p: NativeProgress) => void): Promise<NativeTrainResult> {
    this.cancelled = false;
    const { d, numMap, slotMap } = this.columnar(data);
    let trainRows: number[] = Array.from({ length: d.rows }, (_, i) => i);
    let valRows: number[] = [];
    let vd = d, vNum = numMap, vSlot = slotMap;
    if (val) {
      const v = this.columnar(val);
      vd = v.d;
      vNum = v.numMap;
      vSlot = v.slotMap;
      valRows = Array.from({ length: vd.rows }, (_, i) => i);
    } else if (o.validationFraction > 0) {
      const p = seededPermutation(d.rows, o.seed + 7);
      const nv = Math.round(d.rows * o.validationFraction);
      valRows = Array.from(p.subarray(0, nv)).sort((a, b) => a - b);
      trainRows = Array.from(p.subarray(nv)).sort((a, b) => a - b);
    }
    if (!this.state.normalized) this.fitNormalization(d, numMap, trainRows);
    const n = trainRows.length, perEpoch = Math.ceil(n / o.batchSize);
    let total = perEpoch * o.epochs;
    if (o.maxSteps >= 0) total = Math.min(total, o.maxSteps);
    const res: NativeTrainResult = { steps: 0, samples: 0, epochs: 0, finalLoss: 0, samplesPerSecond: 0, seconds: 0, stoppedEarly: false, cancelled: false, bestEpoch: -1, bestValAuc: 0, bestValLogloss: 0, trainRows: n, validationRows: valRows.length, history: [] };
    const t0 = performance.now();
    let best = 0, bad = 0, snapshot: Float32Array[] | null = null, haveBest = false;
    let wl = 0, ws = 0;
    // the validation rows' metrics after epoch `ep` (-1: before the first step), kept as the best when they improve on it
    const validate = (ep: number) => {
      const p = this.forwardRows(vd, vNum, vSlot, valRows, Math.max(o.batchSize, 4096));
      const m = computeMetrics(p, Float32Array.from(valRows, (i) => vd.labels[i]!), vd.weights ? Float32Array.from(valRows, (i) => vd.weights![i]!) : undefined);
      const score = o.monitor === 'logloss' ? -m.logloss : m.auc;
      if (!haveBest || score > best + o.minDelta) {
        haveBest = true;
        best = score;
        res.bestEpoch = ep;
        res.bestValAuc = m.auc;
        res.bestValLogloss = m.logloss;
        bad = 0;
        if (o.patience > 0 && o.restoreBest) snapshot = [this.table.slice(), this.dense.slice(), this.wideTable.slice()];
      } else bad++;
      return m;
    };
    if (o.evaluateFirst && valRows.length) {
      const m = validate(-1);
      res.initialValAuc = m.auc;
      res.initialValLogloss = m.logloss;
    }
    for (let ep = 0; ep < o.epochs && res.steps < total; ep++) {
      const te = performance.now();
      const order = o.shuffle ? Array.from(seededPermutation(n, o.seed * 1000 + ep + 11), (i) => trainRows[i]!) : trainRows;
      let el = 0, es = 0;
      for (let b0 = 0; b0 < n && res.steps < total; b0 += o.batchSize) {
        if (this.cancelled) {
          res.cancelled = true;
          break;
        }
        const b = this.batch(d, numMap, slotMap, order.slice(b0, b0 + o.batchSize));
        const r = this.stepGradsPooled(b);
        this.applyUpdates(b, r);
        res.steps++;
        res.samples += b.B;
        el += r.loss;
        es++;
        wl += r.loss;
        ws++;
        res.finalLoss = r.loss;
        if (res.steps % o.progressEvery === 0) {
          onProgress({ epoch: ep, step: res.steps, totalSteps: total, loss: wl / ws, samplesPerSecond: res.samples / ((performance.now() - t0) / 1000), epochEnd: false });
          wl = ws = 0;
        }
        await new Promise((r2) => setImmediate(r2)); // keep the event loop responsive between steps
      }
      res.epochs = ep + 1;
      const rec = { epoch: ep, trainLoss: es ? el / es : NaN, valAuc: NaN, valLogloss: NaN, seconds: 0 };
      if (res.cancelled) {
        res.history.push(rec);
        break;
      }
      if (valRows.length) {
        const m = validate(ep);
        rec.valAuc = m.auc;
        rec.valLogloss = m.logloss;
      }
      rec.seconds = (performance.now() - te) / 1000;
      res.history.push(rec);
      onProgress({ epoch: ep, step: res.steps, totalSteps: total, loss: rec.trainLoss, samplesPerSecond: res.samples / ((performance.now() - t0) / 1000), epochEnd: true, valAuc: rec.valAuc, valLogloss: rec.valLogloss });
      if (o.patience > 0 && bad >= o.patience) {
        res.stoppedEarly = true;
        break;
      }
    }
    if (snapshot && res.bestEpoch !== res.epochs - 1 && !res.cancelled) {
      this.table.set(snapshot[0]!);
      this.dense.set(snapshot[1]!);
      this.wideTable.set(snapshot[2]!);
    }
    res.seconds = (performance.now() - t0) / 1000;
    res.samplesPerSecond = res.samples / res.seconds;
    return res;
  }

  private forwardRows(d: ColumnarDataset, numMap: number[], slotMap: number[], rows: number[], batch: number, numSrc?: (j: number, r: number) => number, slotSrc?: (s: number, r: number) => number): Float32Array {
    const out = new Float32Array(rows.length);
    for (let b0 = 0; b0 < rows.length; b0 += batch) {
      const part = rows.slice(b0, b0 + batch);
      const b = this.batch(d, numMap, slotMap, part, numSrc && ((j, r) => numSrc(j, b0 + r)), slotSrc && ((s, r) => slotSrc(s, b0 + r)));
      const p = this.pooled(b);
      this.tf.tidy(() => {
        const xIn = this.tf.tensor2d(p.x, [b.B, this.N + this.S * this.D]);
        const wIn = p.wide ? this.tf.tensor1d(p.wide) : null;
        out.set(this.tf.sigmoid(this.pooledGraph(b, xIn, wIn, this.denseTensors()).logits).dataSync() as Float32Array, b0);
      });
    }
    return out;
  }

  async predict(data: RuntimeData, batchSize: number, keyName?: string): Promise<NativePredictResult> {
    const { d, numMap, slotMap } = this.columnar(data);
    const rows = Array.from({ length: d.rows }, (_, i) => i);
    const out: NativePredictResult = { predictions: this.forwardRows(d, numMap, slotMap, rows, batchSize), labels: d.labels.slice() };
    if (d.weights) out.weights = d.weights.slice();
    if (keyName !== undefined) {
      const k = d.keys?.[keyName];
      if (!k) throw new Error(`dataset has no key column "${keyName}"`);
      out.key = k.slice();
    }
    return out;
  }

  async ablate(data: RuntimeData, groups: AblationGroupIndex[], repeats: number, seed: number, batchSize: number): Promise<NativeAblation> {
    const { d, numMap, slotMap } = this.columnar(data);
    const rows = Array.from({ length: d.rows }, (_, i) => i);
    const w = d.weights;
    const F = Math.max(1, Math.min(10, Math.floor(d.rows / 200)));
    const folds = (p: Float32Array, out: NativeMetrics[]) => {
      for (let f = 0; f < F; f++) {
        const b = Math.floor((d.rows * f) / F), e = Math.floor((d.rows * (f + 1)) / F);
        out.push(computeMetrics(p.subarray(b, e), d.labels.subarray(b, e), w?.subarray(b, e)));
      }
    };
    const basePred = this.forwardRows(d, numMap, slotMap, rows, batchSize);
    const base = computeMetrics(basePred, d.labels, w);
    const baseFolds: NativeMetrics[] = [], permutedFolds: NativeMetrics[] = [];
    folds(basePred, baseFolds);
    const permuted: NativeMetrics[] = [];
    for (let g = 0; g < groups.length; g++) {
      const ns = new Set(groups[g]!.numeric), ss = new Set(groups[g]!.slots);
      for (let r = 0; r < repeats; r++) {
        // a permutation index applied while gathering the group's inputs: no shuffled copy
        const perm = seededPermutation(d.rows, seed * 7919 + (g + 101) * 31 + r);
        const p = this.forwardRows(d, numMap, slotMap, rows, batchSize, (j, i) => (ns.has(j) ? perm[i]! : i), (s, i) => (ss.has(s) ? perm[i]! : i));
        permuted.push(computeMetrics(p, d.labels, w));
        folds(p, permutedFolds);
        await new Promise((r2) => setImmediate(r2));
      }
    }
    return { base, permuted, baseFolds, permutedFolds };
  }
}

function concatColumnar(parts: ColumnarDataset[]): ColumnarDataset {
  const rows = parts.reduce((a, p) => a + p.rows, 0);
  const first = parts[0]!;
  const cat = <T extends Float32Array | Int32Array>(arrs: T[], make: (n: number) => T): T => {
    const out = make(arrs.reduce((a, x) => a + x.length, 0));
    let o = 0;
    for (const a of arrs) {
      out.set(a, o);
      o += a.length;
    }
    return out;
  };
  const out: ColumnarDataset = {
    rows,
    numericNames: first.numericNames,
    numeric: cat(parts.map((p) => p.numeric), (n) => new Float32Array(n)),
    labels: cat(parts.map((p) => p.labels), (n) => new Float32Array(n)),
    slots: first.slots.map((s, k) => {
      const offsets = new Int32Array(rows + 1);
      let r = 0, base = 0;
      for (const p of parts) {
        const o = p.slots[k]!.offsets;
        for (let i = 1; i <= p.rows; i++) offsets[r + i] = base + o[i]!;
        r += p.rows;
        base += o[p.rows]!;
      }
      return { name: s.name, offsets, ids: cat(parts.map((p) => p.slots[k]!.ids.subarray(0, p.slots[k]!.offsets[p.rows]!)), (n) => new Int32Array(n)) };
    }),
  };
  if (first.weights) out.weights = cat(parts.map((p) => p.weights!), (n) => new Float32Array(n));
  if (first.keys) out.keys = Object.fromEntries(Object.keys(first.keys).map((k) => [k, cat(parts.map((p) => p.keys![k]!), (n) => new Int32Array(n))]));
  return out;
}
