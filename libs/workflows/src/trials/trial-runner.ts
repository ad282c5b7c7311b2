import { Logger } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { classifyError, isDeviceFaultError, toJobError, type JobContext } from '@abacus/queue';
import type { ExperimentEntity, TrialEntity } from '@abacus/data';
import type { TrialLedger } from './trial-ledger';
import { ThrottledProgress } from './throttled-progress';

export class TrialCancelledError extends Error {
  constructor() {
    super('experiment cancelled');
  }
}

export interface TrialScope {
  trial: TrialEntity;
  experiment: ExperimentEntity;
  /** aborted when the experiment is cancelled or the worker shuts down */
  signal: AbortSignal;
  /** throws TrialCancelledError (or the shutdown reason) if the trial must stop now */
  checkpoint(): void;
  progress(fraction: number, message: string): Promise<void>;
  logger: Logger;
}

export interface TrialOutcome {
  metrics: Record<string, unknown>;
  backend?: string | null;
}

const CANCEL_POLL_MS = 1000;

/** Fault injection (ABACUS_DEBUG_DEVICE_FAULT): which trial kind, and how to fault once. */
export interface DeviceFaultInjection {
  trialKind: string;
  /** true for the one trial that faults (claimed once by every worker sharing the setting) */
  claim(trialId: string): boolean;
  /** causes the fault (on the GPU the next GPU operation fails; on the CPU it throws); returns what it did */
  inject(): string;
}
let injection: DeviceFaultInjection | null = null;
/** Set by the worker at start-up when ABACUS_DEBUG_DEVICE_FAULT is configured. */
export function setDeviceFaultInjection(f: DeviceFaultInjection | null): void {
  injection = f;
}

/**
 * The frame every trial kind runs in: claims the row, watches for cancellation, records success,
 * failure (final only on the last attempt) or cancellation, and lets the queue retry the rest.
 */
export async function runTrial(
  ledger: TrialLedger,
  payload: { trialId: string; experimentId: string },
  ctx: JobContext,
  body: (scope: TrialScope) => Promise<TrialOutcome>,
): Promise<{ status: string }> {
  const logger = new Logger(`trial ${payload.trialId} / experiment ${payload.experimentId}`);
  const claimed = await ledger.begin(payload.trialId);
  if (!claimed) {
    logger.log('skipped: cancelled or already finished');
    return { status: 'skipped' };
  }
  const failedDeps = await ledger.failedDependencies(claimed.trial);
  if (failedDeps.length) {
    const error = `not run: trial(s) it depends on did not succeed: ${failedDeps.map((d) => `#${d.seq} ${d.kind} (${d.status})`).join(', ')}`;
    await ledger.finish(payload.trialId, 'failed', { error });
    logger.warn(error);
    throw new UnrecoverableError(error);
  }
  const controller = new AbortController();
  const onShutdown = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onShutdown);
  let cancelled = false;
  const poll = setInterval(() => {
    ledger
      .isCancelled(payload.experimentId)
      .then((c) => {
        if (c && !controller.signal.aborted) {
          cancelled = true;
          controller.abort(new TrialCancelledError());
        }
      })
      .catch(() => undefined);
  }, CANCEL_POLL_MS);
  const progress = new ThrottledProgress(async (fraction, message) => {
    await ctx.job.updateProgress(Math.round(fraction * 100));
    await ledger.progress(claimed.trial, fraction, message);
  });
  const scope: TrialScope = {
    ...claimed,
    signal: controller.signal,
    logger,
    checkpoint: () => {
      if (!controller.signal.aborted) return;
      throw cancelled ? new TrialCancelledError() : (ctx.signal.reason ?? new Error('aborted'));
    },
    progress: (fraction, message) => progress.report(fraction, message),
  };
  try {
    logger.log(`started ${claimed.trial.kind} (attempt ${claimed.trial.attempts})`);
    if (injection && injection.trialKind === claimed.trial.kind && ctx.job.attemptsMade === 0 && injection.claim(payload.trialId)) {
      logger.warn(`fault injection (ABACUS_DEBUG_DEVICE_FAULT=${injection.trialKind}): a GPU fault before the trial runs`);
      logger.warn(`fault injection: ${injection.inject()}`);
    }
    const outcome = await body(scope);
    await progress.close();
    scope.checkpoint();
    await ledger.finish(payload.trialId, 'succeeded', { metrics: outcome.metrics, backend: outcome.backend });
    logger.log('succeeded');
    return { status: 'succeeded' };
  } catch (err) {
    // what the trial reported last is not written over its outcome
    await progress.close(false);
    if (cancelled || err instanceof TrialCancelledError || (await ledger.isCancelled(payload.experimentId))) {
      await ledger.finish(payload.trialId, 'cancelled', {});
      logger.log('cancelled');
      return { status: 'cancelled' };
    }
    const message = err instanceof Error ? err.message : String(err);
    if (ctx.signal.aborted) {
      // worker shutting down: the job goes back to the queue and this attempt does not count as a failure
      await ledger.release(payload.trialId, `released at shutdown: ${message}`);
      logger.log('released at shutdown');
      throw err;
    }
    const stack = err instanceof Error ? (err.stack ?? message) : message;
    const cls = classifyError(err);
    const attempts = ctx.job.opts.attempts ?? 1;
    // a deterministic error would fail the same way again: it fails now, once
    const final = cls.kind === 'deterministic' || ctx.job.attemptsMade + 1 >= attempts;
    // a GPU fault is not the trial's: say so in its log; the worker restarts and the trial runs again
    const error = isDeviceFaultError(err)
      ? `device fault (the worker's CUDA context was lost; the worker restarts${final ? '' : ' and the trial runs again on the fresh process'}), attempt ${ctx.job.attemptsMade + 1} of ${attempts}: ${message}`
      : message;
    await ledger.finish(payload.trialId, final ? 'failed' : 'queued', { error, errorStack: stack });
    const what = `${cls.kind} error (${cls.reason}), attempt ${ctx.job.attemptsMade + 1} of ${attempts}`;
    if (final) logger.error(`failed: ${message} [${what}]`, stack);
    else logger.warn(`will retry: ${message} [${what}]\n${stack}`);
    throw toJobError(err);
  } finally {
    await progress.close(false);
    clearInterval(poll);
    ctx.signal.removeEventListener('abort', onShutdown);
  }
}
