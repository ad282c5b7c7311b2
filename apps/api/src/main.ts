import { Logger } from '@nestjs/common';
import { ConfigError, loadConfig } from '@abacus/configs';
import { startApi } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const api = await startApi(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // close() stops accepting connections and resolves once in-flight requests have been answered
    Logger.log(`${signal}: no new connections; finishing in-flight requests`, 'abacus-api');
    api.close().then(
      () => {
        Logger.log('stopped', 'abacus-api');
        process.exit(0);
      },
      (err: Error) => {
        Logger.error(`shutdown failed: ${err.message}`, err.stack, 'abacus-api');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `abacus-api failed to start: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
