import { Logger } from '@nestjs/common';
import { ConfigError, loadConfig, sizeWorkerThreadPool } from '@abacus/configs';
import { startWorker } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  sizeWorkerThreadPool(config);
  const worker = await startWorker(config, {
    onDeviceFault: () => {
      Logger.error('exiting (75) after a GPU fault: the supervisor restarts the worker on a fresh CUDA context', 'abacus-worker');
      process.exit(75);
    },
  });
  // the worker's memory every ABACUS_MEMORY_LOG_SECONDS (0 = never): resident set, V8 heap, and the
  // memory of typed arrays (the samples copied into memory are there)
  if (config.ABACUS_MEMORY_LOG_SECONDS > 0) {
    const gib = (b: number) => (b / 2 ** 30).toFixed(2);
    setInterval(() => {
      const m = process.memoryUsage();
      Logger.log(
        `memory: rss ${gib(m.rss)} GiB, heap ${gib(m.heapUsed)} GiB, array buffers ${gib(m.arrayBuffers)} GiB, external ${gib(m.external)} GiB`,
        'abacus-worker',
      );
    }, config.ABACUS_MEMORY_LOG_SECONDS * 1000).unref();
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    Logger.log(`${signal}: finishing or releasing the current job(s)`, 'abacus-worker');
    worker.stop().then(
      () => process.exit(0),
      (err: Error) => {
        Logger.error(err.message, 'abacus-worker');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `abacus-worker failed to start: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
