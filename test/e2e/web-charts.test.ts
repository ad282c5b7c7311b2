import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { apiClient } from '../support/http';
import { writeSmallCsv } from '../support/fixtures';
import { createDataSource, ExperimentEntity, ModelEntity, SharedEmbeddingEntity } from '@abacus/data';
import { findChromium, launchChromium, screenshot, watchConsole } from '../support/browser';

/**
 * The charts of an experiment's result in a real headless Chromium under the app's strict CSP: one
 * finished experiment of each charted kind (its result, in the shape the workflows write, stored
 * directly: no training needed), an old result lacking fields and a running experiment without a
 * result. Counts the marks, checks that the console stays clean (a CSP violation is a console
 * error), and saves screenshots to .data/screenshots/.
 */

const CHROMIUM = findChromium();
if (!CHROMIUM)
  console.warn('[web-charts e2e] SKIPPED: no Chromium on this machine (apt-get install -y chromium, or set ABACUS_CHROMIUM).');

const iv = (delta: number, half: number) => ({ delta, ciLow: delta - half, ciHigh: delta + half });
const point = (features: number, cost: number, auc: number, liftKept: number) => ({
  features,
  selected: [],
  estimatedValue: 0,
  costFractions: { storage: cost, communication: cost * 0.9, compute: cost * 1.1 },
  auc,
  aucPerSeed: [auc - 0.001, auc + 0.001],
  seedSpread: 0.002,
  liftKept,
});

const RESULTS: Record<string, Record<string, unknown>> = {
  multiply: {
    testFrom: 0.8,
    testRows: 100,
    baseline: { auc: 0.7, logloss: 0.5, trainRows: 400 },
    sources: [],
    results: [
      { strategy: 'pool', sources: ['search'], auc: 0.71, deltaAuc: iv(0.01, 0.004), verdict: 'recommend' },
      { strategy: 'weighted', sources: ['search'], auc: 0.7, deltaAuc: iv(0.001, 0.006), verdict: 'no gain' },
      { strategy: 'finetune', sources: ['search', 'ads'], auc: 0.69, deltaAuc: iv(-0.01, 0.003), verdict: 'harmful' },
    ],
    rule: 'test',
  },
  divide: {
    frontier: [
      // the large tier: above the full model's budget, more features, a better AUC
      {
        tier: -1,
        alias: 'tier-large',
        budget: { storage: 1.5, communication: 1.5, compute: 1.5 },
        solver: { status: 'optimal', gap: 0 },
        milp: point(8, 1.2, 0.79, 1.16),
        greedy: point(8, 1.3, 0.785, 1.14),
        milpVsGreedy: 'milp better',
      },
      ...[1, 2, 3].map((tier) => ({
        tier,
        alias: `tier-${tier}`,
        budget: { storage: 1 - tier * 0.25, communication: 1 - tier * 0.25, compute: 1 - tier * 0.25 },
        solver: { status: 'optimal', gap: 0 },
        milp: point(6 - tier, 1 - tier * 0.25, 0.75 - tier * 0.02, 1 - tier * 0.08),
        greedy: point(5 - tier, 1 - tier * 0.27, 0.745 - tier * 0.025, 1 - tier * 0.1),
        milpVsGreedy: 'milp better',
      })),
    ],
    published: [],
    groups: [],
  },
  subtract: {
    features: 4,
    removable: ['a', 'b'],
    removedShare: 0.5,
    maxDrop: 0.005,
    curve: [
      { round: 1, check: 'permutation', removed: 1, added: ['a'], drop: 0.0005, ciLow: 0, ciHigh: 0.001, accepted: true },
      { round: 2, check: 'permutation', removed: 2, added: ['b'], drop: 0.002, ciLow: 0.001, ciHigh: 0.003, accepted: true },
      { round: 3, check: 'retrain', removed: 2, added: [], drop: 0.0025, ciLow: null, ciHigh: null, accepted: true },
      { round: 4, check: 'permutation', removed: 3, added: ['c'], drop: 0.02, ciLow: 0.015, ciHigh: 0.025, accepted: false },
    ],
    perFeature: ['a', 'b', 'c', 'd'].map((feature, i) => ({
      feature,
      combinedRank: i + 1,
      iv: 0.1 * i,
      shuffleDrop: 0.0004 * 4 ** i,
      shuffleCi: [0.0002 * 4 ** i, 0.0006 * 4 ** i],
      removable: i < 2,
    })),
  },
  score: {
    features: 3,
    trials: 1,
    ranking: [
      { rank: 1, feature: 'strong', kind: 'numeric', iv: 0.42, strength: 'strong', psi: 0.01 },
      { rank: 2, feature: 'weak', kind: 'numeric', iv: 0.05, strength: 'weak', psi: null },
      { rank: 3, feature: 'noise', kind: 'categorical', iv: 0.001, strength: 'useless', psi: 0.2 },
    ],
  },
  add: {
    minGain: 0.002,
    base: { auc: 0.7, features: 3 },
    augmented: { auc: 0.71, features: 5 },
    candidates: [
      {
        feature: 'x',
        contribution: { mean: 0.008, ciLow: 0.003, ciHigh: 0.012 },
        leaveOneIn: iv(0.009, 0.004),
        verdict: 'adopt',
        reason: '',
      },
      {
        feature: 'y',
        contribution: { mean: 0.0, ciLow: -0.003, ciHigh: 0.001 },
        leaveOneIn: null,
        verdict: 'reject',
        reason: '',
      },
    ],
  },
};

