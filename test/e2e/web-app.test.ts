import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { createDataSource } from '@abacus/data';
import { EmbeddingService } from '@abacus/catalog';
import { findChromium, launchChromium, screenshot, watchConsole } from '../support/browser';

/**
 * The web app in a real headless Chromium against the built api and worker: sign-in (a bad key, then
 * a good one), the experiments list with live status, an experiment's page with its cancel button,
 * the DataBank with its filters, a sample set's page, deep links, the empty state, and a revoked key
 * sending the browser back to the sign-in form. Screenshots of every page land in .data/screenshots/.
 */

const CHROMIUM = findChromium();
if (!CHROMIUM) {
  console.warn(
    "[web-app e2e] SKIPPED: no Chromium on this machine. scripts/test.sh installs Debian's `chromium` with apt; " +
      'install it (apt-get install -y chromium) or set ABACUS_CHROMIUM to a Chromium binary.',
  );
}

// Chromium logs a failed request itself ("Failed to load resource: … 401"): expected exactly when a
// test sends a bad or revoked key on purpose; any other console error fails the test.
const EXPECTED_401 = /Failed to load resource: the server responded with a status of 401/;

let env: TestEnv;
let api: Proc;
let worker: Proc | undefined;
let url = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
let consoleErrors: { errors: string[]; expected: string[] };
let scoreId = '';
let cancelId = '';
let failId = '';
let emptyKey = '';
let emptyKeyId = '';

const admin = apiClient(
  () => url,
  () => env.adminKey,
);

