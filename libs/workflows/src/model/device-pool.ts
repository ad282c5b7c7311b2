/**
 * GPUs of one worker handed to trials one at a time: with N devices the worker runs N trials at
 * once, each on its own GPU. Off the GPU the pool has a single slot (undefined device).
 *
 * Within a trial, independent fits (the seeds of a retraining check, the confirm step's models) run
 * `lanes` at a time on the trial's GPU — each model on its own CUDA stream, so one model's kernel
 * launches fill the gaps of another's — and, with `borrow`, spill onto any other GPU of the pool
 * that is free at that moment (borrowed for the batch, handed back when it ends): see onDevices.
 */
export class DevicePool {
  private readonly free: number[];
  private readonly waiting: ((d: number) => void)[] = [];

  /**
   * @param size  GPUs of the worker (0 off the GPU)
   * @param lanes models a trial trains at once on one GPU (ABACUS_GPU_LANES)
   * @param borrow whether a trial's fits may spill onto the pool's other free GPUs (ABACUS_GPU_BORROW)
   * @param lookahead how many verdicts ahead a subtract's pruning fits the retraining checks it may ask
   *   for next, beside the one asked for; 0 = off (ABACUS_PRUNE_LOOKAHEAD)
   * @param confirmAhead whether the prune step trains the confirm step's whole-model fits beside its
   *   checks (ABACUS_CONFIRM_AHEAD)
   * @param fineTuneInPlace whether warm checks restore lane models in place and switch inputs off inside
   *   the model instead of loading a checkpoint and copying rows per fit (ABACUS_FINE_TUNE_IN_PLACE)
   * @param hostFits independent fits a trial runs at once off the GPU (ABACUS_HOST_FITS), each on its share
   *   of the runtime's threads (ModelTrainer's batchThreads)
   */
  constructor(
    readonly size: number,
    readonly lanes = 1,
    readonly borrow = false,
    readonly lookahead = 0,
    readonly confirmAhead = false,
    readonly fineTuneInPlace = true,
    readonly hostFits = 1,
  ) {
    if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`DevicePool: lanes must be a positive integer, not ${lanes}`);
    if (!Number.isInteger(hostFits) || hostFits < 1)
      throw new Error(`DevicePool: hostFits must be a positive integer, not ${hostFits}`);
    if (!Number.isInteger(lookahead) || lookahead < 0)
      throw new Error(`DevicePool: lookahead must be a non-negative integer, not ${lookahead}`);
    this.free = Array.from({ length: size }, (_, i) => i);
  }

  async acquire(): Promise<number | undefined> {
    if (this.size === 0) return undefined;
    const d = this.free.shift();
    if (d !== undefined) return d;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** a free GPU now, or undefined (none free, or no GPU): never waits */
  tryAcquire(): number | undefined {
    return this.free.shift();
  }

  release(device: number | undefined): void {
    if (device === undefined) return;
    const next = this.waiting.shift();
    if (next) next(device);
    else this.free.push(device);
  }
}

/**
 * Runs independent tasks on the trial's device (`own`, held by the caller) `lanes` (default
 * `pool.lanes`) at a time,
 * and, where the pool lets trials borrow, on every other GPU of the pool free when the batch starts
 * (released when the batch ends); off the GPU, `hostFits` (default `pool.hostFits`) at a time (each fit
 * on its share of the cores: the trainer's batchThreads; 1: one after another). Results come back in the tasks' order, whichever device ran
 * them. After a task fails no new task starts; the batch waits for the running ones, then throws the
 * first error (a borrowed device is never released while a model still runs on it).
 */
export async function onDevices<T>(
  pool: DevicePool,
  own: number | undefined,
  tasks: ((device: number | undefined) => Promise<T>)[],
  lanes = pool.lanes,
  hostFits = pool.hostFits,
): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  if (tasks.length <= 1 || (own === undefined && hostFits <= 1)) {
    for (const [i, task] of tasks.entries()) results[i] = await task(own);
    return results;
  }
  if (own === undefined) lanes = hostFits;
  const devices: (number | undefined)[] = [own];
  while (own !== undefined && pool.borrow && devices.length * lanes < tasks.length) {
    const d = pool.tryAcquire();
    if (d === undefined) break;
    devices.push(d);
  }
  const borrowed = devices.slice(1) as number[];
  // spread the tasks over the devices first (own, borrowed, own, ...), then over a device's lanes
  const slots = Array.from({ length: lanes }, () => devices).flat();
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async (device: number | undefined) => {
    while (failure === null && next < tasks.length) {
      const i = next++;
      try {
        results[i] = await tasks[i](device);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  try {
    await Promise.all(slots.slice(0, tasks.length).map((d) => lane(d)));
  } finally {
    for (const d of borrowed) pool.release(d);
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
