import type { TableColumn } from '@abacus/samples';
import { ScoringError } from './scoring.error';

/**
 * The event class of a label column, given its distinct non-null values as strings (`classes`: the
 * first of them in encodeLabel's order — numbers ascending, strings by code unit — at least 10 when
 * there are more; `distinct`: how many there are). Throws unless there are exactly two classes and the
 * positive one is known.
 */
export function positiveClass(
  name: string,
  kind: 'numeric' | 'categorical',
  classes: readonly string[],
  distinct: number,
  positive?: string | number | boolean,
): string {
  if (distinct !== 2) {
    const shown = classes.slice(0, 10).join(', ') + (distinct > 10 ? ', ...' : '');
    throw new ScoringError(`label '${name}' has ${distinct} distinct value(s) (${shown}); expected exactly 2 classes`);
  }
  let pos: string | undefined;
  if (positive !== undefined) {
    let wanted = String(positive);
    // CSV sniffing turns yes/no, y/n, t/f columns into BOOLEAN: accept the spelling the user sees in the file
    if (classes[0] === 'false' && classes[1] === 'true') {
      if (/^(yes|y|t|1|true)$/i.test(wanted)) wanted = 'true';
      else if (/^(no|n|f|0|false)$/i.test(wanted)) wanted = 'false';
    }
    pos = classes.find((c) => c === wanted || (kind === 'numeric' && Number(c) === Number(wanted)));
    if (pos === undefined)
      throw new ScoringError(`positive value '${wanted}' is not a class of label '${name}' (classes: ${classes.join(', ')})`);
  } else {
    pos = classes.find((c) => c === '1' || c.toLowerCase() === 'true');
    if (pos === undefined) {
      throw new ScoringError(`label '${name}' has classes ${classes.join(', ')}: pass the positive (event) value explicitly`);
    }
  }
  return pos;
}

/** A label must have no missing values. */
export function checkLabelNulls(name: string, nulls: number): void {
  if (nulls > 0) throw new ScoringError(`label '${name}' has ${nulls} missing value(s)`);
}

/** The label list-column error of encodeLabel. */
export function listLabelError(name: string): ScoringError {
  return new ScoringError(`label '${name}' is a list column; expected two classes`);
}

/**
 * 0/1 event vector from a label column. The column must hold exactly two distinct non-null values and no
 * nulls. `positive` names the event class; by default 1 (numeric), or 'true' / '1' (categorical).
 */
export function encodeLabel(column: TableColumn, positive?: string | number | boolean): { y: Uint8Array; positive: string } {
  if (column.kind === 'multi_id') throw listLabelError(column.name);
  const rows = column.kind === 'numeric' ? column.values.length : column.codes.length;
  let classes: string[];
  let valueOf: (r: number) => string | null;
  if (column.kind === 'numeric') {
    const seen = new Set<number>();
    for (const v of column.values) if (!Number.isNaN(v)) seen.add(v);
    classes = [...seen].sort((a, b) => a - b).map(String);
    valueOf = (r) => (Number.isNaN(column.values[r]) ? null : String(column.values[r]));
  } else {
    const used = new Set<number>();
    for (const c of column.codes) if (c >= 0) used.add(c);
    classes = [...used].map((c) => column.dictionary[c]).sort();
    valueOf = (r) => (column.codes[r] < 0 ? null : column.dictionary[column.codes[r]]);
  }
  const pos = positiveClass(column.name, column.kind, classes, classes.length, positive);
  const y = new Uint8Array(rows);
  let nulls = 0;
  for (let r = 0; r < rows; r++) {
    const v = valueOf(r);
    if (v === null) nulls++;
    else y[r] = v === pos ? 1 : 0;
  }
  checkLabelNulls(column.name, nulls);
  return { y, positive: pos };
}
