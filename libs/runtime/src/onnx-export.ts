import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import protobuf from 'protobufjs';

import { readCheckpointConfig } from './checkpoint';
import { ONNX_PROTO } from './onnx/onnx-proto';
import { readSafetensors } from './safetensors';

/**
 * ONNX export of a runtime checkpoint (the forward of RuntimeModel.predict):
 *
 *   numeric  float32 [batch, N]   raw values; NaN / ±Inf count as missing (normalized value 0),
 *                                 the graph applies (x - mean) / std
 *   <slot>   int64   [batch, L]   ids, padded with -1 (any id < 0 is padding); L >= 1
 *   logit        float32 [batch, 1]
 *   probability  float32 [batch, 1]  sigmoid(logit)
 *
 * Pooling: Gather on the ids clipped to [0, vocab - 1], multiplied by the padding mask, ReduceSum
 * over L; mean pooling divides by max(count, 1), so an all-padding row pools to zeros exactly like
 * the runtime. The wide part (when the model has one) pools the same way and is added to the logit
 * together with wide.numeric · normalized numeric. The runtime rejects ids >= vocab; the graph
 * cannot raise, so such ids read the last row.
 *
 * The protobuf is written with protobufjs from the official onnx.proto (src/onnx/onnx-proto.ts).
 */
export interface OnnxExportOptions {
  /** default opset version of the graph (13 to 21; default 13) */
  opset?: number;
  /** producer_version written into the model (default: the checkpoint step) */
  producerVersion?: string;
}

export interface OnnxExportResult {
  file: string;
  bytes: number;
  opset: number;
  inputs: { name: string; type: 'float32' | 'int64'; shape: (string | number)[] }[];
  outputs: { name: string; type: 'float32'; shape: (string | number)[] }[];
}

const FLOAT = 1,
  INT64 = 7;
const ATTR_INT = 2;
const IR_VERSION = 7; // ONNX IR version of opset 13
const MAX_PROTO_BYTES = 2 ** 31 - 1;

let modelType: protobuf.Type | null = null;
function onnxModelType(): protobuf.Type {
  modelType ??= protobuf.parse(ONNX_PROTO, { keepCase: true }).root.lookupType('onnx.ModelProto');
  return modelType;
}

interface TensorInit {
  name: string;
  dims: number[];
  data_type: number;
  raw_data: Uint8Array;
}
interface Node {
  op_type: string;
  input: string[];
  output: string[];
  name: string;
  attribute?: { name: string; type: number; i: number }[];
}

function floatInit(name: string, dims: number[], data: Float32Array): TensorInit {
  // raw_data is little-endian; so is every platform the runtime builds on (x86-64)
  return { name, dims, data_type: FLOAT, raw_data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}
function int64Init(name: string, dims: number[], values: number[]): TensorInit {
  const a = BigInt64Array.from(values.map((v) => BigInt(v)));
  return { name, dims, data_type: INT64, raw_data: new Uint8Array(a.buffer) };
}
function valueInfo(name: string, elemType: number, shape: (string | number)[]) {
  return {
    name,
    type: {
      tensor_type: {
        elem_type: elemType,
        shape: { dim: shape.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) },
      },
    },
  };
}

