import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';

/** Where screenshots of the web app's pages go (ignored by git). */
export const SCREENSHOT_DIR = path.resolve(__dirname, '../../.data/screenshots');

/**
 * The Chromium the browser tests drive: ABACUS_CHROMIUM when set, else Debian's `chromium` (what
 * scripts/test.sh installs with apt) or another Chromium/Chrome on the PATH. Null when there is none.
 */
export function findChromium(): string | null {
  const named = process.env.ABACUS_CHROMIUM;
  if (named) return fs.existsSync(named) ? named : null;
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    for (const dir of dirs) {
      const file = path.join(dir, name);
      try {
        fs.accessSync(file, fs.constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return null;
}

/** Headless Chromium through playwright-core (no bundled browser: the system's, by path). */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/**
 * Collects what a page reports as errors: console errors and uncaught exceptions. `allowed` lists
 * messages that are expected (e.g. Chromium's own "Failed to load resource: … 401" line when a test
 * signs in with a bad key on purpose).
 */
export function watchConsole(page: Page, allowed: RegExp[] = []): { errors: string[]; expected: string[] } {
  const errors: string[] = [];
  const expected: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    const text = `${m.type()}: ${m.text()} (${m.location().url})`;
    if (m.type() === 'warning' && !/react|router|query/i.test(text)) return;
    if (allowed.some((a) => a.test(m.text()))) expected.push(text);
    else errors.push(text);
  });
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  return { errors, expected };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
