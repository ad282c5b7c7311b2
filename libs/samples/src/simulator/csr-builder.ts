import type { MultiIdColumn } from './sim-world.types';

/** Grows a CSR (offsets + ids) list column row by row without per-row objects. */
export class CsrBuilder {
  private ids = new Int32Array(1024);
  private length = 0;
  private readonly offsets: Int32Array;
  private row = 0;

  constructor(readonly rows: number) {
    this.offsets = new Int32Array(rows + 1);
  }

  push(id: number): void {
    if (this.length === this.ids.length) {
      const grown = new Int32Array(this.ids.length * 2);
      grown.set(this.ids);
      this.ids = grown;
    }
    this.ids[this.length++] = id;
  }

  /** true when `id` is already in the current (open) row: keeps lists duplicate-free */
  hasInOpenRow(id: number): boolean {
    for (let k = this.offsets[this.row]; k < this.length; k++) if (this.ids[k] === id) return true;
    return false;
  }

  endRow(): void {
    this.row++;
    this.offsets[this.row] = this.length;
  }

  build(name: string, vocab: number): MultiIdColumn {
    if (this.row !== this.rows) throw new Error(`CsrBuilder ${name}: ${this.row} rows ended, expected ${this.rows}`);
    return { name, offsets: this.offsets, ids: this.ids.slice(0, this.length), vocab };
  }
}
