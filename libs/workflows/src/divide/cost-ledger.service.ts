import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import { InvalidInputError, NotFoundError, canSeeLine, requireWrite, type RequestScope } from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { architectureSchema, type DataDir, type OpenedSamples } from '@abacus/catalog';
import {
  BusinessLineEntity,
  FeatureEntity,
  FeatureTableEntity,
  ModelEntity,
  SampleSetEntity,
  type ColumnSchema,
  type CostMeasurement,
  type FeatureCostsRecord,
  type FeatureKind,
} from '@abacus/data';
import { JobTimeoutError, QueueName, type CostMeasureJob, type QueueService } from '@abacus/queue';
import { resolveBackend, type BackendChoice } from '@abacus/runtime';
import { QueueUnavailableError } from '../experiments/experiment.service';
import { runComputeMeasurement, type ComputeRun, type MeasuredWhere } from './cost-compute';
import type { ComputeInput } from './cost-meter';
import { measureStorage, type ColumnToMeasure, type StorageMeasurement } from './storage-meter';
import { groupBy, measureExpressions } from './expression-storage';
import { DEFAULT_CANDIDATES_PER_REQUEST, entityLevel, ledgerEntry, measuredCommunication, type LedgerEntry } from './cost-rules';
import { MAX_MEASURED_FEATURES, type CostLedgerQuery, type MeasureCosts } from './cost-ledger.schemas';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CostLedger {
  businessLine: string | null;
  model: { id: string; name: string; version: number; businessLine: string } | null;
  candidatesPerRequest: number;
  features: LedgerEntry[];
  /** model features that are not in the registry (no ledger row) */
  unregistered: string[];
}

export interface CostMeasurementReport extends CostLedger {
  measurement: {
    /** the backend the forward was timed on (this process's when compute was not measured) */
    backend: string;
    /** where the forward was timed; null when compute was not measured */
    where: MeasuredWhere | null;
    rows: number;
    repeats: number;
    measuredAt: string;
    elapsedMs: number;
    measured: string[];
    /** features whose storage could not be measured, and why */
    skipped: { name: string; reason: string }[];
  };
}

export interface CostLedgerOptions {
  /** the backend serving runs on (ABACUS_RUNTIME_BACKEND) */
  backend: BackendChoice;
  /** CPU threads for the timing (0 = all) */
  threads: number;
  /** where this process reads a sample set registered by reference (SampleSetData.open: through the host's cache) */
  openSamples?: (ss: SampleSetEntity) => Promise<OpenedSamples>;
  /** the api's: hands the timing to a worker (ABACUS_COST_MEASURE_ON); without it every measurement runs here */
  workers?: {
    queue: Pick<QueueService, 'workersOn' | 'runCostMeasure'>;
    on: 'auto' | 'api' | 'worker' | 'gpu';
    timeoutMs: number;
  };
}

type MeasureOn = 'auto' | 'api' | 'worker' | 'gpu';

