import { UnrecoverableError } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { HostAllowList } from '@abacus/configs';
import { ReportDeliveryEntity, ReportEntity } from '@abacus/data';
import { TransientError, type JobContext, type JobName, type JobPayloads } from '@abacus/queue';
import { WebhookNotifier } from '@abacus/workflows';
import type { Mailer } from './mailer';
import type { ReportContent } from './report-content';
import { renderReportText } from './report-html';
import { REPORT_EVENT, reportLink } from './report-run.handler';

export interface ReportDeliveryOptions {
  allow: HostAllowList;
  webhookSecret: string | undefined;
  mailer: Mailer | null;
  apiUrl: string;
}

/**
 * One attempt to deliver a report on one channel: the signed webhook (the notifier of add's verdicts
 * and serving's switches: HMAC over `<timestamp>.<body>`, allow-list checked at connect time,
 * `x-abacus-delivery` = the delivery id) or one e-mail (Message-ID from the delivery id). A delivered
 * row is never sent again; every attempt's outcome lands in the row; BullMQ retries with backoff.
 */
export class ReportDeliveryHandler {
  constructor(
    private readonly ds: DataSource,
    private readonly opts: ReportDeliveryOptions,
  ) {}

  async handle(p: JobPayloads[JobName.ReportDeliver], ctx: Pick<JobContext, 'job'>): Promise<{ status: string }> {
    const repo = this.ds.getRepository(ReportDeliveryEntity);
    const d = await repo.findOneBy({ id: p.deliveryId });
    if (!d) throw new UnrecoverableError(`report delivery ${p.deliveryId} not found`);
    if (d.status !== 'pending') return { status: d.status };
    const r = await this.ds
      .getRepository(ReportEntity)
      .createQueryBuilder('r')
      .addSelect('r.html')
      .where('r.id = :id', { id: d.reportId })
      .getOne();
    if (!r || !r.content || !r.html) throw new UnrecoverableError(`report ${d.reportId} has no content to deliver`);
    const content = r.content as unknown as ReportContent;
    const link = reportLink(this.opts.apiUrl, r.id);
    let error: string | null = null;
    let refused = false;
    if (d.channel === 'webhook') {
      const notifier = new WebhookNotifier(d.target, this.opts.webhookSecret, { attempts: 1, allow: this.opts.allow });
      const res = await notifier.send(REPORT_EVENT, d.id, {
        reportId: r.id,
        businessLine: r.businessLine,
        model: { name: r.modelName, id: r.modelId, version: content.model.version },
        owners: [...new Set([content.model.owner, r.owner])],
        trigger: r.trigger,
        fireAt: content.fireAt,
        generatedAt: content.generatedAt,
        summary: r.summary,
        removable: content.removable,
        changes: {
          newlyRemovable: content.changes.newlyRemovable,
          noLongerRemovable: content.changes.noLongerRemovable,
          ivDrift: content.changes.ivDrift.map((x) => x.feature),
          psiDrift: content.changes.psiDrift,
          featuresAdded: content.changes.featuresAdded.map((x) => x.name),
        },
        savings: content.savings.resources,
        links: { report: link, json: `/api/v1/reports/${r.id}`, html: `/api/v1/reports/${r.id}/html` },
      });
      if (res.status !== 'delivered') {
        error = res.error ?? 'failed';
        refused = res.attempts === 0 || /webhook target refused/.test(error);
      }
    } else if (!this.opts.mailer) {
      error = 'SMTP is not configured (ABACUS_SMTP_HOST)';
      refused = true;
    } else {
      try {
        await this.opts.mailer.send({
          to: d.target,
          subject: `Abacus pruning report: ${r.businessLine}/${r.modelName} — ${content.removable.length} of ${content.features.length} features removable (${content.generatedAt.slice(0, 10)})`,
          html: r.html,
          text: renderReportText(content, { report: link }),
          messageId: `<report-${d.id}@abacus>`,
        });
      } catch (err) {
        error = (err as Error).message;
        // a permanent SMTP refusal (5xx) stays refused
        refused = Number((err as { responseCode?: number }).responseCode) >= 500;
      }
    }
    const last = ctx.job.attemptsMade + 1 >= (ctx.job.opts.attempts ?? 1);
    await repo
      .createQueryBuilder()
      .update()
      .set({
        attempts: () => 'attempts + 1',
        lastError: error,
        status: error === null ? 'delivered' : refused || last ? 'failed' : 'pending',
        deliveredAt: error === null ? new Date() : null,
      })
      .where('id = :id', { id: d.id })
      .execute();
    if (error === null) return { status: 'delivered' };
    if (refused) throw new UnrecoverableError(error);
    throw new TransientError(`report delivery ${d.id}: ${error}`);
  }
}
