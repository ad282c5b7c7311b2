/**
 * GPUs of one worker handed to trials one at a time: with N devices the worker runs N trials at
 * once, each on its own GPU. Off the GPU the pool has a single slot (undefined device).
 */
export class DevicePool {
  private readonly free: number[];
  private readonly waiting: ((d: number) => void)[] = [];

  constructor(readonly size: number) {
    this.free = Array.from({ length: size }, (_, i) => i);
  }

  async acquire(): Promise<number | undefined> {
    if (this.size === 0) return undefined;
    const d = this.free.shift();
    if (d !== undefined) return d;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(device: number | undefined): void {
    if (device === undefined) return;
    const next = this.waiting.shift();
    if (next) next(device);
    else this.free.push(device);
  }
}
