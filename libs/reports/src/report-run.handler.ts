import { Logger } from '@nestjs/common';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { DataSource } from 'typeorm';
import { MoreThan } from 'typeorm';
import { type DataDir, type OpenedSamples } from '@abacus/catalog';
import type { RequestScope } from '@abacus/core';
import {
  ExperimentEntity,
  FeatureEntity,
  ModelEntity,
  ReportDeliveryEntity,
  ReportEntity,
  SampleSetEntity,
  TERMINAL_STATUSES,
} from '@abacus/data';
import { classifyError, type JobContext, type JobName, type JobPayloads, type QueueService } from '@abacus/queue';
import { readTable } from '@abacus/samples';
import { createExperimentSchema, type CostLedgerService, type ExperimentService } from '@abacus/workflows';
import { countOnProfile, profileColumn, type FeatureProfile } from './feature-profile';
import { latestSampleSet } from './latest-data';
import { summarize, type CurvePoint, type ReportContent, type ReportFeature, type ResourceSaving } from './report-content';
import { diffReports, type PreviousSnapshot, type ReportThresholds } from './report-diff';
import { renderReportHtml } from './report-html';
import { reportOptionsSchema } from './report.schemas';

export const REPORT_EVENT = 'report.ready';

export interface ReportRunOptions {
  thresholds: ReportThresholds;
  /** ABACUS_NOTIFY_WEBHOOK_URL: every report is POSTed there when set */
  webhookUrl: string | undefined;
  /** e-mail deliveries are written only when SMTP is configured */
  smtp: boolean;
  /** where links in the report point (ABACUS_API_URL) */
  apiUrl: string;
  /** how often a run looks at its experiment again while it runs */
  pollMs?: number;
  /** where this process reads a sample set registered by reference (SampleSetData.open: through the host's cache) */
  openSamples?: (ss: SampleSetEntity) => Promise<OpenedSamples>;
}

/** Rows the distribution profiles of a report read at most: a larger set is profiled on a seeded sample of this many. */
export const PROFILE_SAMPLE_ROWS = 1_000_000;

interface SubtractResult {
  removable: string[];
  full?: { auc?: number; logloss?: number };
  estimatedDrop?: { mean: number; ciLow: number; ciHigh: number } | null;
  retrainCheck?: ReportContent['retrainCheck'];
  confirmed?: ReportContent['confirmed'];
  maxDrop: number;
  curve?: CurvePoint[];
  perFeature: {
    feature: string;
    combinedRank: number;
    iv: number | null;
    shuffleDrop: number | null;
    shuffleCi: [number | null, number | null] | null;
    removable: boolean;
  }[];
}

export const reportLink = (apiUrl: string, id: string) => `${apiUrl.replace(/\/$/, '')}/reports/${id}`;

/**
 * A report run, as steps that each survive a restart: (1) the subtract experiment in report mode —
 * created with the id the report chose for it, so a rerun finds it instead of starting a second;
 * (2) while it runs, the job parks itself (delayed) and looks again; (3) the report's content and
 * HTML, its deliveries written in the same transaction as the status; (4) the deliveries queued
 * (job id = delivery id). A final failure marks the report failed.
 */
export class ReportRunHandler {
  private readonly logger = new Logger(ReportRunHandler.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueReportDelivery'>,
    private readonly experiments: Pick<ExperimentService, 'create'>,
    private readonly ledger: Pick<CostLedgerService, 'ledger'>,
    private readonly dataDir: DataDir,
    private readonly opts: ReportRunOptions,
  ) {}

  async handle(p: JobPayloads[JobName.ReportRun], ctx: Pick<JobContext, 'job' | 'token'>): Promise<{ status: string }> {
    try {
      return await this.step(p.reportId, ctx);
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      const last = classifyError(err).kind === 'deterministic' || ctx.job.attemptsMade + 1 >= (ctx.job.opts.attempts ?? 1);
      if (last) await this.fail(p.reportId, (err as Error).message);
      throw err;
    }
  }

