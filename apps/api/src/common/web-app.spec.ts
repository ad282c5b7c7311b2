import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEB_APP_CSP, isAppPath, webAppDir } from './web-app';

describe('serving the web app', () => {
  it('answers the app for its own paths only: not /api, not a file name', () => {
    for (const p of ['/', '/signin', '/experiments', '/experiments/0b7ad9a4-3d44-4c1f-9d7c-1a1c5e0e1f00', '/data', '/data/x/'])
      expect(isAppPath(p), p).toBe(true);
    for (const p of ['/api', '/api/', '/api/v1/health', '/api/docs', '/assets/index-abc.js', '/favicon.ico', '/favicon.svg'])
      expect(isAppPath(p), p).toBe(false);
    // a path that merely starts with "api" is the app's
    expect(isAppPath('/apiary')).toBe(true);
  });

  it('finds apps/web/dist of the checkout it runs from, from sources and from the compiled api alike', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-web-'));
    try {
      fs.mkdirSync(path.join(root, 'apps/web'), { recursive: true });
      fs.writeFileSync(path.join(root, 'apps/web/package.json'), '{}');
      const src = path.join(root, 'apps/api/src/common');
      const dist = path.join(root, 'dist/apps/api/src/common');
      fs.mkdirSync(src, { recursive: true });
      fs.mkdirSync(dist, { recursive: true });
      expect(webAppDir(src)).toBe(path.join(root, 'apps/web/dist'));
      expect(webAppDir(dist)).toBe(path.join(root, 'apps/web/dist'));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
    expect(webAppDir()).toBe(path.resolve(__dirname, '../../../web/dist'));
  });

  it("has a CSP without inline script or style: script-src and style-src 'self' only", () => {
    expect(WEB_APP_CSP).toContain("script-src 'self';");
    expect(WEB_APP_CSP).toContain("style-src 'self';");
    expect(WEB_APP_CSP).toContain("object-src 'none'");
    expect(WEB_APP_CSP).not.toMatch(/unsafe|sha256|nonce/);
  });
});
