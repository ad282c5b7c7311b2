import type { Plugin } from 'vite';

/**
 * Modules the browser bundle must never contain: server packages (TypeORM, pg, NestJS, BullMQ,
 * Redis, DuckDB, Express), Node built-ins (Vite swaps them for `__vite-browser-external`), the libs
 * that do I/O, and any lib's barrel (`libs/<lib>/src/index.ts` re-exports services). The web app
 * reaches the api's schemas only through `libs/workflows/src/browser.ts`; of the I/O libs it may hold
 * one pure zod module, the feature-expression schema the experiment schemas name.
 */
const FORBIDDEN = [
  /[\\/]node_modules[\\/](typeorm|pg|pg-[a-z-]+|@nestjs|bullmq|ioredis|@duckdb|express|reflect-metadata|multer)[\\/]/,
  /__vite-browser-external/,
  /^node:/,
  /[\\/]libs[\\/](access|data|queue|runtime|samples|scoring|serving)[\\/](?!src[\\/]expr[\\/]feature-expr\.schema\.ts$)/,
  /[\\/]libs[\\/][a-z-]+[\\/]src[\\/]index\.ts$/,
];

/** The module ids among `ids` that must not be in the browser bundle. */
export function forbiddenModules(ids: Iterable<string>): string[] {
  return [...ids].filter((id) => FORBIDDEN.some((re) => re.test(id)));
}

/** Fails `vite build` when a chunk of the bundle holds a forbidden module, naming it. */
export function bundleGuard(): Plugin {
  return {
    name: 'abacus-bundle-guard',
    apply: 'build',
    generateBundle(_options, bundle) {
      const bad = new Set<string>();
      for (const out of Object.values(bundle))
        if (out.type === 'chunk') for (const id of forbiddenModules(out.moduleIds)) bad.add(id);
      if (bad.size)
        this.error(`the browser bundle must not include Node or server modules; it includes: ${[...bad].sort().join(', ')}`);
    },
  };
}
