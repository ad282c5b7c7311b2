// a new user's discover from the web form on the quickstart's demo world, all defaults
const { chromium } = require('playwright-core');
const fs = require('fs');
(async () => {
  const key = JSON.parse(fs.readFileSync(require('os').homedir() + '/.config/abacus/credentials.json', 'utf8')).keys['http://localhost:3000'].key;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.setDefaultTimeout(30000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const t0 = Date.now();
  const log = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${m}`);
  await page.goto('http://localhost:3000/signin');
  await page.getByLabel('API key').fill(key);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/experiments$/);
  await page.getByRole('link', { name: 'New experiment' }).click();
  await page.getByRole('navigation', { name: 'experiment kind' }).getByRole('link', { name: 'discover', exact: true }).click();
  await page.waitForURL(/kind=discover/);
  await page.getByLabel('Name', { exact: true }).fill('discover on the demo (defaults)');
  await page.getByLabel('Business line').selectOption('feed');
  await page.getByLabel('a registered model').check();
  await page.getByLabel('Registered model', { exact: true }).selectOption('base');
  await page.screenshot({ path: './form.png', fullPage: true });
  await page.getByRole('button', { name: 'Launch discover experiment' }).click();
  await page.getByRole('heading', { name: /discover on the demo/ }).waitFor();
  const id = page.url().split('/').pop();
  log(`launched ${id}`);
  let last = '';
  for (;;) {
    const done = await page.getByRole('heading', { name: 'Discovered features' }).count();
    const failed = await page.locator('text=/failed/i').count();
    const prog = await page.locator('[role=progressbar], .progress').first().innerText().catch(() => '');
    if (prog && prog !== last) { log(`progress: ${prog.replace(/\s+/g, ' ').slice(0, 160)}`); last = prog; }
    if (done) break;
    if (Date.now() - t0 > 1500000) { log('timed out'); break; }
    await page.waitForTimeout(10000);
  }
  await page.screenshot({ path: './done.png', fullPage: true });
  const e = await (await fetch(`http://localhost:3000/api/v1/experiments/${id}`, { headers: { authorization: `Bearer ${key}` } })).json();
  log(`status ${e.status}, created ${e.createdAt}, finished ${e.finishedAt}`);
  fs.writeFileSync('./experiment.json', JSON.stringify(e, null, 1));
  const r = e.result || {};
  log(`candidates ${r.candidates}; chosen ${(r.chosen || []).map((c) => `${c.text} → ${c.verdict}`).join('; ')}`);
  log(`registered ${JSON.stringify(r.registered)} costs ${JSON.stringify(r.costs)}`);
  const adopted = (r.chosen || []).filter((c) => c.verdict === 'adopt').map((c) => c.name);
  if (adopted.length) {
    await page.getByRole('link', { name: adopted[0], exact: true }).click();
    await page.waitForURL(/\/features\?/);
    await page.getByRole('link', { name: adopted[0], exact: true }).click();
    await page.waitForURL(/\/features\/[0-9a-f-]+$/);
    await page.getByRole('heading', { name: 'Definition' }).waitFor();
    await page.waitForTimeout(1500);
    await page.screenshot({ path: './feature.png', fullPage: true });
    log('feature page: ' + (await page.locator('main').innerText()).replace(/\n+/g, ' | ').slice(0, 1500));
  }
  log(`page errors: ${JSON.stringify(errors)}`);
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
