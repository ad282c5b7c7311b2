import fs from 'node:fs';
import path from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/**
 * The CSP of the web app's page: helmet's defaults made strict — scripts and styles only from this
 * origin (the built app has no inline script or style), no plugins, no framing by other sites.
 */
export const WEB_APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

/**
 * The built web app (apps/web/dist) of this checkout or image: found by walking up from this file,
 * so it is the same from the compiled api (dist/apps/api/...) and from its sources (tests).
 */
export function webAppDir(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'apps', 'web', 'package.json'))) return path.join(dir, 'apps', 'web', 'dist');
    const up = path.dirname(dir);
    if (up === dir) return path.resolve('apps/web/dist');
    dir = up;
  }
}

/** A path the single-page app answers itself (a deep link), not a file and not the api. */
export function isAppPath(urlPath: string): boolean {
  if (urlPath === '/api' || urlPath.startsWith('/api/')) return false;
  const last = urlPath.slice(urlPath.lastIndexOf('/') + 1);
  return !last.includes('.');
}

/**
 * Serves the web app at /: its hashed assets (cached for good), and index.html for every other GET of
 * a path that is not under /api and names no file — the app's own router then shows that page.
 * Registered before the api's routes; /api/* is never answered here.
 */
export function serveWebApp(app: NestExpressApplication, dir: string): void {
  const index = path.join(dir, 'index.html');
  app.useStaticAssets(path.join(dir, 'assets'), {
    prefix: '/assets/',
    index: false,
    immutable: true,
    maxAge: '365d',
    fallthrough: true,
  });
  app.useStaticAssets(dir, {
    index: false,
    maxAge: '1h',
    fallthrough: true,
    // /index.html asked for by name gets the page's CSP too
    setHeaders: (res, file) => {
      if (file.endsWith('.html')) {
        res.setHeader('content-security-policy', WEB_APP_CSP);
        res.setHeader('cache-control', 'no-cache');
      }
    },
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !isAppPath(req.path)) return next();
    res.setHeader('content-security-policy', WEB_APP_CSP);
    res.setHeader('cache-control', 'no-cache');
    if (!fs.existsSync(index)) {
      res
        .status(503)
        .type('text/plain')
        .send(
          'The web app is not built: run `npm run build` (it builds apps/web into apps/web/dist). The API is under /api/v1.\n',
        );
      return;
    }
    res.sendFile(index, (err) => {
      if (err && !res.headersSent) next(err);
    });
  });
}
