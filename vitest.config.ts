import path from 'node:path';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const libs = ['access', 'core', 'catalog', 'data', 'queue', 'runtime', 'samples', 'scoring', 'serving', 'store', 'workflows', 'reports'];
const alias: Record<string, string> = {
  // before '@abacus/workflows' (the first matching alias wins): the web app's browser-safe entry
  '@abacus/workflows/browser': path.resolve(__dirname, 'libs/workflows/src/browser.ts'),
  '@abacus/configs': path.resolve(__dirname, 'configs/index.ts'),
};
for (const lib of libs) alias[`@abacus/${lib}`] = path.resolve(__dirname, `libs/${lib}/src/index.ts`);

// SWC instead of esbuild: NestJS dependency injection needs emitted decorator metadata.
const plugins = [swc.vite({ module: { type: 'es6' } })];

export default defineConfig({
  plugins,
  resolve: { alias },
  test: {
    pool: 'forks',
    projects: [
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'unit',
          // apps/** includes the web app's own (apps/web/src/**/*.spec.ts: pure helpers, no DOM needed)
          include: ['libs/**/*.spec.ts', 'apps/**/*.spec.{ts,tsx}', 'configs/**/*.spec.ts'],
          exclude: ['**/node_modules/**', 'apps/web/dist/**'],
          testTimeout: 120_000,
        },
      },
      {
        plugins,
        resolve: { alias },
        // CUDA backend tests: run on a GPU host (see libs/runtime/README.md "CUDA backend")
        test: { name: 'gpu', include: ['libs/runtime/test-gpu/**/*.gpu.test.ts'], testTimeout: 600_000 },
      },
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