/** How many marks (dots with their intervals) each chart of a kind's page draws, in page order. */
const MARKS: Record<string, number[]> = { multiply: [3], divide: [9], subtract: [4, 4, 4], add: [3], score: [3] };

let env: TestEnv;
let api: Proc;
let worker: Proc | undefined;
let url = '';
let browser: Browser;
let page: Page;
let consoleErrors: { errors: string[]; expected: string[] };
const ids: Record<string, string> = {};

const admin = apiClient(
  () => url,
  () => env.adminKey,
);

describe.skipIf(!CHROMIUM)('experiment result charts in headless Chromium (built api)', () => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = await createTestEnv({
      ABACUS_API_PORT: String(port),
      ABACUS_API_URL: url,
      ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      ABACUS_SERVING_SCHEDULE_INTERVAL_MS: '500',
    });
    api = startProcess('dist/apps/api/src/main.js', env.env);
    await waitForApi(api, url);
    expect((await admin.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      const repo = ds.getRepository(ExperimentEntity);
      const stored = (kind: string, name: string, status: 'succeeded' | 'running', result: Record<string, unknown> | null) =>
        repo.save(
          repo.create({
            id: randomUUID(),
            kind,
            name,
            businessLine: 'feed',
            owner: 'test-admin',
            spec: {},
            status,
            progress: status === 'succeeded' ? 1 : 0.3,
            result,
            startedAt: new Date(),
            finishedAt: status === 'succeeded' ? new Date() : null,
          }),
        );
      for (const [kind, result] of Object.entries(RESULTS))
        ids[kind] = (await stored(kind, `charts ${kind}`, 'succeeded', result)).id;
      ids.old = (
        await stored('multiply', 'charts old', 'succeeded', { results: [{ strategy: 'pool' }], note: 'an older shape' })
      ).id;
      ids.running = (await stored('subtract', 'charts running', 'running', null)).id;
      // arms whose labels are longer than the label column: they wrap instead of running off the chart
      ids.long = (
        await stored('multiply', 'charts long labels', 'succeeded', {
          results: [
            {
              strategy: 'pretrain_finetune',
              sources: ['other/mw17-other-line-samples'],
              deltaAuc: iv(0.004, 0.002),
              validation: { ...iv(0.003, 0.002), split: 'validation' },
              verdict: 'recommend',
            },
            {
              strategy: 'shared_embedding',
              sources: ['feed/feed-samples-with-a-long-name', 'search/search-samples-with-a-long-name'],
              deltaAuc: { ...iv(-0.001, 0.003), split: 'test' },
              verdict: 'no gain',
            },
          ],
        })
      ).id;
    } finally {
      await ds.destroy();
    }
    browser = await launchChromium(CHROMIUM!);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    consoleErrors = watchConsole(page);
    await page.goto(`${url}/signin`);
    await page.getByLabel('API key').fill(env.adminKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/experiments$/);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await api?.stop();
    await env?.teardown();
  });

  for (const kind of Object.keys(RESULTS)) {
    it(`draws the ${kind} result as SVG charts above its table`, async () => {
      await page.goto(`${url}/experiments/${ids[kind]}`);
      await page.locator('details.raw-json').waitFor();
      const figures = page.locator('figure.chart-figure');
      await figures.first().waitFor();
      const marks: number[] = [];
      for (let i = 0; i < (await figures.count()); i++)
        marks.push(await figures.nth(i).locator('svg.chart g.chart-mark').count());
      expect(marks).toEqual(MARKS[kind]);
      // the charts come before the raw result, which is collapsed: no result tables on the page
      const order = await page.evaluate<boolean>(
        "!!(document.querySelector('figure.chart-figure').compareDocumentPosition(document.querySelector('details.raw-json')) & Node.DOCUMENT_POSITION_FOLLOWING)",
      );
      expect(order).toBe(true);
      expect(await page.locator('details.raw-json').evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(false);
      expect(await page.locator('table[aria-label^="result"]').count()).toBe(0);
      // styled by the stylesheet (a dot is filled with a colour, not black) with no inline style anywhere
      const fill = await page.evaluate<string>(
        "getComputedStyle(document.querySelector('svg.chart .chart-dot, svg.chart .chart-rect')).fill",
      );
      expect(fill).not.toMatch(/^rgb\(0, 0, 0\)$/);
      expect(await page.locator('svg.chart [style]').count()).toBe(0);
      await screenshot(page, `experiment-charts-${kind}`);
      expect(consoleErrors.errors).toEqual([]);
    });
  }

  it('shows the multiply labels and the reference lines (0 and minGain)', async () => {
    await page.goto(`${url}/experiments/${ids.multiply}`);
    const svg = page.locator('svg.chart').first();
    await svg.waitFor();
    expect(await svg.locator('.chart-label').allTextContents()).toEqual([
      'pool · search',
      'weighted · search',
      'finetune · search + ads',
    ]);
    expect((await page.locator('.chart-legend li').allInnerTexts()).map((t) => t.trim())).toEqual([
      'recommend',
      'no gain',
      'harmful',
    ]);
    await page.goto(`${url}/experiments/${ids.add}`);
    await page.locator('svg.chart').waitFor();
    expect(await page.locator('svg.chart .chart-ref text').allTextContents()).toEqual(['0', 'minGain']);
    // divide: the cost axis is the mean of the three resources, or one chosen resource
    await page.goto(`${url}/experiments/${ids.divide}`);
    const axis = page.locator('svg.chart .chart-axis').first();
    await axis.waitFor();
    expect(await axis.textContent()).toMatch(/^cost \(mean of storage, communication, compute\)/);
    await page.getByLabel('Cost axis').selectOption('compute');
    await waitUntil(async () => /^compute cost/.test((await axis.textContent()) ?? ''), 5_000, 'the compute cost axis');
    expect(await page.locator('svg.chart g.chart-mark').count()).toBe(9);
    expect(consoleErrors.errors).toEqual([]);
  });

  it('the large tier on the frontier: right of the full model, above it, named tier-large', async () => {
    await page.goto(`${url}/experiments/${ids.divide}`);
    const svg = page.locator('svg.chart').first();
    await svg.waitFor();
    const marks = await svg.evaluate((el) =>
      [...el.querySelectorAll('g.chart-mark')].map((g) => {
        const c = g.querySelector('circle, rect') as unknown as {
          getBBox(): { x: number; y: number; width: number; height: number };
        };
        const b = c.getBBox();
        return { title: g.querySelector('title')?.textContent ?? '', cx: b.x + b.width / 2, cy: b.y + b.height / 2 };
      }),
    );
    const large = marks.find((m) => m.title.startsWith('tier-large (milp)'))!;
    const full = marks.find((m) => m.title.startsWith('full (full model)'))!;
    expect(large).toBeDefined();
    expect(full).toBeDefined();
    // cost 1.2 of the full model: right of it; AUC 0.79: above it (SVG y grows downwards)
    expect(large.cx).toBeGreaterThan(full.cx);
    expect(large.cy).toBeLessThan(full.cy);
    await svg.scrollIntoViewIfNeeded();
    await screenshot(page, 'experiment-divide-large-tier');
    expect(consoleErrors.errors).toEqual([]);
  });

  it('the raw result: collapsed, with its size, copied to the clipboard and downloaded as the same JSON', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
    await page.goto(`${url}/experiments/${ids.divide}`);
    const raw = page.locator('details.raw-json');
    await raw.waitFor();
    expect(await raw.locator('summary').innerText()).toMatch(/^result as JSON \(\d+(\.\d)? KB\)$/);
    expect(await raw.locator('pre').isVisible()).toBe(false);
    await raw.locator('summary').click();
    expect(await raw.locator('pre').isVisible()).toBe(true);
    expect(JSON.parse(await raw.locator('pre').innerText())).toEqual(RESULTS.divide);
    await raw.getByRole('button', { name: 'Copy' }).click();
    await raw.getByText('copied to the clipboard').waitFor();
    // what is copied and downloaded is the JSON shown (as stored: the keys in the database's order)
    const shown = await raw.locator('pre').textContent();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(shown);
    const [download] = await Promise.all([page.waitForEvent('download'), raw.getByRole('button', { name: /^Download/ }).click()]);
    expect(download.suggestedFilename()).toBe(`experiment-${ids.divide}-result.json`);
    const file = await download.path();
    expect(fs.readFileSync(file, 'utf8')).toBe(shown);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(RESULTS.divide);
    await screenshot(page, 'experiment-raw-result');
    expect(consoleErrors.errors).toEqual([]);
  });

  for (const width of [1280, 390]) {
    it(`wraps chart labels longer than the label column instead of cutting them (${width} px)`, async () => {
      await page.setViewportSize({ width, height: 900 });
      try {
        await page.goto(`${url}/experiments/${ids.long}`);
        const svg = page.locator('svg.chart').first();
        await svg.waitFor();
        // every label inside the chart: its box starts at or right of the SVG's left edge, ends left of the plot
        const boxes = await svg.evaluate((el) =>
          [...el.querySelectorAll('text.chart-label')].map((t) => {
            const b = (t as unknown as { getBBox(): { x: number; width: number } }).getBBox();
            return { x: b.x, right: b.x + b.width, lines: t.querySelectorAll('tspan').length, text: t.textContent };
          }),
        );
        expect(boxes).toHaveLength(3);
        for (const b of boxes) expect(b.x, JSON.stringify(b)).toBeGreaterThanOrEqual(0);
        expect(boxes.some((b) => b.lines > 1)).toBe(true);
        // the full label is still there, over its lines
        expect(boxes.map((b) => (b.text ?? '').replace(/\s/g, ''))).toContain(
          'shared_embedding · feed/feed-samples-with-a-long-name + search/search-samples-with-a-long-name (test)'.replace(
            /\s/g,
            '',
          ),
        );
        // the page does not scroll sideways
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        await screenshot(page, `experiment-charts-long-labels-${width}`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });
  }

  it('an old result without usable fields and a running experiment without a result: the raw result only, no crash', async () => {
    await page.goto(`${url}/experiments/${ids.old}`);
    await page.locator('details.raw-json').waitFor();
    expect(await page.locator('figure.chart-figure').count()).toBe(0);
    await page.goto(`${url}/experiments/${ids.running}`);
    await page.getByText('not finished yet').waitFor();
    expect(await page.locator('figure.chart-figure').count()).toBe(0);
    expect(consoleErrors.errors).toEqual([]);
  });

  it('a subtract run by the worker on a small sample set: its pruning curve and shuffle drops as charts', async () => {
    const csv = path.join(env.dataDir, 'in', 'feed.csv');
    writeSmallCsv(csv, 2000);
    const up = await admin.upload('/sample-sets', csv, { name: 'feed-clicks', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const sub = await admin.call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      name: 'charts subtract run',
      spec: { model: { sampleSet: 'feed-clicks', features: ['strong', 'weak', 'noise', 'color'] }, seed: 2 },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const id = sub.body.id as string;
    worker = startProcess('dist/apps/worker/src/main.js', env.env);
    const e = await waitUntil(
      async () => {
        const r = await admin.call('GET', `/experiments/${id}`);
        return r.body.status === 'succeeded' || r.body.status === 'failed' ? r.body : null;
      },
      90_000,
      'the subtract experiment',
    );
    expect(e.status, `${e.error}\n${worker.output()}`).toBe('succeeded');
    const result = e.result as { curve: unknown[]; perFeature: { shuffleDrop: number | null; iv: number | null }[] };
    await page.goto(`${url}/experiments/${id}`);
    await page.locator('details.raw-json').waitFor();
    const figures = page.locator('figure.chart-figure');
    expect(await figures.count()).toBe(3);
    expect(await figures.nth(0).locator('svg.chart g.chart-mark').count()).toBe(result.curve.length);
    expect(await figures.nth(1).locator('svg.chart g.chart-mark').count()).toBe(
      result.perFeature.filter((f) => f.shuffleDrop !== null).length,
    );
    expect(await figures.nth(1).locator('.chart-label').allTextContents()).toEqual(
      expect.arrayContaining(['strong', 'weak', 'noise', 'color']),
    );
    // the IV bars: one per feature with an IV
    expect(await figures.nth(2).locator('figcaption').textContent()).toBe('Information value per feature');
    expect(await figures.nth(2).locator('svg.chart g.chart-mark').count()).toBe(
      result.perFeature.filter((f) => f.iv !== null).length,
    );
    await screenshot(page, 'experiment-charts-subtract-run');
    expect(consoleErrors.errors).toEqual([]);
  }, 120_000);

  it('a score run by the worker: IV bars per feature and the WOE per bin of a chosen feature, with its bins table', async () => {
    const sub = await admin.call('POST', '/experiments', {
      kind: 'score',
      businessLine: 'feed',
      name: 'charts score run',
      spec: { sampleSet: 'feed-clicks', features: ['strong', 'weak', 'noise', 'color'] },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const id = sub.body.id as string;
    const e = await waitUntil(
      async () => {
        const r = await admin.call('GET', `/experiments/${id}`);
        return r.body.status === 'succeeded' || r.body.status === 'failed' ? r.body : null;
      },
      60_000,
      'the score experiment',
    );
    expect(e.status, String(e.error)).toBe('succeeded');
    const stored = (await admin.call('GET', `/experiments/${id}/results?scorer=iv`)).body as {
      featureName: string;
      value: number;
      details: { bins: unknown[] };
    }[];
    const strongest = [...stored].sort((a, b) => b.value - a.value)[0]!;
    await page.goto(`${url}/experiments/${id}`);
    const figures = page.locator('figure.chart-figure');
    await page.getByLabel('Feature', { exact: true }).waitFor();
    expect(await figures.count()).toBe(2);
    expect(await figures.nth(0).locator('svg.chart g.chart-mark').count()).toBe(4);
    // the strongest feature's bins first: one bar and one table row per stored bin
    const woe = figures.nth(1);
    expect(await woe.locator('figcaption').textContent()).toBe(`WOE per bin of ${strongest.featureName}`);
    expect(await woe.locator('svg.chart g.chart-mark').count()).toBe(strongest.details.bins.length);
    expect(
      await page
        .getByRole('table', { name: `bins of ${strongest.featureName}` })
        .locator('tbody tr')
        .count(),
    ).toBe(strongest.details.bins.length);
    // another feature from the list: its own bins
    const other = stored.find((r) => r.featureName === 'color')!;
    await page.getByLabel('Feature', { exact: true }).selectOption('color');
    await woe.locator('figcaption', { hasText: 'WOE per bin of color' }).waitFor();
    expect(await woe.locator('svg.chart g.chart-mark').count()).toBe(other.details.bins.length);
    expect(await page.locator('svg.chart [style]').count()).toBe(0);
    await screenshot(page, 'experiment-charts-score-run');
    expect(consoleErrors.errors).toEqual([]);
  }, 90_000);

  it('the served model page shows its schedule, the window open now, and the scheduled switch in the log', async () => {
    const csv = path.join(env.dataDir, 'in', 'sched.csv');
    writeSmallCsv(csv, 500);
    const up = await admin.upload('/sample-sets', csv, {
      name: 'sched-clicks',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
    });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      for (const [tier, features] of [
        [-1, ['strong', 'weak', 'noise', 'color']],
        [0, ['strong', 'weak', 'color']],
      ] as const) {
        const m = await admin.call('POST', '/models', { name: 'night', businessLine: 'feed', sampleSetId: up.body.id, features });
        expect(m.status, JSON.stringify(m.body)).toBe(201);
        // made a tier the way divide publishes them (directly in the registry)
        await ds.getRepository(ModelEntity).update({ id: m.body.id as string }, { tier });
      }
    } finally {
      await ds.destroy();
    }
    // a window around now (UTC), and a weekend one
    const hhmm = (t: number) => new Date(t).toISOString().slice(11, 16);
    const schedule = {
      timeZone: 'UTC',
      windows: [{ tier: -1, days: ['sat', 'sun'], from: hhmm(Date.now() + 3 * 3_600_000), to: hhmm(Date.now() + 4 * 3_600_000) }],
    };
    const weekday = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'][new Date().getUTCDay()]!;
    (schedule.windows as { tier: number; days?: string[]; from: string; to: string }[]).unshift({
      tier: -1,
      days: [weekday],
      from: hhmm(Date.now()),
      to: hhmm(Date.now() + 60 * 60_000),
    });
    if (schedule.windows[1]!.days.includes(weekday))
      schedule.windows[1]!.days = schedule.windows[1]!.days.filter((d) => d !== weekday);
    if (!schedule.windows[1]!.days.length) schedule.windows.pop();
    const reg = await admin.call('POST', '/serving', {
      model: 'night',
      businessLine: 'feed',
      tiers: [-1, 0],
      webhookUrl: 'http://127.0.0.1:9/hook',
      secret: 'charts-test-secret-0123',
      policy: { signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 } }, cooldownSeconds: 0, minDwellSeconds: 0, schedule },
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    const id = reg.body.id as string;
    // the api's schedule pass moves it to the large tier
    await waitUntil(
      async () => (await admin.call('GET', `/serving/${id}/active`)).body.tier === -1,
      15_000,
      'the scheduled switch',
    );
    await page.goto(`${url}/serving/${id}`);
    const section = page.locator('section[aria-labelledby="schedule"]');
    await section.waitFor();
    expect(await section.getByRole('status').innerText()).toMatch(
      /^Now inside the window \d\d:\d\d–\d\d:\d\d UTC: tier-large preferred/,
    );
    const rows = await section.locator('tbody tr').allInnerTexts();
    expect(rows.length).toBe(schedule.windows.length);
    expect(rows[0]).toMatch(/tier-large · open now/);
    expect(await section.locator('tbody tr.current').count()).toBe(1);
    await page.locator('dl.facts strong', { hasText: 'tier-large' }).waitFor();
    const log = page.locator('table.switch-log tbody tr');
    await log.first().waitFor();
    expect(await log.first().innerText()).toMatch(/tier-0 → tier-large\s+schedule: window .* prefers tier-large/);
    await screenshot(page, 'serving-schedule');
    expect(consoleErrors.errors).toEqual([]);
  });

  it('the Data page shows each shared embedding version’s parent, the line that trained it, what it brought and the owner’s check', async () => {
    // two versions as the registry writes them (the workflow that makes them is covered by the integration tests)
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      const repo = ds.getRepository(SharedEmbeddingEntity);
      const base = {
        name: 'feed.search',
        businessLine: 'feed',
        owner: 'test-admin',
        dim: 8,
        slots: [{ name: 'color', rows: 4, idSpace: 'dictionary' as const }],
        sharingPolicy: { shareWith: ['search'], updatableBy: ['search'] },
        bytes: 100,
        sha256: 'a'.repeat(64),
        experimentId: null,
      };
      await repo.save(
        repo.create({
          ...base,
          version: 1,
          sources: [
            {
              sampleSetId: randomUUID(),
              businessLine: 'feed',
              name: 'feed-clicks',
              dataVersion: null,
              role: 'target',
              rows: 1000,
            },
          ],
          file: 'embeddings/x/embedding.safetensors',
          originKey: `test:${randomUUID()}`,
          provenance: { strategy: 'union' },
        }),
      );
      await repo.save(
        repo.create({
          ...base,
          version: 2,
          sources: [
            {
              sampleSetId: randomUUID(),
              businessLine: 'search',
              name: 'search-clicks',
              dataVersion: null,
              role: 'target',
              rows: 800,
            },
          ],
          file: 'embeddings/y/embedding.safetensors',
          originKey: `test:${randomUUID()}`,
          provenance: {
            strategy: 'update',
            parent: 'feed.search@1',
            updatedBy: 'search',
            updateResult: {
              line: 'search',
              validation: { delta: 0.0045, ciLow: 0.0008, ciHigh: 0.0089 },
              test: { delta: 0.0031, ciLow: -0.002, ciHigh: 0.0074 },
              verdict: 'recommend',
            },
            ownerCheck: {
              line: 'feed',
              parent: 'feed.search@1',
              delta: -0.0062,
              ciLow: -0.0101,
              ciHigh: -0.0021,
              verdict: 'hurts',
              test: { delta: -0.004, ciLow: -0.009, ciHigh: 0.001 },
            },
          },
        }),
      );
    } finally {
      await ds.destroy();
    }
    await page.goto(`${url}/data`);
    const v2 = page.locator('tr[data-embedding="feed.search@2"]');
    await v2.waitFor();
    const text = await v2.innerText();
    expect(text).toMatch(/from feed\.search@1 by search/);
    expect(text).toMatch(/for search: validation ΔAUC \+0\.0045 \[\+0\.0008, \+0\.0089\] \(recommend\)/);
    expect(text).toMatch(/owner feed: hurts, validation ΔAUC -0\.0062/);
    expect(text).toMatch(/updatable by search/);
    expect(await v2.locator('[data-owner-check="hurts"]').count()).toBe(1);
    expect(await page.locator('tr[data-embedding="feed.search@1"]').innerText()).toMatch(/first version \(union\)/);
    await page.locator('section[aria-labelledby="embeddings"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'data-embedding-versions');
    expect(consoleErrors.errors).toEqual([]);
  });
});
