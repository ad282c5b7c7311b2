import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { DataSource } from 'typeorm';
import { DuckDBInstance } from '@duckdb/node-api';
import { createDataSource, ReportDeliveryEntity, ReportEntity } from '@abacus/data';
import { JobName, QueueName, redisConnection } from '@abacus/queue';
import { Mailer, ReportDeliveryHandler, ReportFireHandler, type ReportContent } from '@abacus/reports';
import { WebhookNotifier } from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { cli } from '../support/processes';
import { startReceiver, type ReceivedHook } from '../support/webhook-receiver';

/**
 * Weekly reports end to end on real Postgres and Redis: a schedule a few seconds ahead fires once
 * with two workers on the queue, the report (a subtract in report mode on 2,000 rows) is stored,
 * delivered by signed webhook and by e-mail to a local SMTP sink; a second report on a newer,
 * shifted sample set reports the change (PSI drift, a feature added); API and CLI list and show them.
 */

const SECRET = 'reports-test-webhook-secret';
let env: TestEnv;
let api: ApiHandle;
let workers: WorkerHandle[] = [];
let ds: DataSource;
let hooks: { url: string; received: ReceivedHook[]; close(): Promise<void> };
let smtp: SMTPServer;
const mails: ParsedMail[] = [];
let reportsQueue: Queue;
const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);

/** The small table, with `strong` moved by `shift` (its distribution changes; the other columns stay). */
function sampleCsv(file: string, shift = 0): string {
  writeSmallCsv(file, 2000);
  if (shift) {
    const [head, ...rows] = fs.readFileSync(file, 'utf8').trim().split('\n');
    const moved = rows.map((r) => {
      const c = r.split(',');
      c[1] = (Number(c[1]) + shift).toFixed(4);
      return c.join(',');
    });
    fs.writeFileSync(file, `${[head, ...moved].join('\n')}\n`);
  }
  return file;
}

const cronAt = (t: Date) => `${t.getUTCSeconds()} ${t.getUTCMinutes()} ${t.getUTCHours()} * * *`;
const hooksOf = (event: string) => hooks.received.filter((h) => h.headers['x-abacus-event'] === event);

