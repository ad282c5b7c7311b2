import path from 'node:path';
import { defineConfig } from 'vitest/config';

// The `gpu` project alone, without the root config's SWC plugin (the runtime needs no decorator
// metadata) and without the other libraries' aliases: what a GPU host needs to run
// `vitest run --project gpu` with only Node, vitest and the built addons (scripts/gpu-vitest.sh).
export default defineConfig({
  root: path.resolve(__dirname, '../../..'),
  test: {
    projects: [{ test: { name: 'gpu', include: ['libs/runtime/test-gpu/**/*.gpu.test.ts'], testTimeout: 600_000 } }],
  },
});