  private async fail(id: string, error: string): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .update(ReportEntity)
      .set({ status: 'failed', error, finishedAt: () => 'now()' })
      .where("id = :id AND status = 'running'", { id })
      .execute();
    this.logger.warn(`report ${id} failed: ${error}`);
  }

  private scopeOf(r: ReportEntity): RequestScope {
    return { user: r.owner, role: 'engineer', lines: [r.businessLine], keyId: null };
  }

  private async step(id: string, ctx: Pick<JobContext, 'job' | 'token'>): Promise<{ status: string }> {
    const r = await this.ds.getRepository(ReportEntity).findOneBy({ id });
    if (!r) throw new UnrecoverableError(`report ${id} not found`);
    if (r.status !== 'running') {
      await this.enqueuePending(id);
      return { status: r.status };
    }
    const { subtract, thresholds } = r.options as { subtract?: unknown; thresholds?: unknown };
    const options = reportOptionsSchema.parse({ subtract: subtract ?? {}, thresholds: thresholds ?? {} });
    let e = await this.ds.getRepository(ExperimentEntity).findOneBy({ id: r.experimentId });
    if (!e) {
      const model = await this.ds.getRepository(ModelEntity).findOneByOrFail({ id: r.modelId });
      const { set } = await latestSampleSet(this.ds, model);
      await this.ds.getRepository(ReportEntity).update({ id }, { sampleSetId: set.id });
      await this.experiments.create(
        createExperimentSchema.parse({
          kind: 'subtract',
          businessLine: r.businessLine,
          name: `report ${model.name} ${r.fireAt.toISOString().slice(0, 16)}`,
          spec: {
            model: {
              sampleSet: set.id,
              features: model.features,
              architecture: model.architecture,
              training: model.trainingParams,
            },
            ...options.subtract,
          },
        }),
        this.scopeOf(r),
        { id: r.experimentId },
      );
      this.logger.log(`report ${id}: subtract ${r.experimentId} on sample set ${set.name} (${model.name} v${model.version})`);
      e = await this.ds.getRepository(ExperimentEntity).findOneByOrFail({ id: r.experimentId });
    }
    if (!TERMINAL_STATUSES.includes(e.status)) {
      // look again later without holding a worker slot
      if (!ctx.token) throw new Error('report run needs its job token to wait');
      await ctx.job.moveToDelayed(Date.now() + (this.opts.pollMs ?? 2000), ctx.token);
      throw new DelayedError();
    }
    if (e.status !== 'succeeded') {
      await this.fail(id, `the subtract experiment ${e.id} ${e.status}${e.error ? `: ${e.error}` : ''}`);
      return { status: 'failed' };
    }
    const content = await this.build(r, e, options.thresholds);
    const html = renderReportHtml(content, { report: reportLink(this.opts.apiUrl, id) });
    const emails = ((r.options as { emails?: string[] }).emails ?? []).filter(Boolean);
    await this.ds.transaction(async (m) => {
      const updated = await m
        .createQueryBuilder()
        .update(ReportEntity)
        .set({
          status: 'succeeded',
          content: content as never,
          summary: summarize(content) as never,
          html,
          previousReportId: content.changes.previousReportId,
          finishedAt: () => 'now()',
        })
        .where("id = :id AND status = 'running'", { id })
        .execute();
      if (!updated.affected) return;
      const targets = [
        ...(this.opts.webhookUrl ? [{ channel: 'webhook' as const, target: this.opts.webhookUrl }] : []),
        ...(this.opts.smtp ? emails.map((to) => ({ channel: 'email' as const, target: to })) : []),
      ];
      if (targets.length) {
        await m
          .createQueryBuilder()
          .insert()
          .into(ReportDeliveryEntity)
          .values(targets.map((t) => ({ reportId: id, ...t })))
          .orIgnore()
          .execute();
      }
    });
    await this.enqueuePending(id);
    this.logger.log(`report ${id} ready: ${content.removable.length} of ${content.features.length} features removable`);
    return { status: 'succeeded' };
  }

  private async enqueuePending(reportId: string): Promise<void> {
    const pending = await this.ds.getRepository(ReportDeliveryEntity).findBy({ reportId, status: 'pending' });
    for (const d of pending) await this.queue.enqueueReportDelivery(d.id);
  }

  /** The report's content: the experiment's result, drift against the previous report, savings. */
  async build(r: ReportEntity, e: ExperimentEntity, t: { psi?: number; ivDrift?: number }): Promise<ReportContent> {
    const thresholds: ReportThresholds = {
      psi: t.psi ?? this.opts.thresholds.psi,
      ivDrift: t.ivDrift ?? this.opts.thresholds.ivDrift,
    };
    const res = e.result as unknown as SubtractResult;
    const model = await this.ds.getRepository(ModelEntity).findOneByOrFail({ id: r.modelId });
    const ssId = (e.spec as { resolved?: { sampleSetId?: string } }).resolved?.sampleSetId ?? r.sampleSetId ?? model.sampleSetId;
    const ss = await this.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: ssId });
    const prevRow = await this.ds
      .getRepository(ReportEntity)
      .createQueryBuilder('p')
      .where("p.business_line = :bl AND p.model_name = :name AND p.status = 'succeeded' AND p.id <> :id", {
        bl: r.businessLine,
        name: r.modelName,
        id: r.id,
      })
      .andWhere('(p.fire_at, p.created_at) < (:fire, :created)', { fire: r.fireAt, created: r.createdAt })
      .orderBy('p.fire_at', 'DESC')
      .addOrderBy('p.created_at', 'DESC')
      .getOne();
    const prevContent = prevRow?.content as ReportContent | undefined;
    const prev: PreviousSnapshot | null =
      prevRow && prevContent
        ? {
            id: prevRow.id,
            generatedAt: prevContent.generatedAt,
            removable: prevContent.removable,
            iv: Object.fromEntries(prevContent.features.map((f) => [f.feature, f.iv])),
            profiles: prevContent.profiles ?? {},
          }
        : null;

    // binned distributions of the model's column features on this data (a seeded sample of
    // PROFILE_SAMPLE_ROWS rows of a larger set), and on the previous bins; a set registered by
    // reference is read through the host's cache
    const columns =
      ss.location && !this.opts.openSamples
        ? []
        : ss.schema.filter((c) => res.perFeature.some((f) => f.feature === c.name) && c.kind !== 'unsupported');
    let table: Awaited<ReturnType<typeof readTable>> | null = null;
    if (columns.length) {
      const opened = ss.location ? await this.opts.openSamples!(ss) : null;
      try {
        table = await readTable(opened ? opened.path : await this.dataDir.pull(ss.files[0]), {
          columns: columns.map((c) => c.name),
          sampleRows: PROFILE_SAMPLE_ROWS,
        });
      } finally {
        opened?.release();
      }
    }
    const profiles: Record<string, FeatureProfile> = {};
    const countsOnPrevious: Record<string, number[] | null> = {};
    for (const col of table?.columns ?? []) {
      profiles[col.name] = profileColumn(col);
      const before = prev?.profiles[col.name];
      if (before) countsOnPrevious[col.name] = countOnProfile(before, col);
    }
    const registered = prev
      ? await this.ds.getRepository(FeatureEntity).find({
          where: { businessLine: r.businessLine, createdAt: MoreThan(new Date(prev.generatedAt)) },
          order: { createdAt: 'ASC' },
        })
      : [];
    const iv = Object.fromEntries(res.perFeature.map((f) => [f.feature, f.iv]));
    const changes = diffReports(prev, { removable: res.removable, iv, countsOnPrevious }, registered, thresholds);
    const psiOf = new Map(changes.psi.map((x) => [x.feature, x.psi]));
    const features: ReportFeature[] = res.perFeature.map((f) => ({
      feature: f.feature,
      removable: f.removable,
      combinedRank: f.combinedRank ?? null,
      iv: f.iv,
      shuffleDrop: f.shuffleDrop,
      shuffleCi: f.shuffleCi,
      psi: psiOf.get(f.feature) ?? null,
    }));

    // what pruning would save: the cost ledger's figures in force (declared over measured)
    const ledger = await this.ledger.ledger(this.scopeOf(r), { model: model.id });
    const names = new Set(res.perFeature.map((f) => f.feature));
    const entries = ledger.features.filter((f) => names.has(f.name));
    const resources: ResourceSaving[] = (['storage', 'communication', 'compute'] as const).map((resource) => {
      const total = entries.reduce((s, f) => s + (f[resource].value ?? 0), 0);
      const saved = entries.filter((f) => res.removable.includes(f.name)).reduce((s, f) => s + (f[resource].value ?? 0), 0);
      return { resource, unit: entries[0]?.[resource].unit ?? '', saved, total, share: total > 0 ? saved / total : null };
    });
    const withCost = new Set(entries.filter((f) => !f.noCost).map((f) => f.name));

    return {
      version: 1,
      generatedAt: new Date().toISOString(),
      fireAt: r.fireAt.toISOString(),
      trigger: r.trigger,
      model: { id: model.id, name: model.name, version: model.version, businessLine: model.businessLine, owner: model.owner },
      sampleSet: {
        id: ss.id,
        name: ss.name,
        dataVersion: ss.dataVersion,
        rows: ss.rowCount,
        createdAt: ss.createdAt.toISOString(),
        latest: ss.id !== model.sampleSetId,
      },
      experimentId: e.id,
      maxDrop: res.maxDrop,
      full: { auc: res.full?.auc ?? null, logloss: res.full?.logloss ?? null },
      estimatedDrop: res.estimatedDrop
        ? { mean: res.estimatedDrop.mean, ciLow: res.estimatedDrop.ciLow, ciHigh: res.estimatedDrop.ciHigh }
        : null,
      retrainCheck: res.retrainCheck ?? null,
      confirmed: res.confirmed ?? null,
      features,
      removable: res.removable,
      curve: res.curve ?? [],
      savings: {
        resources,
        withoutCosts: res.removable.filter((f) => !withCost.has(f)),
        candidatesPerRequest: ledger.candidatesPerRequest,
      },
      changes,
      thresholds,
      profiles,
    };
  }
}