beforeAll(async () => {
  hooks = await startReceiver();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (m) => {
          mails.push(m);
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  env = await createTestEnv({
    ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    ABACUS_NOTIFY_WEBHOOK_URL: hooks.url,
    ABACUS_NOTIFY_WEBHOOK_SECRET: SECRET,
    ABACUS_SMTP_HOST: '127.0.0.1',
    ABACUS_SMTP_PORT: String(smtpPort),
    ABACUS_SMTP_FROM: 'abacus@example.com',
    ABACUS_REAPER_INTERVAL_MS: '0',
  });
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  reportsQueue = new Queue(QueueName.Reports, {
    connection: redisConnection(env.config),
    prefix: env.config.ABACUS_QUEUE_PREFIX,
  });
  expect((await admin.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
  const up = await admin.upload('/sample-sets', sampleCsv(path.join(env.dataDir, 'in', 'feed-w1.csv')), {
    name: 'feed-w1',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
  });
  expect(up.status, JSON.stringify(up.body)).toBe(201);
  const model = await admin.call('POST', '/models', {
    name: 'ctr',
    businessLine: 'feed',
    sampleSetId: up.body.id,
    features: ['strong', 'weak', 'noise', 'color'],
  });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
}, 120_000);

afterAll(async () => {
  for (const w of workers) await w.stop(1000);
  await reportsQueue?.close();
  await ds?.destroy();
  await api?.close();
  await hooks?.close();
  await new Promise<void>((r) => (smtp ? smtp.close(() => r()) : r()));
  await env?.teardown();
});

describe('weekly reports', () => {
  let scheduleId = '';
  let firstId = '';

  it('refuses bad schedules with the zod paths and leaves nothing behind', async () => {
    const bad = [
      [{ model: 'ctr', businessLine: 'feed', cron: 'every monday' }, 'cron'],
      [{ model: 'ctr', businessLine: 'feed', emails: ['not-an-address'] }, 'emails.0'],
      [{ model: 'ctr', businessLine: 'feed', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ model: 'ctr', businessLine: 'feed', subtract: { maxDrop: 2 } }, 'subtract.maxDrop'],
      [{ model: 'ctr', businessLine: 'feed', thresholds: { psi: -1 } }, 'thresholds.psi'],
    ] as const;
    for (const [body, p] of bad) {
      const res = await admin.call('POST', '/report-schedules', body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect((res.body.issues as { path: string }[]).map((i) => i.path)).toContain(p);
    }
    expect((await admin.call('POST', '/report-schedules', { model: 'nope', businessLine: 'feed' })).status).toBe(404);
    const run = await admin.call('POST', '/reports/run', { model: 'ctr', businessLine: 'feed', emails: ['x'] });
    expect(run.status).toBe(400);
    expect(await ds.query('SELECT count(*)::int AS n FROM report_schedules')).toEqual([{ n: 0 }]);
    expect(await ds.query('SELECT count(*)::int AS n FROM reports')).toEqual([{ n: 0 }]);
    expect(await reportsQueue.getJobSchedulersCount()).toBe(0);
    expect(await reportsQueue.count()).toBe(0);
  });

  it('a schedule fires at its time exactly once with two workers: one report per fire', async () => {
    const fireAt = new Date(Math.ceil((Date.now() + 10_000) / 1000) * 1000);
    const res = await admin.call('POST', '/report-schedules', {
      model: 'ctr',
      businessLine: 'feed',
      cron: cronAt(fireAt),
      timezone: 'UTC',
      emails: ['owner@example.com'],
      subtract: { retrainSeeds: 3, confirm: false },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    scheduleId = res.body.id as string;
    expect(res.body.nextRunAt).toBe(fireAt.toISOString());
    expect(res.body.scheduled).toBe(true);
    // a second schedule for the same model is a conflict
    expect((await admin.call('POST', '/report-schedules', { model: 'ctr', businessLine: 'feed' })).status).toBe(409);
    // two workers, both listening on the reports queue (and the trials the report's subtract runs)
    workers = [await startWorker(env.config, { logger: false }), await startWorker(env.config, { logger: false })];

    const report = await waitUntil(
      async () => {
        const rows = await ds.getRepository(ReportEntity).findBy({ scheduleId });
        return rows.length && rows[0].status !== 'running' ? rows[0] : null;
      },
      150_000,
      'the scheduled report',
    );
    expect(report.status, report.error ?? '').toBe('succeeded');
    expect(report.fireAt.toISOString()).toBe(fireAt.toISOString());
    expect(report.trigger).toBe('schedule');
    firstId = report.id;
    // let both workers see whatever else the queue might hand out
    await new Promise((r) => setTimeout(r, 3000));
    expect(await ds.getRepository(ReportEntity).countBy({ scheduleId })).toBe(1);
    const fired = await reportsQueue.getJobs(['completed', 'failed', 'active', 'wait']);
    expect(fired.filter((j) => j.name === JobName.ReportFire)).toHaveLength(1);
    expect(fired.filter((j) => j.name === JobName.ReportRun).map((j) => j.id)).toEqual([report.id]);
    // the scheduler stays in Redis with its next fire one day later
    const next = await reportsQueue.getJobScheduler(`report-schedule:${scheduleId}`);
    expect(next?.next).toBe(fireAt.getTime() + 24 * 3600 * 1000);

    const content = report.content as unknown as ReportContent;
    expect(content.model.name).toBe('ctr');
    expect(content.sampleSet.name).toBe('feed-w1');
    expect(content.features.map((f) => f.feature).sort()).toEqual(['color', 'noise', 'strong', 'weak']);
    // the planted answer: the pure-noise column is removable, the strong one never
    expect(content.removable).toContain('noise');
    expect(content.removable).not.toContain('strong');
    const noise = content.features.find((f) => f.feature === 'noise')!;
    expect(noise.iv).not.toBeNull();
    expect(noise.shuffleCi).toHaveLength(2);
    expect(content.curve.length).toBeGreaterThan(0);
    expect(content.changes.previousReportId).toBeNull();
    expect(Object.keys(content.profiles).sort()).toEqual(['color', 'noise', 'strong', 'weak']);
    expect(content.savings.resources.map((r) => r.resource)).toEqual(['storage', 'communication', 'compute']);
    expect(report.summary).toMatchObject({ features: 4, removable: content.removable.length });
  }, 200_000);

  it('delivers the report by signed webhook and by e-mail, once each', async () => {
    const hook = await waitUntil(async () => hooksOf('report.ready')[0], 30_000, 'the report webhook');
    const body = JSON.parse(hook.body) as { event: string; deliveryId: string; payload: Record<string, any> };
    expect(hook.headers['x-abacus-signature']).toBe(
      WebhookNotifier.sign(SECRET, String(hook.headers['x-abacus-timestamp']), hook.body),
    );
    expect(body.payload.reportId).toBe(firstId);
    expect(body.payload.model.name).toBe('ctr');
    expect(body.payload.owners).toContain('test-admin');
    expect(body.payload.links.html).toBe(`/api/v1/reports/${firstId}/html`);
    const mail = await waitUntil(async () => mails[0], 30_000, 'the report e-mail');
    expect(mail.subject).toMatch(/^Abacus pruning report: feed\/ctr — \d of 4 features removable/);
    expect((mail.to as { text: string }).text).toBe('owner@example.com');
    expect(mail.html).toContain('Pruning report: feed/ctr v1');
    expect(mail.html).toContain('aria-label="pruning curve"');
    expect(mail.text).toContain('features removable');
    const deliveries = await waitUntil(
      async () => {
        const ds_ = await ds.getRepository(ReportDeliveryEntity).findBy({ reportId: firstId });
        return ds_.length === 2 && ds_.every((d) => d.status === 'delivered') ? ds_ : null;
      },
      30_000,
      'both deliveries delivered',
    );
    expect(deliveries.map((d) => d.channel).sort()).toEqual(['email', 'webhook']);
    expect(body.deliveryId).toBe(deliveries.find((d) => d.channel === 'webhook')!.id);

    // idempotent: the same fire again finds its report; a delivered delivery is not sent again
    const fire = new ReportFireHandler(ds, {
      enqueueReportRun: async () => undefined,
      removeReportScheduler: async () => undefined,
    });
    const again = await fire.handle(
      { scheduleId },
      {
        job: {
          id: `repeat:report-schedule:${scheduleId}:${Date.parse((await ds.getRepository(ReportEntity).findOneByOrFail({ id: firstId })).fireAt.toISOString())}`,
          timestamp: Date.now(),
          opts: {},
        } as never,
      },
    );
    expect(again.reportId).toBe(firstId);
    expect(await ds.getRepository(ReportEntity).countBy({ scheduleId })).toBe(1);
    const mailer = Mailer.fromConfig(env.config)!;
    const deliver = new ReportDeliveryHandler(ds, {
      allow: env.config.ABACUS_WEBHOOK_ALLOWED_HOSTS,
      webhookSecret: SECRET,
      mailer,
      apiUrl: 'http://x',
    });
    for (const d of deliveries)
      expect(await deliver.handle({ deliveryId: d.id }, { job: { attemptsMade: 0, opts: { attempts: 1 } } as never })).toEqual({
        status: 'delivered',
      });
    mailer.close();
    await new Promise((r) => setTimeout(r, 500));
    expect(mails).toHaveLength(1);
    expect(hooksOf('report.ready')).toHaveLength(1);
  }, 90_000);

  it('a run now on newer data reports the change since the previous report', async () => {
    expect((await admin.call('POST', '/features', { name: 'new_signal', businessLine: 'feed', kind: 'numeric' })).status).toBe(
      201,
    );
    const up = await admin.upload('/sample-sets', sampleCsv(path.join(env.dataDir, 'in', 'feed-w2.csv'), 0.8), {
      name: 'feed-w2',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
    });
    expect(up.status).toBe(201);
    const run = await admin.call('POST', '/reports/run', { model: 'ctr', businessLine: 'feed' });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    expect(run.body.trigger).toBe('manual');
    const id = run.body.id as string;
    const done = await waitUntil(
      async () => {
        const r = await admin.call('GET', `/reports/${id}`);
        return r.body.status !== 'running' ? r.body : null;
      },
      150_000,
      'the manual report',
    );
    expect(done.status, done.error).toBe('succeeded');
    const c = done.content as ReportContent;
    expect(c.sampleSet.name).toBe('feed-w2');
    expect(c.sampleSet.latest).toBe(true);
    expect(c.changes.previousReportId).toBe(firstId);
    expect(done.previousReportId).toBe(firstId);
    // strong moved by 0.8 (of a range of 2): far beyond the PSI threshold; noise and weak are byte-identical: PSI 0
    expect(c.changes.psiDrift).toEqual(['strong']);
    expect(c.changes.psi.find((p) => p.feature === 'strong')!.psi).toBeGreaterThan(1);
    expect(c.changes.psi.find((p) => p.feature === 'noise')!.psi).toBe(0);
    expect(c.changes.psi.find((p) => p.feature === 'color')!.psi).toBe(0);
    expect(c.changes.featuresAdded.map((f) => f.name)).toEqual(['new_signal']);
    expect(c.changes.thresholds).toEqual({ psi: 0.1, ivDrift: 0.02 });
    // the schedule's addresses and subtract options carry over to a run now
    await waitUntil(async () => mails.length === 2 && hooksOf('report.ready').length === 2, 30_000, 'second deliveries');
    expect(mails[1].subject).toContain('feed/ctr');
  }, 200_000);

  it('API and CLI list and show reports; the HTML is served as a document', async () => {
    const list = await admin.call('GET', '/reports?model=ctr');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(2);
    expect(list.body.items[0].content).toBeUndefined();
    expect(list.body.items.map((r: { trigger: string }) => r.trigger)).toEqual(['manual', 'schedule']);
    expect(list.body.items[0].summary.psiDrift).toBe(1);
    expect((await admin.call('GET', '/reports?status=nope')).status).toBe(400);
    expect((await admin.call('GET', '/reports/not-a-uuid')).status).toBe(400);
    const html = await fetch(`${api.url}/api/v1/reports/${firstId}/html`, {
      headers: { authorization: `Bearer ${env.adminKey}` },
    });
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await html.text()).toMatch(/^<!doctype html>[\s\S]*<svg[\s\S]*<\/html>$/);

    const cliList = await cli(['report', 'list', '--model', 'ctr'], { ...env.env, ABACUS_API_URL: api.url });
    expect(cliList.code, cliList.stderr).toBe(0);
    expect(cliList.stdout).toContain(firstId);
    expect(cliList.stdout).toMatch(/1 PSI drift, 1 new feature/);
    const out = path.join(env.dataDir, 'report.html');
    const show = await cli(['report', 'show', firstId, '--html', out], { ...env.env, ABACUS_API_URL: api.url });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('feed/ctr');
    expect(show.stdout).toContain('first report of this model');
    expect(fs.readFileSync(out, 'utf8')).toContain('<svg');
    const missing = await cli(['report', 'show', '00000000-0000-4000-8000-000000000000'], {
      ...env.env,
      ABACUS_API_URL: api.url,
    });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/404|not found/);
    const badFlag = await cli(['report', 'show', 'nope'], { ...env.env, ABACUS_API_URL: api.url });
    expect(badFlag.code).toBe(1);
    expect(badFlag.stderr).toContain('a report id');
  }, 60_000);

  it('changing and deleting a schedule changes and removes its job scheduler', async () => {
    const patched = await admin.call('PATCH', `/report-schedules/${scheduleId}`, {
      cron: '0 6 * * 1',
      timezone: 'Europe/Berlin',
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const s = await reportsQueue.getJobScheduler(`report-schedule:${scheduleId}`);
    expect(s?.pattern).toBe('0 6 * * 1');
    expect(s?.tz).toBe('Europe/Berlin');
    expect(
      new Date(s!.next!).toLocaleString('en-GB', {
        timeZone: 'Europe/Berlin',
        weekday: 'long',
        hour: '2-digit',
        minute: '2-digit',
      }),
    ).toBe('Monday 06:00');
    expect((await admin.call('PATCH', `/report-schedules/${scheduleId}`, {})).status).toBe(400);
    expect((await admin.call('DELETE', `/report-schedules/${scheduleId}`)).status).toBe(200);
    expect((await reportsQueue.getJobScheduler(`report-schedule:${scheduleId}`))?.next ?? null).toBeNull();
    expect(await reportsQueue.getJobSchedulersCount()).toBe(0);
    expect((await admin.call('GET', `/report-schedules/${scheduleId}`)).status).toBe(404);
    // the reports stay
    expect((await admin.call('GET', '/reports?model=ctr')).body.total).toBe(2);
  });

  it("a run on a set registered by reference profiles it through the host's cache: the last upload's rows, no drift", async () => {
    // feed-w2's rows as a Parquet folder on a shared path, registered by reference: the line's newest set
    const dir = path.join(env.dataDir, 'shared', 'feed-w3');
    fs.mkdirSync(dir, { recursive: true });
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    try {
      await con.run(
        `COPY (SELECT * FROM read_csv('${path.join(env.dataDir, 'in', 'feed-w2.csv')}')) TO '${path.join(dir, 'part-0.parquet')}' (FORMAT parquet)`,
      );
    } finally {
      con.closeSync();
      db.closeSync();
    }
    const reg = await admin.call('POST', '/sample-sets/register', {
      url: `file://${dir}/`,
      name: 'feed-w3',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    const run = await admin.call('POST', '/reports/run', { model: 'ctr', businessLine: 'feed' });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const done = await waitUntil(
      async () => {
        const r = await admin.call('GET', `/reports/${run.body.id as string}`);
        return r.body.status !== 'running' ? r.body : null;
      },
      150_000,
      'the report on a set registered by reference',
    );
    expect(done.status, done.error).toBe('succeeded');
    const c = done.content as ReportContent;
    expect(c.sampleSet.name).toBe('feed-w3');
    expect(Object.keys(c.profiles).sort()).toEqual(['color', 'noise', 'strong', 'weak']);
    // the same rows as the report before: every distribution unchanged
    expect(c.changes.psi.map((p) => p.feature).sort()).toEqual(['color', 'noise', 'strong', 'weak']);
    for (const p of c.changes.psi) expect(p.psi, p.feature).toBe(0);
    expect(c.changes.psiDrift).toEqual([]);
  }, 200_000);
});
