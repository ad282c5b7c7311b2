import { useState, type FormEvent, type ReactNode } from 'react';
import { TableWrap } from './components';
import { formatCount } from './lib/format';

/*
 * The pieces every list page shares: the filter form (kept in the URL by its page), the count or the
 * empty state, and the table of rows.
 */

/** A column of a list table: its header and what a row shows in it. */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  className?: string;
}

/** Rows as a table (`table.list`), one column per `columns` entry, in a scrollable, labelled region. */
export function ListTable<T>({
  label,
  className,
  columns,
  rows,
  rowKey,
  rowAttrs,
}: {
  label: string;
  className?: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  /** data-* attributes of a row (what tests and scripts find it by) */
  rowAttrs?: (row: T) => Record<`data-${string}`, string>;
}) {
  return (
    <TableWrap label={label}>
      <table className={className ? `list ${className}` : 'list'}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.header}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)} {...(rowAttrs?.(r) ?? {})}>
              {columns.map((c) => (
                <td key={c.header} className={c.className}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** A field of a filter form: a select with an "any …" first option, or a text box. */
export type FilterField = { name: string; label: string; id: string; help?: string } & (
  | { kind: 'select'; any: string; options: (string | { value: string; label: string })[] }
  | { kind: 'text' | 'search'; placeholder?: string }
);

/**
 * The filter form of a list page: its fields start from `initial` (the URL's), Apply hands the values
 * to `onApply` (which puts them in the URL), `clear` is the link back to the unfiltered list.
 */
export function ListFilters({
  label,
  fields,
  initial,
  onApply,
  clear,
  search,
}: {
  label: string;
  fields: FilterField[];
  /** the URL's values by field name (a page's search object) */
  initial: object;
  onApply: (values: Record<string, string>) => void;
  clear: ReactNode;
  /** role="search" on the form (a name search among the fields) */
  search?: boolean;
}) {
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(fields.map((f) => [f.name, String((initial as Record<string, unknown>)[f.name] ?? '')])),
  );
  const set = (name: string, value: string) => setValues((v) => ({ ...v, [name]: value }));
  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    onApply(values);
  }
  return (
    <form
      className={`filters filters-${fields.length}`}
      onSubmit={apply}
      aria-label={label}
      {...(search ? { role: 'search' } : {})}
      noValidate
    >
      {fields.map((f) => (
        <div className="field" key={f.name}>
          <label htmlFor={f.id}>{f.label}</label>
          {f.kind === 'select' ? (
            <select
              id={f.id}
              name={f.name}
              value={values[f.name]}
              onChange={(e) => set(f.name, e.target.value)}
              {...(f.help ? { 'aria-describedby': `${f.id}-help` } : {})}
            >
              <option value="">{f.any}</option>
              {f.options.map((o) => {
                const { value, label: text } = typeof o === 'string' ? { value: o, label: o } : o;
                return (
                  <option key={value} value={value}>
                    {text}
                  </option>
                );
              })}
            </select>
          ) : (
            <input
              id={f.id}
              name={f.name}
              {...(f.kind === 'search' ? { type: 'search' } : {})}
              {...(f.placeholder ? { placeholder: f.placeholder } : {})}
              value={values[f.name]}
              onChange={(e) => set(f.name, e.target.value)}
              autoComplete="off"
              {...(f.help ? { 'aria-describedby': `${f.id}-help` } : {})}
            />
          )}
          {f.help ? (
            <span id={`${f.id}-help`} className="muted small hint">
              {f.help}
            </span>
          ) : null}
        </div>
      ))}
      <div className="actions">
        <button type="submit">Apply filters</button>
        {clear}
      </div>
    </form>
  );
}

/** The options of a line select: the lines the key may read, and the one in the URL even when it is not among them. */
export function lineChoices(lines: string[], current: string | undefined): string[] {
  return [...new Set([...lines, ...(current ? [current] : [])])].sort();
}

/**
 * Above a list: "N things (match)" when there are rows; when there are none, "No things match these
 * filters" with the link that clears them, or the page's own first-use text.
 */
export function ListCount({
  total,
  noun,
  filtered,
  clear,
  empty,
}: {
  total: number;
  /** singular and plural */
  noun: [string, string];
  filtered: boolean;
  clear: ReactNode;
  empty: ReactNode;
}) {
  if (total === 0)
    return (
      <div className="empty" role="status">
        {filtered ? (
          <p>
            <strong>No {noun[1]} match these filters.</strong> {clear}
          </p>
        ) : (
          empty
        )}
      </div>
    );
  return (
    <p role="status" className="result-count">
      {formatCount(total)} {total === 1 ? noun[0] : noun[1]}
      {filtered ? ' match' : ''}
    </p>
  );
}