function writeSearchCsv(file: string, rows: number): void {
  const lines = ['ts,strong,query_len,order'];
  let s = 7;
  for (let i = 0; i < rows; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const strong = (s / 2 ** 32) * 2 - 1;
    lines.push(`${1_700_000_000 + i * 60},${strong.toFixed(4)},${1 + (i % 9)},${strong > 0.4 ? 1 : 0}`);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

async function upload(file: string, fields: Record<string, string>): Promise<Record<string, any>> {
  const r = await admin.upload('/sample-sets', file, fields);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function submitScore(name: string, businessLine = 'feed', sampleSet = 'feed-clicks'): Promise<string> {
  const r = await admin.call('POST', '/experiments', {
    kind: 'score',
    businessLine,
    name,
    spec: { sampleSet },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
}

/** The key the app keeps in localStorage (the root tsconfig has no DOM types: the expression is a string). */
const storedKey = () => page.evaluate<string | null>("localStorage.getItem('abacus.apiKey')");

/** The texts of the first cell of each row of the sample-set tables (their names). */
const setNames = async () => (await page.locator('table.sample-sets tbody tr td:first-child').allInnerTexts()).sort();

describe.skipIf(!CHROMIUM)('web app in headless Chromium (built api + worker)', () => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = await createTestEnv({ ABACUS_API_PORT: String(port), ABACUS_API_URL: url });
    api = startProcess('dist/apps/api/src/main.js', env.env);
    await waitForApi(api, url);
    for (const name of ['feed', 'search', 'ads', 'lab'])
      expect((await admin.call('POST', '/business-lines', { name })).status).toBe(201);
    const feedCsv = path.join(env.dataDir, 'in', 'feed.csv');
    const searchCsv = path.join(env.dataDir, 'in', 'search.csv');
    writeSmallCsv(feedCsv, 400);
    writeSearchCsv(searchCsv, 300);
    await upload(feedCsv, { name: 'feed-clicks', businessLine: 'feed', label: 'click', time: 'ts' });
    await upload(searchCsv, {
      name: 'search-orders',
      businessLine: 'search',
      label: 'order',
      time: 'ts',
      labelSemantics: 'click->order',
      shareWith: 'feed',
    });
    // no worker yet: both experiments stay queued until the worker starts (one is cancelled before)
    // a set whose stored file goes away before its experiment runs: that experiment fails, with the reason
    const doomed = await upload(searchCsv, {
      name: 'lab-doomed',
      businessLine: 'lab',
      label: 'order',
      time: 'ts',
      labelSemantics: 'exposure->order',
    });
    scoreId = await submitScore('web score');
    cancelId = await submitScore('web to cancel');
    failId = await submitScore('web doomed', 'lab', 'lab-doomed');
    expect(doomed.files).toHaveLength(1);
    for (const f of doomed.files as string[]) fs.rmSync(path.join(env.dataDir, f));
    // a shared embedding of search, shared with feed (multiply registers them; here the registry directly)
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      await new EmbeddingService(ds).register({
        name: 'search.web-test',
        businessLine: 'search',
        owner: 'test-admin',
        dim: 8,
        slots: [{ name: 'color', rows: 4, idSpace: 'dictionary' }],
        sources: [
          {
            sampleSetId: doomed.id,
            businessLine: 'search',
            name: 'search-orders',
            dataVersion: 'sha256:0123456789abcdef',
            role: 'target',
            rows: 300,
          },
        ],
        sharingPolicy: { shareWith: ['feed'] },
        file: 'embeddings/none/embedding.safetensors',
        bytes: 0,
        sha256: 'none',
        experimentId: null,
        originKey: 'web-test',
        provenance: {},
      });
    } finally {
      await ds.destroy();
    }
    const k = await admin.call('POST', '/keys', { name: 'ads-viewer', role: 'viewer', lines: ['ads'] });
    expect(k.status).toBe(201);
    emptyKey = k.body.secret as string;
    emptyKeyId = k.body.id as string;

    browser = await launchChromium(CHROMIUM!);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    consoleErrors = watchConsole(page, [EXPECTED_401]);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await api?.stop();
    await env?.teardown();
  });

  it("sends a visitor without a key to the sign-in form, which shows the api's reason for a bad key", async () => {
    await page.goto(`${url}/data?line=feed`);
    await page.waitForURL(/\/signin\?redirect=/);
    await page.getByLabel('API key').waitFor();
    await screenshot(page, 'signin');
    await page.getByLabel('API key').fill(`abk_${'A'.repeat(43)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/unknown API key abk_AAAA/);
    expect(await storedKey()).toBeNull();
    await screenshot(page, 'signin-bad-key');
  });

  it('signs in with the key and lands on the page asked for (search included); the experiments page lists the experiments', async () => {
    await page.getByLabel('API key').fill(env.adminKey);
    await page.keyboard.press('Enter'); // the form submits from the keyboard
    // back to the page asked for, search included
    await page.waitForURL(/\/data\?line=feed$/);
    await waitUntil(async () => (await setNames()).join() === 'feed-clicks', 10_000, 'the deep link asked for before sign-in');
    expect(await storedKey()).toBe(env.adminKey);
    // the sign-in form is not shown again while signed in
    await page.goto(`${url}/signin?redirect=%2Fexperiments`);
    await page.waitForURL(/\/experiments$/);
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Experiments' }).click();
    await page.waitForURL(/\/experiments$/);
    const rows = page.locator('table tbody tr');
    await page.locator(`tr[data-experiment-id="${scoreId}"]`).waitFor();
    expect(await rows.count()).toBe(3);
    const row = await page.locator(`tr[data-experiment-id="${scoreId}"]`).innerText();
    expect(row).toMatch(/score\s+feed\s+web score\s+queued/);
    expect(await page.getByText('test-admin').count()).toBeGreaterThan(0);
  });

  it('an experiment page shows status and spec; its cancel button cancels it', async () => {
    await page.getByRole('link', { name: 'open experiment web to cancel' }).click();
    await page.waitForURL(new RegExp(`/experiments/${cancelId}$`));
    await page.getByRole('heading', { name: /web to cancel/ }).waitFor();
    // the spec as a key/value table
    expect(await page.getByRole('table', { name: 'spec', exact: true }).innerText()).toMatch(/sampleSet\s+feed-clicks/);
    await page.getByRole('button', { name: 'Cancel experiment' }).click();
    await page.locator('.facts .status-cancelled').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel experiment' }).count()).toBe(0);
    expect(await page.getByText(/cancelled by test-admin/).count()).toBe(1);
    await screenshot(page, 'experiment-cancelled');
  });

  it('the experiments list follows a running experiment to its end without a reload', async () => {
    await page.getByRole('link', { name: '← All experiments' }).click();
    await page.waitForURL(/\/experiments$/);
    worker = startProcess('dist/apps/worker/src/main.js', env.env);
    const row = page.locator(`tr[data-experiment-id="${scoreId}"]`);
    await row.locator('.status-succeeded').waitFor({ timeout: 180_000 });
    expect(await row.innerText()).toMatch(/succeeded\s+100%/);
    expect(await page.locator(`tr[data-experiment-id="${cancelId}"] .status-cancelled`).count()).toBe(1);
    await page.locator(`tr[data-experiment-id="${failId}"] .status-failed`).waitFor({ timeout: 120_000 });
    await screenshot(page, 'experiments');
    // a failed experiment's page says why
    await page.getByRole('link', { name: 'open experiment web doomed' }).click();
    await page.waitForURL(new RegExp(`/experiments/${failId}$`));
    const why = page.locator('main .notice-error');
    await why.waitFor();
    expect(await why.innerText()).toMatch(/^Failed: .*does not exist/s);
    await screenshot(page, 'experiment-failed');
    await page.goBack();
    await page.waitForURL(/\/experiments$/);
    await row.getByRole('link', { name: 'web score', exact: true }).click();
    await page.waitForURL(new RegExp(`/experiments/${scoreId}$`));
    await page.locator('details.raw-json').waitFor();
    // the per-feature ranking as a chart, strongest first; the raw result collapsed below it
    const ranking = page.locator('figure.chart-figure').first();
    expect(await ranking.locator('figcaption').innerText()).toMatch(/^Information value per feature/);
    expect(await ranking.locator('.chart-label').first().textContent()).toMatch(/strong/);
    expect(await page.locator('details.raw-json').evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(false);
    expect(await page.locator('.facts').innerText()).toMatch(/Status\s+succeeded/);
    await screenshot(page, 'experiment');
  });

  it("the data page lists both lines' sets with their metadata and filters by label semantics and by column", async () => {
    await page.getByRole('link', { name: 'Data' }).click();
    await page.waitForURL(/\/data$/);
    await page.locator('table.sample-sets').first().waitFor();
    expect(await setNames()).toEqual(['feed-clicks', 'lab-doomed', 'search-orders']);
    expect(await page.getByRole('heading', { name: /^feed/ }).count()).toBe(1);
    expect(await page.getByRole('heading', { name: /^search/ }).count()).toBe(1);
    // the shared embeddings of the lines the key may read, with where they were learned
    const emb = await page.locator('tr[data-embedding="search.web-test@1"]').innerText();
    expect(emb).toMatch(/search\s+8\s+1/);
    expect(emb).toContain('search/search-orders');
    expect(emb).toContain('shared with feed');
    const search = await page.locator('tr[data-sample-set="search-orders"]').innerText();
    expect(search).toMatch(/order\s+click->order/);
    expect(search).toMatch(/300/);
    expect(search).toMatch(/shared with feed/);
    expect(search).toMatch(/sha256:[0-9a-f]{16}/);
    expect(search).toMatch(/query_len/);
    expect(await page.locator('tr[data-sample-set="feed-clicks"]').innerText()).toMatch(/private/);
    await screenshot(page, 'data');

    // label semantics, typed and submitted with the keyboard
    await page.getByLabel('Label semantics').fill('click->order');
    await page.getByLabel('Label semantics').press('Enter');
    await page.waitForURL(/semantics=/);
    await waitUntil(async () => (await setNames()).join() === 'search-orders', 10_000, 'the click->order filter');
    await screenshot(page, 'data-filtered-semantics');

    // a column only feed's set has
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.waitForURL(/\/data$/);
    await page.getByLabel('Has columns').fill('color, strong');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/columns=/);
    await waitUntil(async () => (await setNames()).join() === 'feed-clicks', 10_000, 'the has-columns filter');
    await screenshot(page, 'data-filtered-columns');

    // both filters: nothing matches, and the page says so
    await page.getByLabel('Label semantics').fill('click->order');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No sample sets match these filters.').waitFor();

    // a malformed label semantics is refused at the field, before any request
    await page.getByLabel('Label semantics').fill('Click order');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    expect(await page.locator('#filter-semantics-error').innerText()).toMatch(/event->outcome/);
  });

  it('a deep link opens the filtered page directly; a sample set page shows schema, label stats, sharing and version', async () => {
    await page.goto(`${url}/data?line=search`);
    await waitUntil(async () => (await setNames()).join() === 'search-orders', 10_000, 'the deep-linked line filter');
    expect(await page.getByLabel('Business line', { exact: true }).inputValue()).toBe('search');
    await page.getByRole('link', { name: 'search-orders' }).click();
    await page.waitForURL(/\/data\/[0-9a-f-]{36}$/);
    await page.getByRole('heading', { name: /search-orders/ }).waitFor();
    const schema = await page.getByRole('region', { name: 'schema' }).innerText();
    expect(schema).toMatch(/query_len\s+numeric/);
    expect(schema).toMatch(/order\s+\S+\s+\S+\s+label/);
    expect(schema).toMatch(/ts\s+\S+\s+\S+\s+time/);
    const facts = await page.locator('main').innerText();
    expect(facts).toMatch(/Label semantics\s+click->order/);
    expect(facts).toMatch(/Sharing policy\s+shared with feed/);
    expect(facts).toMatch(/Data version\s+sha256:[0-9a-f]{16}/);
    expect(facts).toMatch(/Rows\s+300/);
    expect(facts).toMatch(/Events\s+\d+/);
    expect(facts).toMatch(/Time range\s+2023-11-14 22:13 UTC → /);
    await screenshot(page, 'sample-set');
    // a reload of the deep link serves the app again (the api's fallback), still signed in
    await page.reload();
    await page.getByRole('heading', { name: /search-orders/ }).waitFor();
  });

  it('pages through a line with more sets than fit on a page, keeping its filter', async () => {
    const csv = path.join(env.dataDir, 'in', 'bulk.csv');
    writeSmallCsv(csv, 50);
    for (let i = 1; i <= 21; i++)
      await upload(csv, { name: `bulk-${String(i).padStart(2, '0')}`, businessLine: 'lab', label: 'click' });
    await page.goto(`${url}/data?line=lab`);
    await page.getByText('Page 1 of 2 (1–20 of 22)').waitFor();
    // the rows may follow the page label by one render (the previous page is shown while the next loads)
    await expect.poll(() => page.locator('table.sample-sets tbody tr').count(), { timeout: 10_000 }).toBe(20);
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/line=lab.*page=2|page=2.*line=lab/);
    await page.getByText('Page 2 of 2 (21–22 of 22)').waitFor();
    await expect.poll(() => page.locator('table.sample-sets tbody tr').count(), { timeout: 10_000 }).toBe(2);
    expect(await page.getByLabel('Business line', { exact: true }).inputValue()).toBe('lab');
    await screenshot(page, 'data-page-2');
    await page.getByRole('link', { name: '← Previous' }).click();
    await page.getByText('Page 1 of 2 (1–20 of 22)').waitFor();
  });

  it('stays readable at a narrow width: nothing but the tables scrolls sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${url}/data`);
    await page.locator('table.sample-sets').first().waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(1);
    await screenshot(page, 'data-narrow');
    await page.goto(`${url}/experiments`);
    await page.locator('table.list').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBeLessThanOrEqual(1);
    await screenshot(page, 'experiments-narrow');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('shows the empty state to a key whose line has no sets; a revoked key goes back to the sign-in form', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin/);
    await page.getByLabel('API key').fill(emptyKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
    // the navigation's link (the experiments page's empty state links to Data too)
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Data', exact: true }).click();
    await page.waitForURL(/\/data$/);
    const empty = page.getByText(/No sample sets yet/);
    await empty.waitFor();
    expect(await page.locator('.empty').first().innerText()).toMatch(/abacus samples import.*run the demo/s);
    await screenshot(page, 'data-empty');

    expect((await admin.call('POST', `/keys/${emptyKeyId}/revoke`)).status).toBe(200);
    await page.reload();
    await page.waitForURL(/\/signin/);
    expect(await page.getByRole('alert').innerText()).toMatch(/revoked/);
    expect(await storedKey()).toBeNull();
  });

  it('logged no console errors on the way (other than the 401s the tests asked for)', () => {
    expect(consoleErrors.errors).toEqual([]);
    // the watcher did hear the browser: the bad key's and the revoked key's 401s
    expect(consoleErrors.expected.length).toBeGreaterThanOrEqual(2);
  });
});
