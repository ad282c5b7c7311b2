import type { NativeData, NativeMemoryPart, NativeShardPart } from './binding';
import { isShardDataset, type ColumnarDataset, type RuntimeData } from './dataset.types';
import type { ModelSpec } from './model-spec.schema';

/** Checks a columnar dataset's shapes (cheap: lengths and the CSR ends, not every offset). */
export function checkColumnar(d: ColumnarDataset): void {
  const n = d.rows;
  if (!Number.isInteger(n) || n < 0) throw new Error(`dataset rows must be a non-negative integer, got ${n}`);
  if (!(d.labels instanceof Float32Array) || d.labels.length !== n) throw new Error(`labels must be a Float32Array of ${n} values`);
  if (d.weights && (!(d.weights instanceof Float32Array) || d.weights.length !== n)) throw new Error(`weights must be a Float32Array of ${n} values`);
  if (!(d.numeric instanceof Float32Array) || d.numeric.length !== n * d.numericNames.length)
    throw new Error(`numeric must be a Float32Array of rows x ${d.numericNames.length} = ${n * d.numericNames.length} values, got ${d.numeric?.length}`);
  for (const s of d.slots) {
    if (!(s.ids instanceof Int32Array) || !(s.offsets instanceof Int32Array)) throw new Error(`slot ${s.name}: ids and offsets must be Int32Arrays`);
    if (s.offsets.length !== n + 1) throw new Error(`slot ${s.name}: offsets must have rows + 1 = ${n + 1} entries, got ${s.offsets.length}`);
    if (s.offsets[0] !== 0 || s.offsets[n]! > s.ids.length) throw new Error(`slot ${s.name}: offsets must start at 0 and end within ids`);
  }
  for (const [k, v] of Object.entries(d.keys ?? {}))
    if (!(v instanceof Int32Array) || v.length !== n) throw new Error(`key ${k} must be an Int32Array of ${n} values`);
}

/** Maps a dataset onto the model's input order for the native code, without copying any column. */
export function toNativeData(spec: ModelSpec, data: RuntimeData, keyName?: string): NativeData {
  const numMap = new Int32Array(spec.numeric.map((n) => {
    const j = data.numericNames.indexOf(n);
    if (j < 0) throw new Error(`dataset has no numeric column "${n}" (has: ${data.numericNames.join(', ') || 'none'})`);
    return j;
  }));
  const slotIndex = spec.slots.map((s) => {
    const k = data.slots.findIndex((d) => d.name === s.name);
    if (k < 0) throw new Error(`dataset has no slot "${s.name}" (has: ${data.slots.map((d) => d.name).join(', ') || 'none'})`);
    return k;
  });
  if (isShardDataset(data)) {
    let keyIndex = -1;
    if (keyName !== undefined) {
      keyIndex = data.keys.indexOf(keyName);
      if (keyIndex < 0) throw new Error(`shards have no key column "${keyName}" (have: ${data.keys.join(', ') || 'none'})`);
    }
    if (data.weights && data.weights.length !== data.rows)
      throw new Error(`shard view: ${data.weights.length} weights for its ${data.rows} rows`);
    let at = 0;
    const parts: NativeShardPart[] = data.shards.map((s) => {
      const part: NativeShardPart = {
        shard: s.handle,
        numStride: data.numericNames.length,
        slotIndex: new Int32Array(slotIndex),
        keyIndex,
        start: s.start ?? 0,
        count: s.rows,
      };
      if (data.weights) part.weights = data.weights.subarray(at, at + s.rows);
      at += s.rows;
      return part;
    });
    return { parts, numMap };
  }
  checkColumnar(data);
  let key: Int32Array | undefined;
  if (keyName !== undefined) {
    key = data.keys?.[keyName];
    if (!key) throw new Error(`dataset has no key column "${keyName}" (has: ${Object.keys(data.keys ?? {}).join(', ') || 'none'})`);
  }
  const part: NativeMemoryPart = {
    rows: data.rows,
    numeric: data.numeric,
    numStride: data.numericNames.length,
    labels: data.labels,
    offs: slotIndex.map((k) => data.slots[k]!.offsets),
    ids: slotIndex.map((k) => data.slots[k]!.ids),
  };
  if (data.weights) part.weights = data.weights;
  if (key) part.key = key;
  return { parts: [part], numMap };
}
