import type { DataSource, EntityManager } from 'typeorm';
import { webhookUrlProblem, type HostAllowList } from '@abacus/configs';
import { InvalidInputError, NotFoundError, PeriodicPass, canSeeLine, requireWrite, type RequestScope } from '@abacus/core';
import { writeAudit } from '@abacus/access';
import {
  BusinessLineEntity,
  ModelEntity,
  ServingModelEntity,
  ServingSwitchEntity,
  ServingWebhookDeliveryEntity,
} from '@abacus/data';
import type { QueueService } from '@abacus/queue';
import type { ActiveTier, ActiveTierCache } from './active-cache';
import { activeWindow, decideTier, type Decision, type Signals } from './policy-engine';
import {
  SIGNAL_NAMES,
  servingPolicySchema,
  type PinInput,
  type RegisterServing,
  type ServingPolicy,
  type ServingSignalInput,
} from './serving.schemas';
import { tierAlias } from '@abacus/core';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const SWITCH_EVENT = 'serving.switch';

export const artifactLinks = (modelId: string) => ({
  safetensors: `/api/v1/models/${modelId}/export?format=safetensors`,
  onnx: `/api/v1/models/${modelId}/export?format=onnx`,
});

interface SwitchSpec {
  to: number;
  reason: string;
  signals: Signals | null;
  manual: boolean;
  actor: string;
  at: Date;
}

/**
 * Served models in tiers: registration, signals through the policy engine, pins, the switch log.
 * Each switch is written with its audit row and its webhook delivery in one transaction; the active
 * state then goes to the Redis-backed cache and the delivery to the webhook queue.
 */
