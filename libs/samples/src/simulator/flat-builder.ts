import { FEATURE_CATALOG } from './feature-catalog';
import type { EntityTableColumns, ImpressionTable, MultiIdColumn } from './sim-world.types';
import type { FlatSamples } from './world.types';

export interface FlatInputs {
  impressions: ImpressionTable;
  /** entity row per impression for each table (users: the daily snapshot valid at ts) */
  userRow: Int32Array;
  users: EntityTableColumns;
  items: EntityTableColumns;
  contexts: EntityTableColumns;
  trueLogit: Float64Array;
  testFrom: number;
}

function gatherCsr(col: MultiIdColumn, rowOf: Int32Array): { offsets: Int32Array; ids: Int32Array } {
  const rows = rowOf.length;
  const offsets = new Int32Array(rows + 1);
  for (let r = 0; r < rows; r++) offsets[r + 1] = offsets[r] + col.offsets[rowOf[r] + 1] - col.offsets[rowOf[r]];
  const ids = new Int32Array(offsets[rows]);
  for (let r = 0; r < rows; r++) ids.set(col.ids.subarray(col.offsets[rowOf[r]], col.offsets[rowOf[r] + 1]), offsets[r]);
  return { offsets, ids };
}

/** The point-in-time join done in memory: one row per impression, features in catalog order. */
export function buildFlat(input: FlatInputs): FlatSamples {
  const { impressions: imp } = input;
  const rows = imp.rows;
  const tableOf = { user: input.users, item: input.items, context: input.contexts } as const;
  const rowOfTable = { user: input.userRow, item: imp.itemId, context: imp.contextId } as const;
  const flat: FlatSamples = {
    rows,
    numeric: [],
    categorical: [],
    multiId: [],
    label: new Float32Array(rows),
    time: Float64Array.from(imp.ts),
    domain: new Array<string>(rows),
    split: new Uint8Array(rows),
    trueLogit: Float32Array.from(input.trueLogit),
  };
  for (let r = 0; r < rows; r++) {
    flat.label[r] = imp.click[r];
    flat.domain[r] = imp.domains[imp.domainIndex[r]];
    flat.split[r] = imp.ts[r] >= input.testFrom ? 1 : 0;
  }
  for (const spec of FEATURE_CATALOG) {
    const table = tableOf[spec.table];
    const rowOf = rowOfTable[spec.table];
    if (spec.kind === 'numeric') {
      const src = table.numeric.find((c) => c.name === spec.name)!.values;
      const values = new Float32Array(rows);
      for (let r = 0; r < rows; r++) values[r] = src[rowOf[r]];
      flat.numeric.push({ name: spec.name, values });
    } else if (spec.kind === 'categorical') {
      const col = table.categorical.find((c) => c.name === spec.name)!;
      const ids = new Int32Array(rows);
      for (let r = 0; r < rows; r++) ids[r] = col.ids[rowOf[r]];
      flat.categorical.push({ name: spec.name, ids, vocab: col.vocab });
    } else {
      const col = table.multiId.find((c) => c.name === spec.name)!;
      flat.multiId.push({ name: spec.name, ...gatherCsr(col, rowOf), vocab: col.vocab });
    }
  }
  return flat;
}
