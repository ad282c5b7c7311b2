import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react-swc';
import { defineConfig } from 'vite';
import { bundleGuard } from './bundle-guard';

// Built to apps/web/dist, which the api serves at / (static assets + the SPA's deep links).
// `npm run dev -w apps/web` serves it on :5173 and sends /api to the api on :3000.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react(), bundleGuard()],
  resolve: {
    alias: {
      // the api's experiment schemas, pure zod: the form validates with the very schemas the api does
      '@abacus/workflows/browser': fileURLToPath(new URL('../../libs/workflows/src/browser.ts', import.meta.url)),
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // no inline scripts or styles: the api serves the page with script-src 'self' and style-src 'self'
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      onwarn(warning, warn) {
        // zod 4 places a /* @__PURE__ */ comment where Rollup cannot use it; Rollup drops it, harmlessly
        if (warning.code === 'INVALID_ANNOTATION' && warning.id?.includes('/node_modules/zod/')) return;
        warn(warning);
      },
    },
  },
  server: { proxy: { '/api': 'http://127.0.0.1:3000' } },
});