export class ServingService {
  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueWebhook'>,
    private readonly cache: ActiveTierCache,
    private readonly allow: HostAllowList,
    /** how often the schedules are evaluated (ms; 0 = never: switches happen on signals only) */
    private readonly scheduleIntervalMs = 0,
  ) {}

  private readonly schedules = new PeriodicPass('schedule pass', () => this.scheduleOnce(), ServingService.name);

  /** Starts the schedule pass with the API (Nest calls it at startup). */
  onModuleInit(): void {
    this.schedules.start(this.scheduleIntervalMs);
  }

  /** Stops the schedule pass and closes the cache's Redis connections with the API (Nest calls it on app.close()). */
  async onModuleDestroy(): Promise<void> {
    await this.schedules.stop();
    await this.cache.close();
  }

  /**
   * One pass over the served models with a schedule: the policy decided with no signals at `now`, so
   * only the schedule can switch (a window opening or closing). Each model in its own transaction with
   * its row locked: several API processes running the pass switch it once (the decision reads the
   * state the first one wrote). Returns the switches made.
   */
  async scheduleOnce(now = new Date()): Promise<{ servingId: string; from: number; to: number; reason: string }[]> {
    const ids: { id: string }[] = await this.ds.query(`SELECT id FROM serving_models WHERE policy ? 'schedule' ORDER BY id`);
    const out: { servingId: string; from: number; to: number; reason: string }[] = [];
    for (const { id } of ids) {
      const r = await this.ds.transaction(async (m) => {
        const s = await m
          .getRepository(ServingModelEntity)
          .createQueryBuilder('s')
          .where('s.id = :id', { id })
          .setLock('pessimistic_write')
          .getOne();
        if (!s) return null;
        const policy = servingPolicySchema.parse(s.policy);
        const decision = decideTier(policy, s.tiers, this.stateOf(s), {}, now.getTime());
        if (decision.action !== 'switch') return null;
        const from = s.activeTier;
        const deliveryId = await this.applySwitch(m, s, {
          to: decision.tier,
          reason: decision.reason,
          signals: null,
          manual: false,
          actor: 'schedule',
          at: now,
        });
        await m.getRepository(ServingModelEntity).save(s);
        return { s, deliveryId, from, reason: decision.reason };
      });
      if (!r) continue;
      await this.publish(r.s, r.deliveryId);
      out.push({ servingId: id, from: r.from, to: r.s.activeTier, reason: r.reason });
    }
    return out;
  }

  private stateOf(s: ServingModelEntity) {
    return {
      tier: s.activeTier,
      enteredAt: s.tierSince.getTime(),
      lastSwitchAt: s.lastSwitchAt?.getTime() ?? null,
      pinnedTier: s.pinnedTier,
    };
  }

  /** The latest version of `name` in `line` with tier `tier`, or a 404 naming the tier. */
  private async tierModel(m: EntityManager, line: string, name: string, tier: number): Promise<ModelEntity> {
    const model = await m
      .getRepository(ModelEntity)
      .createQueryBuilder('m')
      .where('m.business_line = :line AND m.name = :name AND m.tier = :tier', { line, name, tier })
      .orderBy('m.version', 'DESC')
      .getOne();
    if (!model) throw new NotFoundError('tier', `${tierAlias(tier)} of model "${name}" in business line "${line}"`);
    return model;
  }

  async register(input: RegisterServing, scope: RequestScope) {
    requireWrite(scope, input.businessLine, 'register served models');
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    const problem = webhookUrlProblem(input.webhookUrl, this.allow);
    if (problem) throw new InvalidInputError('webhookUrl', problem);
    let name = input.model;
    if (UUID.test(input.model)) {
      const byId = await this.ds.getRepository(ModelEntity).findOneBy({ id: input.model });
      if (!byId || byId.businessLine !== input.businessLine) throw new NotFoundError('model', input.model);
      name = byId.name;
    } else if (!(await this.ds.getRepository(ModelEntity).existsBy({ businessLine: input.businessLine, name }))) {
      throw new NotFoundError('model', `"${name}" in business line "${input.businessLine}"`);
    }
    const tiers = [...input.tiers].sort((a, b) => a - b);
    // served from the full model (or the best cheaper tier); the large tier only in its windows
    const start = tiers.find((t) => t >= 0) ?? tiers[0];
    const saved = await this.ds.transaction(async (m) => {
      const models = [];
      for (const t of tiers) models.push(await this.tierModel(m, input.businessLine, name, t));
      const now = new Date();
      const repo = m.getRepository(ServingModelEntity);
      const row = await repo.save(
        repo.create({
          businessLine: input.businessLine,
          modelName: name,
          tiers,
          webhookUrl: input.webhookUrl,
          webhookSecret: input.secret,
          policy: input.policy as unknown as Record<string, unknown>,
          owner: scope.user,
          activeTier: start,
          activeModelId: models[tiers.indexOf(start)].id,
          tierSince: now,
          lastSwitchAt: null,
          pinnedTier: null,
        }),
      );
      await writeAudit(m, scope, {
        action: 'serving.registered',
        businessLine: row.businessLine,
        targetType: 'serving',
        targetId: row.id,
        details: { model: name, tiers, webhookUrl: input.webhookUrl },
      });
      return row;
    });
    await this.cache.put(await this.activeOf(saved));
    return this.view(saved);
  }

  private view(s: ServingModelEntity) {
    const { webhookSecret: _secret, ...rest } = s;
    void _secret;
    const schedule = servingPolicySchema.safeParse(s.policy);
    // the window open now, for a reader of the served model (the decision is the policy engine's)
    return schedule.success && schedule.data.schedule
      ? { ...rest, scheduleNow: activeWindow(schedule.data.schedule, Date.now()) }
      : rest;
  }

  async list(scope: RequestScope, q: { businessLine?: string }) {
    const qb = this.ds.getRepository(ServingModelEntity).createQueryBuilder('s').orderBy('s.created_at', 'DESC');
    if (scope.lines) qb.andWhere('s.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('s.business_line = :bl', { bl: q.businessLine });
    return (await qb.getMany()).map((s) => this.view(s));
  }

  private async find(m: EntityManager, id: string, scope: RequestScope, lock = false): Promise<ServingModelEntity> {
    const qb = m.getRepository(ServingModelEntity).createQueryBuilder('s').where('s.id = :id', { id });
    if (lock) qb.setLock('pessimistic_write');
    const s = await qb.getOne();
    if (!s || !canSeeLine(scope, s.businessLine)) throw new NotFoundError('served model', id);
    return s;
  }

  async get(id: string, scope: RequestScope) {
    return this.view(await this.find(this.ds.manager, id, scope));
  }

  /** The hot path: answered from the cache (memory, then Redis), never from Postgres while the cache holds it. */
  async active(id: string, scope: RequestScope) {
    const a = await this.cache.get(id);
    if (!a || !canSeeLine(scope, a.businessLine)) throw new NotFoundError('served model', id);
    const { servingId: _s, businessLine: _b, rev: _r, ...rest } = a;
    void _s;
    void _b;
    void _r;
    return rest;
  }

  /** The active state as stored in Postgres (cache misses after a Redis flush). */
  async loadActive(id: string): Promise<ActiveTier | null> {
    const s = await this.ds.getRepository(ServingModelEntity).findOneBy({ id });
    return s ? this.activeOf(s) : null;
  }

  private async activeOf(s: ServingModelEntity, m: EntityManager = this.ds.manager): Promise<ActiveTier> {
    const model = await m.getRepository(ModelEntity).findOneByOrFail({ id: s.activeModelId });
    return {
      servingId: s.id,
      businessLine: s.businessLine,
      tier: s.activeTier,
      modelId: model.id,
      version: model.version,
      features: model.features,
      artifacts: artifactLinks(model.id),
      since: s.tierSince.toISOString(),
      rev: s.stateRev,
      pinned:
        s.pinnedTier === null
          ? null
          : { tier: s.pinnedTier, reason: s.pinReason, by: s.pinnedBy, at: s.pinnedAt?.toISOString() ?? null },
    };
  }

  /** Writes a switch (row, served model's state, webhook delivery) in `m`'s transaction; returns the delivery id. */
  private async applySwitch(m: EntityManager, s: ServingModelEntity, spec: SwitchSpec): Promise<string> {
    const model = await this.tierModel(m, s.businessLine, s.modelName, spec.to);
    const sw = await m.getRepository(ServingSwitchEntity).save(
      m.getRepository(ServingSwitchEntity).create({
        servingId: s.id,
        at: spec.at,
        fromTier: s.activeTier,
        toTier: spec.to,
        modelId: model.id,
        reason: spec.reason,
        signals: spec.signals as Record<string, number> | null,
        manual: spec.manual,
        actor: spec.actor,
      }),
    );
    const from = s.activeTier;
    s.activeTier = spec.to;
    s.activeModelId = model.id;
    s.tierSince = spec.at;
    s.lastSwitchAt = spec.at;
    s.stateRev += 1;
    const payload = {
      switchId: sw.id,
      servingId: s.id,
      businessLine: s.businessLine,
      model: s.modelName,
      from,
      to: spec.to,
      modelId: model.id,
      version: model.version,
      features: model.features,
      artifacts: artifactLinks(model.id),
      at: spec.at.toISOString(),
      reason: spec.reason,
      manual: spec.manual,
      actor: spec.actor,
      signals: spec.signals,
    };
    const d = await m.getRepository(ServingWebhookDeliveryEntity).save(
      m.getRepository(ServingWebhookDeliveryEntity).create({
        servingId: s.id,
        switchId: sw.id,
        event: SWITCH_EVENT,
        url: s.webhookUrl,
        payload,
      }),
    );
    return d.id;
  }

  /** After the transaction committed: the new state to every API process, the webhook to the queue. */
  private async publish(s: ServingModelEntity, deliveryId: string | null): Promise<void> {
    await this.cache.put(await this.activeOf(s));
    // a delivery left pending when the queue is down is visible in the log (status pending, attempts 0)
    if (deliveryId) await this.queue.enqueueWebhook(deliveryId);
  }

  async signal(id: string, input: ServingSignalInput, scope: RequestScope) {
    const at = input.at ? new Date(input.at) : new Date();
    const signals: Signals = {};
    for (const k of SIGNAL_NAMES) if (input[k] !== undefined) signals[k] = input[k];
    const { s, decision, deliveryId } = await this.ds.transaction(async (m) => {
      const s = await this.find(m, id, scope, true);
      requireWrite(scope, s.businessLine, 'report signals');
      const policy: ServingPolicy = servingPolicySchema.parse(s.policy);
      const decision: Decision = decideTier(policy, s.tiers, this.stateOf(s), signals, at.getTime());
      s.lastSignals = signals as Record<string, number>;
      s.lastSignalAt = at;
      let deliveryId: string | null = null;
      if (decision.action === 'switch') {
        deliveryId = await this.applySwitch(m, s, {
          to: decision.tier,
          reason: decision.reason,
          signals,
          manual: false,
          actor: decision.cause === 'schedule' ? 'schedule' : 'policy',
          at,
        });
      }
      await m.getRepository(ServingModelEntity).save(s);
      return { s, decision, deliveryId };
    });
    if (deliveryId) await this.publish(s, deliveryId);
    return { decision, tier: s.activeTier, modelId: s.activeModelId, at: at.toISOString() };
  }

  async pin(id: string, input: PinInput, scope: RequestScope) {
    const { s, deliveryId } = await this.ds.transaction(async (m) => {
      const s = await this.find(m, id, scope, true);
      requireWrite(scope, s.businessLine, 'pin served models');
      // a tier that does not exist is a 404 (naming it); one that exists but is not registered here, a 400
      await this.tierModel(m, s.businessLine, s.modelName, input.tier);
      if (!s.tiers.includes(input.tier)) {
        throw new InvalidInputError('tier', `tier ${input.tier} is not one of this served model's tiers (${s.tiers.join(', ')})`);
      }
      const at = new Date();
      s.pinnedTier = input.tier;
      s.pinReason = input.reason;
      s.pinnedBy = scope.user;
      s.pinnedAt = at;
      s.stateRev += 1;
      const deliveryId =
        s.activeTier === input.tier
          ? null
          : await this.applySwitch(m, s, {
              to: input.tier,
              reason: `pinned: ${input.reason}`,
              signals: null,
              manual: true,
              actor: scope.user,
              at,
            });
      await m.getRepository(ServingModelEntity).save(s);
      await writeAudit(m, scope, {
        action: 'serving.pinned',
        businessLine: s.businessLine,
        targetType: 'serving',
        targetId: s.id,
        details: { tier: input.tier, reason: input.reason },
      });
      return { s, deliveryId };
    });
    await this.publish(s, deliveryId);
    return this.view(s);
  }

  async unpin(id: string, scope: RequestScope) {
    const s = await this.ds.transaction(async (m) => {
      const s = await this.find(m, id, scope, true);
      requireWrite(scope, s.businessLine, 'unpin served models');
      const was = s.pinnedTier;
      s.pinnedTier = null;
      s.pinReason = null;
      s.pinnedBy = null;
      s.pinnedAt = null;
      s.stateRev += 1;
      await m.getRepository(ServingModelEntity).save(s);
      await writeAudit(m, scope, {
        action: 'serving.unpinned',
        businessLine: s.businessLine,
        targetType: 'serving',
        targetId: s.id,
        details: { was },
      });
      return s;
    });
    await this.publish(s, null);
    return this.view(s);
  }

  /** The switch log, oldest first, each switch with its webhook deliveries. */
  async log(id: string, scope: RequestScope) {
    await this.find(this.ds.manager, id, scope);
    const switches = await this.ds
      .getRepository(ServingSwitchEntity)
      .find({ where: { servingId: id }, order: { at: 'ASC', createdAt: 'ASC' } });
    const deliveries = await this.ds.getRepository(ServingWebhookDeliveryEntity).find({ where: { servingId: id } });
    return switches.map((sw) => ({
      ...sw,
      deliveries: deliveries
        .filter((d) => d.switchId === sw.id)
        .map(({ payload: _p, ...d }) => {
          void _p;
          return d;
        }),
    }));
  }
}
