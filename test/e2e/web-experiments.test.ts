import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { apiClient } from '../support/http';
import { writeSmallCsv } from '../support/fixtures';
import { findChromium, launchChromium, screenshot, watchConsole } from '../support/browser';
import { createDataSource, ExperimentEntity } from '@abacus/data';

/**
 * Launching and following experiments in the web app, in a real headless Chromium against the built
 * api and worker: a subtract launched from the form on a 12,000-row sample set (a folder of Parquet
 * files registered by path, not copied) and followed to its verdict, pruning curve and trial timeline; a bad value caught in the browser by the api's own
 * schema (nothing sent); an error only the server can find (a feature the set lacks) shown next to
 * its field; a 403 with its reason; the whole form filled and submitted with the keyboard; the
 * experiments list's filters in the URL and its pages; a 390 px wide screen. Screenshots in .data/screenshots/.
 */

const CHROMIUM = findChromium();
if (!CHROMIUM)
  console.warn(
    '[web-experiments e2e] SKIPPED: no Chromium on this machine (apt-get install -y chromium, or set ABACUS_CHROMIUM).',
  );

// Chromium logs every non-2xx answer itself ("Failed to load resource: … 400"): expected exactly
// where a test makes the server refuse on purpose; any other console error fails the test.
const EXPECTED_4XX = /Failed to load resource: the server responded with a status of 40[03]/;

let env: TestEnv;
let api: Proc;
let worker: Proc;
let url = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
let consoleErrors: { errors: string[]; expected: string[] };
let viewerKey = '';
/** POST /api/v1/experiments requests the page sent */
const posts: string[] = [];
let subtractId = '';
/** a few thousand rows: the subtract runs for a few seconds on two cores, long enough to be seen running */
const ROWS = 12_000;

const admin = apiClient(
  () => url,
  () => env.adminKey,
);

const experimentCount = async () => (await admin.call('GET', '/experiments?pageSize=1')).body.total as number;

async function signIn(p: Page, key: string): Promise<void> {
  await p.goto(`${url}/signin`);
  await p.getByLabel('API key').fill(key);
  await p.keyboard.press('Enter');
  await p.waitForURL(/\/experiments$/);
}

/** The id of the focused element (the root tsconfig has no DOM types: the expression is a string). */
const focusedId = (p: Page) => p.evaluate<string>('document.activeElement ? document.activeElement.id : ""');

/** Tabs forward until the element with this id has the focus (at most `max` presses). */
async function tabTo(p: Page, id: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    if ((await focusedId(p)) === id) return;
    await p.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached #${id} (focus on #${await focusedId(p)})`);
}

