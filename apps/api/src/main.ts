import { ConfigError, loadConfig } from '@abacus/configs';
import { startApi } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const api = await startApi(config);
  const stop = () => {
    api.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `abacus-api failed to start: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