/** Builds the ONNX ModelProto bytes of a checkpoint directory (model.json + model.safetensors). */
export async function buildOnnxModel(
  checkpointDir: string,
  opts: OnnxExportOptions = {},
): Promise<{ bytes: Uint8Array; info: Omit<OnnxExportResult, 'file' | 'bytes'> }> {
  const opset = opts.opset ?? 13;
  if (!Number.isInteger(opset) || opset < 13 || opset > 21) throw new Error(`opset ${opset} is not supported (13 to 21)`);
  const cfg = await readCheckpointConfig(checkpointDir);
  const spec = cfg.spec;
  const st = await readSafetensors(path.join(checkpointDir, cfg.files?.model ?? 'model.safetensors'));
  const tensor = (name: string, n: number): Float32Array => {
    const t = st.tensors.get(name);
    if (!t) throw new Error(`checkpoint ${checkpointDir} has no tensor ${name}`);
    if (t.data.length !== n) throw new Error(`checkpoint tensor ${name} has ${t.data.length} values, the model expects ${n}`);
    return t.data;
  };
  const N = spec.numeric.length,
    D = spec.embeddingDim,
    S = spec.slots.length;
  const nodes: Node[] = [];
  const inits: TensorInit[] = [];
  const inputs: OnnxExportResult['inputs'] = [];
  let seq = 0;
  const node = (op: string, input: string[], attrs: Record<string, number> = {}, out?: string): string => {
    const o = out ?? `${op.toLowerCase()}_${seq}`;
    nodes.push({
      op_type: op,
      input,
      output: [o],
      name: `${op}_${seq++}`,
      ...(Object.keys(attrs).length
        ? { attribute: Object.entries(attrs).map(([name, i]) => ({ name, type: ATTR_INT, i })) }
        : {}),
    });
    return o;
  };

  inits.push(floatInit('const.zero', [], new Float32Array([0])), floatInit('const.one', [], new Float32Array([1])));
  inits.push(int64Init('const.i0', [], [0]), int64Init('const.axis1', [1], [1]), int64Init('const.axis2', [1], [2]));

  const cols: string[] = [];
  let xn: string | null = null;
  if (N > 0) {
    inputs.push({ name: 'numeric', type: 'float32', shape: ['batch', N] });
    inits.push(
      floatInit('normalization.mean', [N], tensor('normalization.mean', N)),
      floatInit('normalization.std', [N], tensor('normalization.std', N)),
    );
    const z = node('Div', [node('Sub', ['numeric', 'normalization.mean']), 'normalization.std']);
    const missing = node('Or', [node('IsNaN', ['numeric']), node('IsInf', ['numeric'])]);
    xn = node('Where', [missing, 'const.zero', z], {}, 'numeric_normalized');
    cols.push(xn);
  }

  const wideTerms: string[] = [];
  for (const s of spec.slots) {
    const nm = s.name;
    inputs.push({ name: nm, type: 'int64', shape: ['batch', `${nm}_length`] });
    inits.push(floatInit(`embedding.${nm}`, [s.vocab, D], tensor(`embedding.${nm}`, s.vocab * D)));
    inits.push(int64Init(`${nm}.last_id`, [], [s.vocab - 1]));
    const mask = node('Cast', [node('GreaterOrEqual', [nm, 'const.i0'])], { to: FLOAT }, `${nm}.mask`); // [B, L]
    const ids = node('Min', [node('Max', [nm, 'const.i0']), `${nm}.last_id`], {}, `${nm}.clipped`);
    const rows = node('Gather', [`embedding.${nm}`, ids], { axis: 0 }); // [B, L, D]
    const masked = node('Mul', [rows, node('Unsqueeze', [mask, 'const.axis2'])]);
    let pooled = node('ReduceSum', [masked, 'const.axis1'], { keepdims: 0 }); // [B, D]
    let count: string | null = null;
    if (spec.pooling === 'mean') {
      count = node('Max', [node('ReduceSum', [mask, 'const.axis1'], { keepdims: 1 }), 'const.one'], {}, `${nm}.count`); // [B, 1]
      pooled = node('Div', [pooled, count]);
    }
    cols.push(node('Identity', [pooled], {}, `${nm}.pooled`));
    if (spec.wide) {
      inits.push(floatInit(`wide.${nm}`, [s.vocab], tensor(`wide.${nm}`, s.vocab)));
      let w = node('ReduceSum', [node('Mul', [node('Gather', [`wide.${nm}`, ids], { axis: 0 }), mask]), 'const.axis1'], {
        keepdims: 1,
      }); // [B, 1]
      if (count) w = node('Div', [w, count]);
      wideTerms.push(w);
    }
  }
  if (S === 0 && N === 0) throw new Error('the model has no inputs');

  let h = cols.length === 1 ? cols[0]! : node('Concat', cols, { axis: 1 }, 'mlp_input');
  let fanIn = N + S * D;
  const layers = [...spec.hidden, 1];
  for (let l = 0; l < layers.length; l++) {
    const out = layers[l]!;
    inits.push(
      floatInit(`mlp.${l}.weight`, [out, fanIn], tensor(`mlp.${l}.weight`, out * fanIn)),
      floatInit(`mlp.${l}.bias`, [out], tensor(`mlp.${l}.bias`, out)),
    );
    h = node('Gemm', [h, `mlp.${l}.weight`, `mlp.${l}.bias`], { transB: 1 });
    if (l < layers.length - 1) h = node('Relu', [h]);
    fanIn = out;
  }
  if (spec.wide && xn) {
    inits.push(floatInit('wide.numeric', [N, 1], tensor('wide.numeric', N)));
    wideTerms.unshift(node('MatMul', [xn, 'wide.numeric']));
  }
  for (const w of wideTerms) h = node('Add', [h, w]);
  node('Identity', [h], {}, 'logit');
  node('Sigmoid', ['logit'], {}, 'probability');

  // drop the shared constants no node reads (onnxruntime warns about unused initializers)
  const used = new Set(nodes.flatMap((n) => n.input));
  const initializers = inits.filter((t) => used.has(t.name));
  const total = initializers.reduce((a, t) => a + t.raw_data.byteLength, 0);
  if (total > MAX_PROTO_BYTES - (1 << 20))
    throw new Error(
      `the model's weights (${total} bytes) exceed the 2 GiB limit of a single-file ONNX protobuf; external data is not supported`,
    );

  const outputs: OnnxExportResult['outputs'] = [
    { name: 'probability', type: 'float32', shape: ['batch', 1] },
    { name: 'logit', type: 'float32', shape: ['batch', 1] },
  ];
  const model = {
    ir_version: IR_VERSION,
    producer_name: 'abacus',
    producer_version: opts.producerVersion ?? `step-${cfg.state.step}`,
    domain: 'abacus.runtime',
    model_version: cfg.state.step,
    doc_string:
      'Abacus runtime CTR model: normalized numeric inputs + pooled slot embeddings (+ wide) -> MLP -> logit -> sigmoid',
    opset_import: [{ domain: '', version: opset }],
    metadata_props: [
      { key: 'abacus.spec', value: JSON.stringify(spec) },
      { key: 'abacus.step', value: String(cfg.state.step) },
      { key: 'abacus.padding', value: 'ids < 0 are padding; pad multi-id lists with -1' },
    ],
    graph: {
      name: 'abacus_ctr',
      node: nodes,
      initializer: initializers,
      input: inputs.map((i) => valueInfo(i.name, i.type === 'int64' ? INT64 : FLOAT, i.shape)),
      output: outputs.map((o) => valueInfo(o.name, FLOAT, o.shape)),
    },
  };
  const T = onnxModelType();
  const bytes = T.encode(T.fromObject(model)).finish();
  return { bytes, info: { opset, inputs, outputs } };
}

/** Writes the ONNX model of a checkpoint to outFile (through a temporary name, then renamed). */
export async function exportOnnx(
  checkpointDir: string,
  outFile: string,
  opts: OnnxExportOptions = {},
): Promise<OnnxExportResult> {
  const { bytes, info } = await buildOnnxModel(checkpointDir, opts);
  const tmp = `${outFile}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, outFile);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return { file: outFile, bytes: bytes.byteLength, ...info };
}