/** An input's message: the element aria-describedby names that holds the issue, and its text. */
async function fieldError(p: Page, selector: string): Promise<{ invalid: string | null; message: string }> {
  const el = p.locator(selector);
  const invalid = await el.getAttribute('aria-invalid');
  const ids = ((await el.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter((i) => i.endsWith('-error'));
  const message = ids.length ? await p.locator(`#${ids[0]}`).innerText() : '';
  return { invalid, message };
}

describe.skipIf(!CHROMIUM)('launching and following experiments in headless Chromium (built api + worker)', () => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = await createTestEnv({ ABACUS_API_PORT: String(port), ABACUS_API_URL: url });
    api = startProcess('dist/apps/api/src/main.js', env.env);
    await waitForApi(api, url);
    expect((await admin.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
    // demo-like data: strong and weak drive the click, noise does not, color has one clicky value;
    // kept where a user keeps it, a folder of Parquet files (three, by time), and registered by path
    const csv = path.join(env.dataDir, 'in', 'feed.csv');
    writeSmallCsv(csv, ROWS);
    const folder = path.join(env.dataDir, 'shared', 'feed-clicks');
    fs.mkdirSync(folder, { recursive: true });
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    await con.run(`CREATE TABLE t AS SELECT *, ntile(3) OVER (ORDER BY ts) AS part FROM read_csv('${csv}')`);
    for (const k of [1, 2, 3]) await con.run(`COPY (SELECT * EXCLUDE (part) FROM t WHERE part = ${k} ORDER BY ts) TO '${folder}/part-${k}.parquet' (FORMAT parquet)`);
    con.closeSync();
    db.closeSync();
    const reg = await admin.call('POST', '/sample-sets/register', { url: `file://${folder}/`, name: 'feed-clicks', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    expect(reg.body.rowCount).toBe(ROWS);
    const k = await admin.call('POST', '/keys', { name: 'feed-viewer', role: 'viewer', lines: ['feed'] });
    expect(k.status).toBe(201);
    viewerKey = k.body.secret as string;
    // the worker starts once the first experiment is on its page, queued

    browser = await launchChromium(CHROMIUM!);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    consoleErrors = watchConsole(page, [EXPECTED_4XX]);
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/experiments') posts.push(r.postData() ?? '');
    });
    await signIn(page, env.adminKey);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await api?.stop();
    await env?.teardown();
  });

  it('a new user sees the empty state, launches a subtract from the form and follows it to its verdict, curve and timeline', async () => {
    const empty = page.getByRole('status').filter({ hasText: 'No experiments yet' });
    await empty.waitFor();
    expect(await empty.innerText()).toMatch(/launch one.*run the demo: bash scripts\/quickstart\.sh/s);
    await screenshot(page, 'experiments-empty');

    await page.getByRole('link', { name: 'New experiment' }).click();
    await page.waitForURL(/\/experiments\/new$/);
    // subtract is the default kind, its tab marked current
    expect(
      await page
        .getByRole('navigation', { name: 'experiment kind' })
        .getByRole('link', { name: 'subtract' })
        .getAttribute('aria-current'),
    ).toBe('page');
    await page.getByLabel('Name', { exact: true }).fill('prune feed from the form');
    await page.getByLabel('Sample set', { exact: true }).selectOption('feed-clicks');
    // every feature column checked to start with; label and time are not offered
    const checks = page.locator('#f-features-group input[type=checkbox]');
    await checks.first().waitFor();
    expect(
      await checks.evaluateAll((els) =>
        els.map(
          (e) =>
            (e as unknown as { value: string; checked: boolean }).value + ':' + (e as unknown as { checked: boolean }).checked,
        ),
      ),
    ).toEqual(['strong:true', 'weak:true', 'noise:true', 'color:true']);
    // the defaults come from the api's schema
    expect(await page.getByLabel('Max AUC drop').inputValue()).toBe('0.001');
    expect(await page.getByLabel('Batch fraction').inputValue()).toBe('0.1');
    expect(await page.getByLabel('Retrain seeds').inputValue()).toBe('5');
    expect(await page.getByLabel('Confirm by retraining').isChecked()).toBe(true);
    await page.getByLabel('Max AUC drop').fill('0.005');
    await page.locator('details.advanced summary').click();
    await page
      .getByLabel('Advanced (JSON)')
      .fill('{"seed": 2, "folds": 5, "model": {"training": {"epochs": 30, "patience": 20}}}');
    await screenshot(page, 'experiment-new-subtract');

    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();
    await page.waitForURL(/\/experiments\/[0-9a-f-]{36}$/);
    subtractId = page.url().split('/').pop()!;
    expect(posts).toHaveLength(1);
    await page.getByRole('heading', { name: /prune feed from the form/ }).waitFor();

    // what was stored: the form's values with the advanced JSON merged over them
    const stored = (await admin.call('GET', `/experiments/${subtractId}`)).body;
    expect(stored.spec).toMatchObject({
      maxDrop: 0.005,
      retrainSeeds: 5,
      folds: 5,
      seed: 2,
      confirm: true,
      scorers: ['iv', 'shuffle'],
    });
    expect(stored.spec.model).toMatchObject({
      sampleSet: 'feed-clicks',
      features: ['strong', 'weak', 'noise', 'color'],
      training: { epochs: 30, patience: 20 },
    });

    // queued, with no worker yet: the timeline shows each trial waiting, up to now
    await page.locator('dl.facts .status', { hasText: 'queued' }).waitFor();
    await page.locator('svg.timeline rect.span-open').first().waitFor();
    expect(await page.locator('svg.timeline g.timeline-row').count()).toBe(stored.trials.length);
    expect(await page.getByRole('button', { name: 'Cancel experiment' }).count()).toBe(1);
    await screenshot(page, 'experiment-queued');
    worker = startProcess('dist/apps/worker/src/main.js', env.env);

    // follow it on the page: status, progress and the timeline move while it runs
    const seen = new Set<string>();
    const progress: number[] = [];
    let sawOpenSpan = false;
    let shotRunning = false;
    await waitUntil(
      async () => {
        const status = (await page.locator('dl.facts .status').first().innerText()).trim();
        seen.add(status);
        progress.push(await page.locator('dl.facts progress').evaluate((e) => (e as unknown as { value: number }).value));
        if (status === 'running' || status === 'queued') {
          if ((await page.locator('svg.timeline rect.span-open').count()) > 0) sawOpenSpan = true;
          if (!shotRunning && status === 'running' && sawOpenSpan) {
            await screenshot(page, 'experiment-running');
            shotRunning = true;
          }
        }
        return status === 'succeeded' || status === 'failed' ? status : null;
      },
      120_000,
      'the subtract experiment on its page',
    ).then((s) => expect(s, worker.output()).toBe('succeeded'));
    expect(seen.has('running'), [...seen].join(', ')).toBe(true);
    expect(sawOpenSpan && shotRunning).toBe(true);
    expect(progress[progress.length - 1]).toBe(1);
    // progress never went backwards on the page
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1] - 1e-9)).toBe(true);

    const done = (await admin.call('GET', `/experiments/${subtractId}`)).body;
    const result = done.result as { removable: string[]; features: number; curve: unknown[] };
    // the verdict, in words
    const verdict = page.getByRole('region', { name: 'Verdict' });
    await verdict.waitFor();
    const verdictText = await verdict.innerText();
    expect(verdictText).toMatch(
      result.removable.length
        ? new RegExp(`${result.removable.length} of ${result.features} features can be removed: ${result.removable.join(', ')}`)
        : /No feature can be removed/,
    );
    expect(verdictText).toMatch(/Confirmed by retraining: AUC [\d.]+ without them/);
    // the pruning curve (one mark per check), the shuffle drops and the IVs
    const figures = page.locator('figure.chart-figure');
    expect(await figures.count()).toBe(3);
    expect(await figures.nth(2).locator('figcaption').innerText()).toBe('Information value per feature');
    expect(await figures.nth(0).locator('figcaption').innerText()).toMatch(/pruning/i);
    expect(await figures.nth(0).locator('svg.chart g.chart-mark').count()).toBe(result.curve.length);

    // the timeline: one row per trial, each ended (an end mark), with a running span; the same in the table
    const trials = done.trials as {
      seq: number;
      status: string;
      startedAt: string | null;
      finishedAt: string | null;
      createdAt: string;
    }[];
    expect(trials.length).toBeGreaterThanOrEqual(4);
    for (const t of trials)
      expect([t.status, typeof t.createdAt, typeof t.startedAt, typeof t.finishedAt]).toEqual([
        'succeeded',
        'string',
        'string',
        'string',
      ]);
    const timeline = page.locator('svg.timeline');
    expect(await timeline.getAttribute('role')).toBe('img');
    expect(await timeline.locator('title#timeline-title').textContent()).toBe('Trials of prune feed from the form over time');
    expect(await timeline.locator('desc').textContent()).toMatch(
      new RegExp(`^${trials.length} trials \\(${trials.length} succeeded\\)`),
    );
    expect(await timeline.locator('g.timeline-row').count()).toBe(trials.length);
    expect(await timeline.locator('g.timeline-row rect.span-running').count()).toBe(trials.length);
    expect(await timeline.locator('g.timeline-row circle.span-end').count()).toBe(trials.length);
    expect(await timeline.locator('rect.span-open').count()).toBe(0);
    expect(await timeline.locator('g.timeline-row title').first().textContent()).toMatch(
      /^trial 0 \(train\): succeeded, waited .*, ran .*, 1 attempt, backend cpu$/,
    );
    expect(await page.locator('table.trials tbody tr').count()).toBe(trials.length);
    await timeline.scrollIntoViewIfNeeded();
    await screenshot(page, 'experiment-timeline');
    expect(await page.locator('[style]').count()).toBe(0);
    expect(consoleErrors.errors).toEqual([]);
  }, 200_000);

  it('a bad value is shown next to its field, with a summary on top, and nothing is submitted', async () => {
    const before = await experimentCount();
    const postsBefore = posts.length;
    await page.goto(`${url}/experiments/new?kind=subtract`);
    await page.getByLabel('Sample set', { exact: true }).selectOption('feed-clicks');
    await page.getByLabel('Max AUC drop').fill('2');
    await page.getByRole('button', { name: 'None', exact: true }).click();
    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();

    const summary = page.locator('.issue-summary');
    await summary.waitFor();
    expect(await summary.innerText()).toMatch(/Not submitted: 2 problems/);
    // the summary takes the focus, so a keyboard or screen-reader user lands on it
    expect(await page.evaluate<string>('document.activeElement.className')).toMatch(/issue-summary/);
    const maxDrop = await fieldError(page, '#f-maxDrop');
    expect(maxDrop.invalid).toBe('true');
    expect(maxDrop.message).toMatch(/Too big: expected number to be <=0\.5/);
    const features = await fieldError(page, '#f-features-group');
    expect(features.invalid).toBe('true');
    expect(features.message).toMatch(/Too small: expected array to have >=1 items/);
    await screenshot(page, 'experiment-new-error');

    // a summary link takes the focus to its field
    await summary.getByRole('link', { name: 'Max AUC drop' }).click();
    expect(await focusedId(page)).toBe('f-maxDrop');
    // fixing a field clears its message; the other stays until the next submit
    await page.getByLabel('Max AUC drop').fill('0.01');
    expect(await page.locator('#f-maxDrop').getAttribute('aria-invalid')).toBeNull();
    expect(await page.locator('#f-features-error').count()).toBe(1);

    // advanced JSON that does not parse is that field's error; an unknown key goes to the summary
    await page.getByRole('button', { name: 'All', exact: true }).click();
    await page.locator('details.advanced summary').click();
    await page.getByLabel('Advanced (JSON)').fill('{"folds": 5,');
    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();
    expect((await fieldError(page, '#f-advanced')).message).toMatch(/^not valid JSON/);
    await page.getByLabel('Advanced (JSON)').fill('{"bogus": 1}');
    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();
    await page.locator('.issue-unplaced').waitFor();
    expect(await page.locator('.issue-unplaced').innerText()).toMatch(/^spec: Unrecognized key: "bogus"/);

    // nothing went out, nothing was created
    expect(posts.length).toBe(postsBefore);
    expect(await experimentCount()).toBe(before);
    expect(consoleErrors.errors).toEqual([]);
  });

  it("the server's 400 (a feature the sample set does not have) is shown next to its field; a viewer's 403 with its reason", async () => {
    const before = await experimentCount();
    const postsBefore = posts.length;
    await page.goto(`${url}/experiments/new?kind=subtract`);
    await page.getByLabel('Sample set', { exact: true }).selectOption('feed-clicks');
    await page.getByLabel('More features').fill('not_a_feature');
    await page.getByRole('button', { name: 'Launch subtract experiment' }).click();
    await page.locator('#f-extraFeatures-error').waitFor();
    // the browser found nothing wrong: the request went out, and the api refused it
    expect(posts.length).toBe(postsBefore + 1);
    expect(JSON.parse(posts[posts.length - 1]).spec.model.features).toEqual([
      'strong',
      'weak',
      'noise',
      'color',
      'not_a_feature',
    ]);
    const extra = await fieldError(page, '#f-extraFeatures');
    expect(extra.invalid).toBe('true');
    expect(extra.message).toBe('"not_a_feature" is neither a column of sample set feed-clicks nor a registered feature');
    expect(await page.locator('.issue-summary').innerText()).toMatch(/Not submitted: 1 problem \(from the server\)/);
    await screenshot(page, 'experiment-new-server-error');
    expect(await experimentCount()).toBe(before);
    expect(await page.url()).toMatch(/\/experiments\/new/);

    // a viewer may look but not launch: the api's 403 and its reason
    const viewer = await context.browser()!.newContext({ viewport: { width: 1280, height: 900 } });
    const vp = await viewer.newPage();
    const vConsole = watchConsole(vp, [EXPECTED_4XX]);
    await signIn(vp, viewerKey);
    await vp.goto(`${url}/experiments/new?kind=score`);
    await vp.getByRole('note').filter({ hasText: 'This key is a viewer' }).waitFor();
    await vp.getByLabel('Sample set', { exact: true }).selectOption('feed-clicks');
    await vp.getByRole('button', { name: 'Launch score experiment' }).click();
    const alert = vp.getByRole('alert').filter({ hasText: 'Not allowed' });
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/Not allowed: .*viewer/i);
    expect(await experimentCount()).toBe(before);
    expect(vConsole.errors).toEqual([]);
    expect(vConsole.expected.length).toBeGreaterThan(0);
    await viewer.close();
    expect(consoleErrors.errors).toEqual([]);
  });

  it('the form can be filled and submitted with the keyboard alone', async () => {
    await page.goto(`${url}/experiments/new?kind=score`);
    await page.getByLabel('Sample set', { exact: true }).waitFor();
    await page.locator('#f-sampleSet option', { hasText: 'feed-clicks' }).waitFor({ state: 'attached' });
    const visited: string[] = [];
    await page.locator('body').focus();
    await tabTo(page, 'f-name');
    await page.keyboard.type('score by keyboard');
    await tabTo(page, 'f-sampleSet');
    // a focused select picks the option whose text starts with what is typed
    await page.keyboard.type('feed');
    await waitUntil(
      async () => (await page.locator('#f-sampleSet').inputValue()) === 'feed-clicks',
      5_000,
      'the sample set chosen by typing',
    );
    // on through the features and the settings to the button: space unchecks "noise", maxBins becomes 8
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const [id, type, value] = await page.evaluate<string[]>(
        '[document.activeElement.id, document.activeElement.getAttribute("type") || "", document.activeElement.value || ""]',
      );
      visited.push(id || `${type}:${value}`);
      if (type === 'checkbox' && value === 'noise') await page.keyboard.press('Space');
      if (id === 'f-maxBins') {
        await page.keyboard.press('Control+A');
        await page.keyboard.type('8');
      }
      if (type === 'submit') break;
    }
    expect(visited).toEqual(
      expect.arrayContaining(['checkbox:strong', 'checkbox:noise', 'f-extraFeatures', 'f-maxBins', 'f-prebins', 'f-minBinShare']),
    );
    expect(visited[visited.length - 1]).toBe('submit:');
    expect(await page.locator('#f-features-group input[value=noise]').isChecked()).toBe(false);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/experiments\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;
    const e = await admin.finished(id, 90_000, 'the score experiment');
    expect(e.status, worker.output()).toBe('succeeded');
    expect(e.name).toBe('score by keyboard');
    expect(e.spec).toMatchObject({ features: ['strong', 'weak', 'color'], binning: { maxBins: 8 } });
    await page
      .getByRole('region', { name: 'Verdict' })
      .getByText(/Most informative: strong/)
      .waitFor({ timeout: 15_000 });
    expect(consoleErrors.errors).toEqual([]);
  }, 120_000);

  it('the experiments list: filters by kind, status, line and owner kept in the URL', async () => {
    await page.goto(`${url}/experiments`);
    const rows = page.locator('table.list tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(2);
    await page.getByLabel('Kind').selectOption('subtract');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\/experiments\?kind=subtract$/);
    await waitUntil(async () => (await rows.count()) === 1, 10_000, 'one subtract row');
    expect(await rows.first().getAttribute('data-experiment-id')).toBe(subtractId);
    // a deep link with every filter
    await page.goto(`${url}/experiments?kind=score&status=succeeded&line=feed&owner=test-admin`);
    await page.getByText('1 experiment match').waitFor();
    expect(await rows.first().innerText()).toMatch(/score by keyboard/);
    expect(await page.getByLabel('Status').inputValue()).toBe('succeeded');
    expect(await page.getByLabel('Owner').inputValue()).toBe('test-admin');
    await page.getByLabel('Owner').fill('nobody');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No experiments match these filters.').waitFor();
    await page.getByRole('link', { name: 'Clear the filters' }).click();
    await page.waitForURL(/\/experiments$/);
    await waitUntil(async () => (await rows.count()) === 2, 10_000, 'both rows again');
    await screenshot(page, 'experiments-list');
    expect(consoleErrors.errors).toEqual([]);
  });

  it('works on a 390 px wide screen: the form and the timeline fit, nothing inline-styled', async () => {
    const narrow = await context.browser()!.newContext({ viewport: { width: 390, height: 844 } });
    const np = await narrow.newPage();
    const nConsole = watchConsole(np);
    await signIn(np, env.adminKey);
    await np.goto(`${url}/experiments/new?kind=divide`);
    await np.getByLabel('Budget tiers').waitFor();
    expect(await np.getByLabel('Budget tiers').inputValue()).toBe('1, 0.7, 0.5, 0.3');
    const width = () => np.evaluate<number>('document.documentElement.scrollWidth');
    expect(await width()).toBeLessThanOrEqual(390);
    await screenshot(np, 'experiment-new-390');
    await np.goto(`${url}/experiments/${subtractId}`);
    await np.locator('svg.timeline').waitFor();
    expect(await width()).toBeLessThanOrEqual(390);
    await screenshot(np, 'experiment-timeline-390');
    expect(await np.locator('[style]').count()).toBe(0);
    expect(nConsole.errors).toEqual([]);
    await narrow.close();
  });

  it('pages through a filtered list, keeping its filters', async () => {
    // 30 finished add experiments stored directly (their results do not matter here)
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      const repo = ds.getRepository(ExperimentEntity);
      for (let i = 0; i < 30; i++)
        await repo.save(
          repo.create({
            id: randomUUID(),
            kind: 'add',
            name: `stored add ${i}`,
            businessLine: 'feed',
            owner: 'test-admin',
            spec: {},
            status: 'succeeded',
            progress: 1,
            result: null,
            startedAt: new Date(),
            finishedAt: new Date(),
          }),
        );
    } finally {
      await ds.destroy();
    }
    await page.goto(`${url}/experiments?kind=add&status=succeeded`);
    await page.getByText('Page 1 of 2 (1–25 of 30)').waitFor();
    expect(await page.locator('table.list tbody tr').count()).toBe(25);
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.getByText('Page 2 of 2 (26–30 of 30)').waitFor();
    expect(new URL(page.url()).searchParams.toString()).toBe('kind=add&status=succeeded&page=2');
    expect(await page.locator('table.list tbody tr').count()).toBe(5);
    expect(await page.getByLabel('Kind').inputValue()).toBe('add');
    expect(consoleErrors.errors).toEqual([]);
  });
});
