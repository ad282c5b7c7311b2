import { UnrecoverableError } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { HostAllowList } from '@abacus/configs';
import { ServingModelEntity, ServingWebhookDeliveryEntity } from '@abacus/data';
import { TransientError, type JobContext, type JobPayloads, type JobName } from '@abacus/queue';
import { WebhookNotifier } from '@abacus/workflows';

/**
 * One attempt to deliver a switch's webhook: signed and sent by the same notifier as add's verdicts
 * (HMAC over `<timestamp>.<body>`, the allow-list checked at connect time), one POST per job attempt;
 * BullMQ retries a failed attempt with exponential backoff. Every attempt's outcome lands in the
 * delivery row (attempts, status codes, last error, status).
 */
export class ServingWebhookHandler {
  constructor(
    private readonly ds: DataSource,
    private readonly allow: HostAllowList,
  ) {}

  async handle(p: JobPayloads[JobName.ServingWebhook], ctx: Pick<JobContext, 'job'>): Promise<{ status: string }> {
    const repo = this.ds.getRepository(ServingWebhookDeliveryEntity);
    const d = await repo.findOneBy({ id: p.deliveryId });
    if (!d) throw new UnrecoverableError(`webhook delivery ${p.deliveryId} not found`);
    if (d.status === 'delivered') return { status: 'delivered' };
    const served = await this.ds
      .getRepository(ServingModelEntity)
      .createQueryBuilder('s')
      .addSelect('s.webhookSecret')
      .where('s.id = :id', { id: d.servingId })
      .getOne();
    if (!served) throw new UnrecoverableError(`served model ${d.servingId} not found`);
    const notifier = new WebhookNotifier(d.url, served.webhookSecret, { attempts: 1, allow: this.allow });
    const res = await notifier.send(d.event, d.id, d.payload);
    const refused = res.attempts === 0 || /webhook target refused/.test(res.error ?? '');
    const last = ctx.job.attemptsMade + 1 >= (ctx.job.opts.attempts ?? 1);
    const delivered = res.status === 'delivered';
    await repo
      .createQueryBuilder()
      .update()
      .set({
        attempts: () => 'attempts + 1',
        statusCodes: () => `status_codes || '[${Number(res.httpStatus ?? 0)}]'::jsonb`,
        lastError: delivered ? null : (res.error ?? 'failed'),
        status: delivered ? 'delivered' : refused || last ? 'failed' : 'pending',
        deliveredAt: delivered ? new Date() : null,
      })
      .where('id = :id', { id: d.id })
      .execute();
    if (delivered) return { status: 'delivered' };
    if (refused) throw new UnrecoverableError(res.error ?? 'webhook target refused');
    throw new TransientError(`webhook ${d.id}: ${res.error ?? 'failed'}`);
  }
}
