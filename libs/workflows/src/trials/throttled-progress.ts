/**
 * One trial's progress writes, spaced: the first goes out at once, later ones at most one every
 * `minMs` and never two at a time; a report made meanwhile replaces the one waiting (the latest
 * wins). A fit reports every few dozen steps, and each write is a queue update plus two database
 * statements on the worker's event loop: unspaced, three fits side by side sent hundreds a second
 * and slowed the fits. A failed write is dropped (progress only). `close` writes what waits and
 * waits for it, so nothing lands after the trial's result.
 */
export class ThrottledProgress {
  private last = -Infinity;
  private inflight: Promise<void> | null = null;
  private pending: [number, string] | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly write: (fraction: number, message: string) => Promise<void>,
    private readonly minMs = 250,
  ) {}

  report(fraction: number, message: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.pending = [fraction, message];
    if (this.inflight || this.timer) return Promise.resolve();
    const wait = this.last + this.minMs - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.pump();
      }, wait);
      return Promise.resolve();
    }
    return this.pump();
  }

  private pump(): Promise<void> {
    const p = this.pending;
    if (!p) return Promise.resolve();
    this.pending = null;
    this.last = Date.now();
    const w = this.write(p[0], p[1])
      .catch(() => undefined)
      .finally(() => {
        this.inflight = null;
        if (this.pending && !this.closed) void this.report(...this.pending);
      });
    this.inflight = w;
    return w;
  }

  /** waits for the write in flight; then writes what waits (`flush`) or drops it; reports after it are dropped */
  async close(flush = true): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!flush) this.pending = null;
    this.closed = true;
    await this.inflight;
    if (this.pending) await this.pump();
  }
}
