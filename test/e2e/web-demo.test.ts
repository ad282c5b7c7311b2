import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { cli, freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { apiClient } from '../support/http';
import { findChromium, launchChromium, screenshot, watchConsole } from '../support/browser';

/**
 * The strategy engineer's path on the demo world, in headless Chromium, with two worker processes:
 * the world is simulated and registered as the quick start does (`abacus sim`, `abacus demo`, at a
 * smaller size), a subtract of the demo's `base` model is launched from the form and followed to its
 * verdict and pruning curve; then a report schedule on that model fires a few seconds ahead and,
 * with both workers listening, makes exactly one report, which the reports pages show; and a discover
 * of the same model launched from the form proposes expressions, whose adopted ones appear in the
 * registry with the experiment as provenance and measured costs.
 */

const CHROMIUM = findChromium();
if (!CHROMIUM)
  console.warn('[web-demo e2e] SKIPPED: no Chromium on this machine (apt-get install -y chromium, or set ABACUS_CHROMIUM).');

let env: TestEnv;
let api: Proc;
const workers: Proc[] = [];
let url = '';
let browser: Browser;
let page: Page;
let consoleErrors: { errors: string[]; expected: string[] };

const admin = apiClient(
  () => url,
  () => env.adminKey,
);

/** A 6-field cron (seconds first) that fires once a day at `t` (UTC). */
const cronAt = (t: Date) => `${t.getUTCSeconds()} ${t.getUTCMinutes()} ${t.getUTCHours()} * * *`;

describe.skipIf(!CHROMIUM)('the demo world in the browser, with two worker processes', () => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = await createTestEnv({ ABACUS_API_PORT: String(port), ABACUS_API_URL: url });
    api = startProcess('dist/apps/api/src/main.js', env.env);
    await waitForApi(api, url);
    const world = path.join(env.dataDir, 'demo');
    const sim = await cli(['sim', '--seed', '7', '--rows', '30000', '--derived-effects', '--out', world], env.env);
    expect(sim.code, sim.stderr).toBe(0);
    const demo = await cli(['demo', '--dir', world], env.env);
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/sample set feed\/demo-feed/);
    for (let i = 0; i < 2; i++) workers.push(startProcess('dist/apps/worker/src/main.js', env.env));
    await waitUntil(async () => workers.every((w) => /listening on queues/.test(w.output())), 60_000, 'both workers');
    browser = await launchChromium(CHROMIUM!);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    consoleErrors = watchConsole(page);
    await page.goto(`${url}/signin`);
    await page.getByLabel('API key').fill(env.adminKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/experiments$/);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    for (const w of workers) await w.stop();
    await api?.stop();
    await env?.teardown();
  });

  it("launches a subtract of the demo's base model from the form and follows it to its verdict and pruning curve", async () => {
    await page.getByRole('link', { name: 'New experiment' }).click();
    await page.getByRole('navigation', { name: 'experiment kind' }).getByRole('link', { name: 'subtract', exact: true }).click();
    await page.waitForURL(/kind=subtract/);
    await page.getByLabel('Name', { exact: true }).fill('prune the demo base model');
    await page.getByLabel('Business line').selectOption('feed');
    await page.getByLabel('a registered model').check();
    await page.getByLabel('Registered model', { exact: true }).selectOption('base');
    await page.getByLabel('Retrain seeds').fill('1');
    await screenshot(page, 'demo-subtract-form');
    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();
    await page.getByRole('heading', { name: /prune the demo base model/ }).waitFor();
    const id = page.url().split('/').pop()!;
    // progress to the end, without a reload
    await page.locator('.verdict').waitFor({ timeout: 240_000 });
    const e = (await admin.call('GET', `/experiments/${id}`)).body as {
      status: string;
      spec: { model: Record<string, unknown> };
      result: { removable: string[]; curve: unknown[]; features: number; confirmed: { withinLimit: boolean } | null };
      trials: { backend: string | null; kind: string }[];
    };
    expect(e.status).toBe('succeeded');
    expect(e.spec.model).toMatchObject({ model: 'base' });
    const verdict = await page.locator('.verdict').innerText();
    expect(verdict).toContain(`${e.result.removable.length} of ${e.result.features} features can be removed`);
    const curve = page.locator('figure.chart-figure').first();
    expect(await curve.locator('figcaption').innerText()).toBe('Pruning curve');
    expect(await curve.locator('svg.chart g.chart-mark').count()).toBe(e.result.curve.length);
    // every training trial says where it ran
    expect(e.trials.filter((t) => t.kind === 'train').every((t) => t.backend === 'cpu')).toBe(true);
    await screenshot(page, 'demo-subtract-done');
    expect(consoleErrors.errors).toEqual([]);
  }, 300_000);

  it('discovers features from the form: the adopted expressions are registered with provenance and measured costs', async () => {
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Experiments' }).click();
    await page.getByRole('link', { name: 'New experiment' }).click();
    await page.getByRole('navigation', { name: 'experiment kind' }).getByRole('link', { name: 'discover', exact: true }).click();
    await page.waitForURL(/kind=discover/);
    await page.getByLabel('Name', { exact: true }).fill('discover on the demo');
    await page.getByLabel('Business line').selectOption('feed');
    await page.getByLabel('a registered model').check();
    await page.getByLabel('Registered model', { exact: true }).selectOption('base');
    // a smaller screen and comparison than the defaults, for a 15,000-row line on two cores
    await page.getByLabel('Windows').fill('7d');
    await page.getByLabel('Max candidates').fill('400');
    await page.getByLabel('Verified').fill('2');
    await screenshot(page, 'demo-discover-form');
    await page.getByRole('button', { name: 'Launch discover experiment' }).click();
    await page.getByRole('heading', { name: /discover on the demo/ }).waitFor();
    const id = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'Discovered features' }).waitFor({ timeout: 300_000 });
    const e = (await admin.call('GET', `/experiments/${id}`)).body as {
      status: string;
      result: { chosen: { name: string; text: string; verdict: string | null }[]; registered: string[]; costs: { measured: number } | null };
    };
    expect(e.status).toBe('succeeded');
    // proposed: the expressions sent on are in the page's table, the planted cross among them
    const table = page.getByRole('region', { name: 'discovered features' }).locator('tbody tr');
    expect(await table.count()).toBe(e.result.chosen.length);
    expect(e.result.chosen.map((c) => c.text).some((t) => t.startsWith('cross(d_region, d_slot'))).toBe(true);
    const adopted = e.result.chosen.filter((c) => c.verdict === 'adopt').map((c) => c.name);
    expect(adopted.length, JSON.stringify(e.result.chosen)).toBeGreaterThan(0);
    expect(e.result.registered).toEqual(adopted);
    expect(e.result.costs).toMatchObject({ measured: adopted.length });
    await screenshot(page, 'demo-discover-done');
    // an adopted one in the registry: its expression, the experiment as provenance, measured costs
    await page.getByRole('link', { name: adopted[0], exact: true }).click();
    await page.waitForURL(/\/features\?/);
    await page.getByRole('link', { name: adopted[0], exact: true }).click();
    await page.waitForURL(/\/features\/[0-9a-f-]+$/);
    await page.getByRole('heading', { name: 'Definition' }).waitFor();
    await page.locator('tr[data-resource="storage"]').waitFor();
    expect(await page.locator('tr[data-resource="storage"]').innerText()).toContain('measured');
    const provenance = page.locator('section[aria-labelledby="provenance"]');
    await provenance.locator(`a[href="/experiments/${id}"]`).first().waitFor();
    await screenshot(page, 'demo-discover-feature');
    expect(consoleErrors.errors).toEqual([]);
  }, 400_000);

  it('a report schedule on the demo model fires once with two worker processes; the reports pages show the report', async () => {
    const fireAt = new Date(Math.ceil((Date.now() + 8_000) / 1000) * 1000);
    const s = await admin.call('POST', '/report-schedules', {
      model: 'base',
      businessLine: 'feed',
      cron: cronAt(fireAt),
      timezone: 'UTC',
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    const report = await waitUntil(
      async () => {
        const r = await admin.call('GET', '/reports?businessLine=feed');
        const done = (r.body.items as { id: string; status: string }[]).find((x) => x.status !== 'running');
        return done ?? null;
      },
      300_000,
      'the scheduled report',
    );
    // a little longer: a second fire or a duplicate run would show by now
    await new Promise((r) => setTimeout(r, 3_000));
    const all = (await admin.call('GET', '/reports?businessLine=feed')).body as {
      total: number;
      items: { id: string; status: string; trigger: string; fireAt: string }[];
    };
    expect(all.total).toBe(1);
    expect(all.items[0]).toMatchObject({ status: 'succeeded', trigger: 'schedule', fireAt: fireAt.toISOString() });
    expect(report.id).toBe(all.items[0]!.id);
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Reports' }).click();
    await page.locator(`a[href="/reports/${all.items[0]!.id}"]`).first().click();
    await page.getByRole('heading', { name: /Report: feed\/base/ }).waitFor();
    expect(await page.locator('figure.chart-figure').first().locator('figcaption').innerText()).toBe('Pruning curve');
    await screenshot(page, 'demo-report');
    expect(consoleErrors.errors).toEqual([]);
  }, 360_000);
});
