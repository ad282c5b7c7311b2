import type { FlatSamples } from '../simulator/world.types';
import type { Table, TableColumn } from './table.types';

/**
 * The in-memory flat samples as a Table (the shape readTable returns), so scorers run on a simulated
 * world without a file round trip. Columns: click, ts, domain, then features; categorical ids become
 * dictionary codes over the strings '0'..'vocab-1' (as written to Parquet).
 */
export function flatToTable(flat: FlatSamples, file = '(simulated world)'): Table {
  const domains = [...new Set(flat.domain)];
  const domainIndex = new Map(domains.map((d, i) => [d, i]));
  const columns: TableColumn[] = [
    { name: 'click', kind: 'numeric', duckdbType: 'INTEGER', values: Float64Array.from(flat.label) },
    { name: 'ts', kind: 'numeric', duckdbType: 'INTEGER', values: Float64Array.from(flat.time) },
    {
      name: 'domain',
      kind: 'categorical',
      duckdbType: 'VARCHAR',
      codes: Int32Array.from(flat.domain, (d) => domainIndex.get(d)!),
      dictionary: domains,
    },
  ];
  for (const c of flat.numeric)
    columns.push({ name: c.name, kind: 'numeric', duckdbType: 'DOUBLE', values: Float64Array.from(c.values) });
  for (const c of flat.categorical) {
    columns.push({
      name: c.name,
      kind: 'categorical',
      duckdbType: 'VARCHAR',
      codes: c.ids,
      dictionary: Array.from({ length: c.vocab }, (_, i) => String(i)),
    });
  }
  for (const c of flat.multiId)
    columns.push({ name: c.name, kind: 'multi_id', duckdbType: 'INTEGER[]', offsets: c.offsets, ids: c.ids });
  return { file, rowCount: flat.rows, columns };
}
