import { loadConfig } from '@abacus/configs';
import { cudaAddonAvailable, nativeAddonAvailable, resolveBackend } from '@abacus/runtime';

/** What the health endpoint says about the runtime: the configured choice and what this host can run. */
export function describeBackends(): Record<string, unknown> {
  const configured = loadConfig().ABACUS_RUNTIME_BACKEND;
  let resolved: string | null = null;
  let error: string | null = null;
  try {
    resolved = resolveBackend(configured);
  } catch (err) {
    error = (err as Error).message;
  }
  return { configured, resolved, cpuAddon: nativeAddonAvailable(), cudaAddon: cudaAddonAvailable(), error };
}
