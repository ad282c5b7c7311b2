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