/** The Parquet files under a folder of a referenced set's objects, in a stable order. */
function parquetFiles(dir: string): string[] {
  if (!fs.statSync(dir).isDirectory()) return [dir];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.toLowerCase().endsWith('.parquet')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/**
 * The cost ledger of the registry's features: per feature and resource the figure in force (declared
 * overrides measured), and the measurement that writes the measured figures.
 */
export class CostLedgerService {
  constructor(
    private readonly ds: DataSource,
    private readonly dataDir: DataDir,
    private readonly opts: CostLedgerOptions,
  ) {}

  /** A model by id, name (latest version) or name@version, among the lines the caller may read. */
  async resolveModel(ref: string, businessLine: string | undefined, scope: RequestScope): Promise<ModelEntity> {
    const repo = this.ds.getRepository(ModelEntity);
    if (UUID.test(ref)) {
      const m = await repo.findOneBy({ id: ref });
      if (!m || !canSeeLine(scope, m.businessLine) || (businessLine && m.businessLine !== businessLine))
        throw new NotFoundError('model', ref);
      return m;
    }
    const at = ref.lastIndexOf('@');
    const name = at > 0 ? ref.slice(0, at) : ref;
    const version = at > 0 ? Number(ref.slice(at + 1)) : undefined;
    if (version !== undefined && !Number.isInteger(version)) throw new InvalidInputError('model', `bad version in "${ref}"`);
    const qb = repo.createQueryBuilder('m').where('m.name = :name', { name }).orderBy('m.version', 'DESC');
    if (version !== undefined) qb.andWhere('m.version = :v', { v: version });
    if (scope.lines) qb.andWhere('m.business_line = ANY(:lines)', { lines: scope.lines });
    if (businessLine) qb.andWhere('m.business_line = :bl', { bl: businessLine });
    const found = await qb.getMany();
    const lines = [...new Set(found.map((m) => m.businessLine))];
    if (lines.length > 1)
      throw new InvalidInputError(
        'model',
        `model "${name}" exists in ${lines.join(', ')}: name the businessLine or the model's id`,
      );
    if (!found.length) throw new NotFoundError('model', ref);
    return found[0]!;
  }

  private candidates(model: ModelEntity | null, q: { candidatesPerRequest?: number }): number {
    const fromModel = model?.architecture?.candidatesPerRequest;
    return q.candidatesPerRequest ?? (typeof fromModel === 'number' ? fromModel : DEFAULT_CANDIDATES_PER_REQUEST);
  }

  private async selection(
    scope: RequestScope,
    q: { businessLine?: string; model?: string; features?: string[] },
  ): Promise<{ model: ModelEntity | null; features: FeatureEntity[]; unregistered: string[] }> {
    const model = q.model ? await this.resolveModel(q.model, q.businessLine, scope) : null;
    const line = model?.businessLine ?? q.businessLine;
    const names = q.features ?? model?.features;
    const qb = this.ds.getRepository(FeatureEntity).createQueryBuilder('f').orderBy('f.business_line').addOrderBy('f.name');
    if (scope.lines) qb.andWhere('f.business_line = ANY(:lines)', { lines: scope.lines });
    if (line) qb.andWhere('f.business_line = :bl', { bl: line });
    if (names) {
      if (!names.length) return { model, features: [], unregistered: [] };
      qb.andWhere('f.name IN (:...names)', { names });
    }
    const features = await qb.getMany();
    const have = new Set(features.map((f) => f.name));
    return { model, features, unregistered: (names ?? []).filter((n) => !have.has(n)) };
  }

  async ledger(scope: RequestScope, q: CostLedgerQuery): Promise<CostLedger> {
    const { model, features, unregistered } = await this.selection(scope, q);
    const cpr = this.candidates(model, q);
    return {
      businessLine: model?.businessLine ?? q.businessLine ?? null,
      model: model ? { id: model.id, name: model.name, version: model.version, businessLine: model.businessLine } : null,
      candidatesPerRequest: cpr,
      features: features.map((f) => ledgerEntry(f, cpr)),
      unregistered,
    };
  }

  /**
   * Measures storage (and communication from it) and, unless `compute: false`, each feature's compute
   * share, then stores the measurements and returns the ledger of the measured features. Bounded: at
   * most 200 features, one DuckDB scan per feature, and 33 × repeats pairs of timings of `rows`
   * synthetic rows (each about 2 × 25 ms on the CPU, 2 × 100 ms on a GPU). The timing runs where
   * `on` says (`route`); the timings of one process run one at a time.
   */
  async measure(scope: RequestScope, body: MeasureCosts): Promise<CostMeasurementReport> {
    const t0 = performance.now();
    const { model, features, unregistered } = await this.selection(scope, body);
    const line = model?.businessLine ?? body.businessLine!;
    requireWrite(scope, line, 'measure feature costs');
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: line }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${line}"`);
    }
    if (body.features) {
      const missing = body.features.filter((n) => !features.some((f) => f.name === n));
      if (missing.length) throw new InvalidInputError('features', `not registered in ${line}: ${missing.join(', ')}`);
    }
    if (features.length > MAX_MEASURED_FEATURES) {
      throw new InvalidInputError(
        'features',
        `${line} has ${features.length} features, more than ${MAX_MEASURED_FEATURES} per measurement: name the features or a model`,
      );
    }
    const cpr = this.candidates(model, body);
    const measuredAt = new Date().toISOString();
    const skipped: { name: string; reason: string }[] = [];
    const storage = new Map<string, StorageMeasurement>();

    // storage: feature-table columns, grouped by table; column features from a sample set
    const byTable = new Map<string, FeatureEntity[]>();
    const columnFeatures: FeatureEntity[] = [];
    const expressionFeatures: FeatureEntity[] = [];
    for (const f of features) {
      if (f.featureTableId) byTable.set(f.featureTableId, [...(byTable.get(f.featureTableId) ?? []), f]);
      else if (f.expression) expressionFeatures.push(f);
      else columnFeatures.push(f);
    }
    // expression features: their values computed over the set they were registered over, then measured as stored
    for (const [setId, fs] of groupBy(expressionFeatures, (f) => f.expression!.sampleSetId)) {
      const ss = await this.ds.getRepository(SampleSetEntity).findOneBy({ id: setId });
      if (!ss) {
        fs.forEach((f) => skipped.push({ name: f.name, reason: 'the sample set its expression reads is gone' }));
        continue;
      }
      if (ss.location && !this.opts.openSamples) {
        fs.forEach((f) => skipped.push({ name: f.name, reason: `sample set ${ss.name} is registered by reference, and this process cannot read stores` }));
        continue;
      }
      const opened = ss.location ? await this.opts.openSamples!(ss) : null;
      try {
        const files = opened ? parquetFiles(opened.path) : await Promise.all(ss.files.map((p) => this.dataDir.pull(p)));
        const got = await measureExpressions(this.ds, ss, files, fs, skipped, (rel) => this.dataDir.pull(rel));
        for (const f of fs) {
          const m = got.get(f.name);
          if (m) storage.set(f.id, m);
        }
      } finally {
        opened?.release();
      }
    }
    for (const [tableId, fs] of byTable) {
      const table = await this.ds.getRepository(FeatureTableEntity).findOneBy({ id: tableId });
      if (!table) {
        fs.forEach((f) => skipped.push({ name: f.name, reason: 'its feature table is gone' }));
        continue;
      }
      const cols = this.columns(fs, table.schema, skipped);
      const got = await measureStorage(await Promise.all(table.files.map((p) => this.dataDir.pull(p))), table.name, cols);
      for (const f of fs) {
        const m = got.get(f.sourceColumn ?? f.name);
        if (m) storage.set(f.id, m);
      }
    }
    // a model's sample set for its features; else the line's newest sample set that has the column
    const sampleSets = await this.ds
      .getRepository(SampleSetEntity)
      .createQueryBuilder('s')
      .where(model ? 's.id = :id' : 's.business_line = :bl', model ? { id: model.sampleSetId } : { bl: line })
      .orderBy('s.created_at', 'DESC')
      .getMany();
    const bySet = new Map<string, FeatureEntity[]>();
    for (const f of columnFeatures) {
      const col = f.sourceColumn ?? f.name;
      const ss = sampleSets.find((s) => s.schema.some((c) => c.name === col));
      if (!ss) skipped.push({ name: f.name, reason: `no feature table, and no sample set of ${line} has a column "${col}"` });
      else bySet.set(ss.id, [...(bySet.get(ss.id) ?? []), f]);
    }
    for (const [setId, fs] of bySet) {
      const ss = sampleSets.find((s) => s.id === setId)!;
      let got: Map<string, StorageMeasurement>;
      if (ss.location) {
        // registered by reference: its objects as this host's cache holds them
        if (!this.opts.openSamples) {
          for (const f of fs)
            skipped.push({
              name: f.name,
              reason: `sample set ${ss.name} is registered by reference, and this process cannot read stores`,
            });
          continue;
        }
        const opened = await this.opts.openSamples(ss);
        try {
          got = await measureStorage(
            parquetFiles(opened.path),
            `${ss.name} (sample set by reference)`,
            this.columns(fs, ss.schema, skipped),
          );
        } finally {
          opened.release();
        }
      } else {
        got = await measureStorage(
          await Promise.all(ss.files.map((p) => this.dataDir.pull(p))),
          `${ss.name} (sample set)`,
          this.columns(fs, ss.schema, skipped),
        );
      }
      for (const f of fs) {
        const m = got.get(f.sourceColumn ?? f.name);
        if (m) storage.set(f.id, m);
      }
    }

    // compute: the model's inputs (or the measured features) with and without each one, timed where `on` says
    let run: ComputeRun | null = null;
    if (body.compute) {
      const inputs = await this.computeInputs(model, features, storage);
      if (inputs.length) {
        const arch = architectureSchema.safeParse(model?.architecture ?? {});
        run = await this.timeCompute(
          {
            inputs,
            ...(body.rows !== undefined ? { rows: body.rows } : {}),
            repeats: body.repeats,
            ...(arch.success ? { architecture: arch.data } : {}),
          },
          body.on ?? this.opts.workers?.on ?? 'api',
        );
      }
    }
    const compute = new Map(Object.entries(run?.measurements ?? {}));
    const backend = run?.where.backend ?? resolveBackend(this.opts.backend);
    const rows = run?.rows ?? 0;

    const measured: string[] = [];
    await this.ds.transaction(async (tx) => {
      const repo = tx.getRepository(FeatureEntity);
      for (const f of features) {
        const s = storage.get(f.id);
        const c = compute.get(f.name);
        if (!s && !c) continue;
        const costs: FeatureCostsRecord = { ...(f.costs ?? {}) };
        const prev = costs.measured ?? {};
        const storageM: CostMeasurement | undefined = s ? { value: s.bytes, measuredAt, how: s.how } : prev.storage;
        costs.measured = {
          ...prev,
          ...(storageM
            ? { storage: storageM, communication: measuredCommunication(storageM, entityLevel(f.entityKey, costs.entity), cpr) }
            : {}),
          ...(c
            ? {
                compute: {
                  value: c.share,
                  measuredAt,
                  how: c.how,
                  spread: c.spread,
                  median: c.median,
                  interval: [c.ciLow, c.ciHigh] as [number, number],
                  resolution: c.resolution,
                  belowResolution: c.belowResolution,
                },
              }
            : {}),
        };
        await repo.update({ id: f.id }, { costs });
        f.costs = costs;
        measured.push(f.name);
      }
      await writeAudit(tx, scope, {
        action: 'feature.costs_measured',
        businessLine: line,
        targetType: model ? 'model' : 'business_line',
        targetId: model?.id ?? line,
        details: {
          features: measured,
          skipped: skipped.map((s) => s.name),
          backend,
          rows,
          repeats: body.repeats,
          where: run ? { process: run.where.process, host: run.where.host, gpu: run.where.gpu } : null,
        },
      });
    });
    return {
      businessLine: line,
      model: model ? { id: model.id, name: model.name, version: model.version, businessLine: model.businessLine } : null,
      candidatesPerRequest: cpr,
      features: features.map((f) => ledgerEntry(f, cpr)),
      unregistered,
      measurement: {
        backend,
        where: run?.where ?? null,
        rows,
        repeats: body.repeats,
        measuredAt,
        elapsedMs: Math.round(performance.now() - t0),
        measured,
        skipped,
      },
    };
  }

  /**
   * Where a measurement's forward is timed: `worker-gpu` (a worker with a GPU), `worker` (any
   * worker) or `api` (this process). auto takes a GPU worker when one listens, else this process;
   * worker takes a GPU worker first, else any; gpu insists on a GPU worker. A 503 names what is missing.
   */
  async route(on: MeasureOn): Promise<'api' | 'worker' | 'worker-gpu'> {
    if (on === 'api') return 'api';
    const w = this.opts.workers;
    if (!w) {
      if (on === 'auto') return 'api';
      throw new InvalidInputError('on', `this process cannot hand a measurement to a worker (on: "${on}"): use "api"`);
    }
    const gpu = await w.queue.workersOn(QueueName.CostsGpu);
    if (gpu === null) {
      // the server does not list its clients: only an explicit choice goes to a queue
      return on === 'gpu' ? 'worker-gpu' : on === 'worker' ? 'worker' : 'api';
    }
    if (gpu > 0) return 'worker-gpu';
    if (on === 'auto') return 'api';
    if (on === 'gpu')
      throw new QueueUnavailableError(
        'no worker with a GPU listens for cost measurements: start one on a GPU host, or measure with on: "worker" or "api"',
      );
    if (((await w.queue.workersOn(QueueName.Costs)) ?? 0) > 0) return 'worker';
    throw new QueueUnavailableError('no worker listens for cost measurements: start a worker, or measure with on: "api"');
  }

  private async timeCompute(job: Omit<CostMeasureJob, 'requestId'>, on: MeasureOn): Promise<ComputeRun> {
    const where = await this.route(on);
    if (where === 'api')
      return runComputeMeasurement(job, { process: 'api', backend: this.opts.backend, threads: this.opts.threads });
    const w = this.opts.workers!;
    try {
      return (await w.queue.runCostMeasure(
        where === 'worker-gpu',
        { requestId: randomUUID(), ...job },
        w.timeoutMs,
      )) as ComputeRun;
    } catch (err) {
      if (err instanceof JobTimeoutError) throw new QueueUnavailableError(err.message);
      throw new QueueUnavailableError(`the worker's measurement failed: ${(err as Error).message}`);
    }
  }

  private columns(fs: FeatureEntity[], schema: ColumnSchema[], skipped: { name: string; reason: string }[]): ColumnToMeasure[] {
    const cols: ColumnToMeasure[] = [];
    for (const f of fs) {
      const col = f.sourceColumn ?? f.name;
      const c = schema.find((x) => x.name === col);
      if (!c || c.kind === 'unsupported')
        skipped.push({ name: f.name, reason: `column "${col}" is missing or of an unsupported type` });
      else if (!cols.some((x) => x.column === col)) cols.push({ column: col, kind: c.kind, sourceType: c.sourceType });
    }
    return cols;
  }

  /**
   * Inputs of the timed model: the model's features (kinds from its sample set), or the measured
   * features; slot vocabularies from the measured distinct counts (a hash transform's buckets when
   * set), multi-id lengths from the measured mean list length.
   */
  private async computeInputs(
    model: ModelEntity | null,
    features: FeatureEntity[],
    storage: Map<string, StorageMeasurement>,
  ): Promise<ComputeInput[]> {
    const byName = new Map(features.map((f) => [f.name, f]));
    const input = (name: string, kind: FeatureKind, f?: FeatureEntity): ComputeInput => {
      const st = f ? storage.get(f.id)?.stats : undefined;
      const vocab =
        f?.transform?.type === 'hash' && f.transform.hashBuckets ? f.transform.hashBuckets : (st?.distinct ?? 1000) + 1;
      return { name, kind, vocab, listLength: st?.meanListLength ?? 1 };
    };
    if (!model) return features.map((f) => input(f.name, f.kind, f));
    const ss = await this.ds.getRepository(SampleSetEntity).findOneBy({ id: model.sampleSetId });
    const out: ComputeInput[] = [];
    for (const name of model.features) {
      const f = byName.get(name);
      const kind = f?.kind ?? ss?.schema.find((c) => c.name === name)?.kind;
      if (kind && kind !== 'unsupported') out.push(input(name, kind, f));
    }
    return out;
  }
}
