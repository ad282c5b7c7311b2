import { loadConfig } from '@abacus/configs';
import { runtimeStatus } from '@abacus/runtime';

/** What the health endpoint says about the runtime: the configured choice and what this host can run. */
export function describeBackends(): Record<string, unknown> {
  const config = loadConfig();
  return { configured: config.ABACUS_RUNTIME_BACKEND, ...runtimeStatus() };
}
