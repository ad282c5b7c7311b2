import { DuckDBInstance } from '@duckdb/node-api';
import { FeatureResultEntity, SampleSetEntity, TrialEntity } from '@abacus/data';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { materialize } from '@abacus/runtime';
import { checkExpr, columnClassOfDuckdb, quoteIdent, tableSource, type EncodedSplit, type ExprTableRef, type FeatureExpr } from '@abacus/samples';
import { columnClasses } from '@abacus/catalog';
import { recipeInit } from '../embeddings/recipe-init';
import type { CompareTrialParams } from '../add/add-experiment.schema';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { sampleRows } from '../model/dataset-subset';
import { validationMask } from '../model/validation-split';
import { ABLATE_MAX_ROWS, trainTrialParamsSchema, type AblateTrialParams, type TrainTrialParams } from '../trials/train-trial.schema';
import { runTrial, type TrialScope } from '../trials/trial-runner';
import { trialBySeq, withDevice, type WorkflowContext } from '../trials/workflow-context';
import { enumerateCandidates, type Candidate, type ColumnProfile } from './candidates';
import { discoverTrialParamsSchema } from './discover-experiment.schema';
import { binnedEncoding, binnedScore, binsOf, dropNearCopies, selectForward, type Binned, type ScreenRows, type ScreenValues } from './screen';
import { WindowValues, leafName, windowFast } from './window-values';

/** candidates built together (one in-memory build, one pass of the set) */
export const DISCOVER_BATCH = 100;

export interface ScreenedCandidate {
  name: string;
  text: string;
  family: string;
  kind: string;
  columns: string[];
  gain: number;
  halves: [number, number];
  /** the better candidate it nearly copies (not sent on) */
  copyOf?: string;
  chosen?: boolean;
  /** what it added when the forward selection chose it, beyond the candidates chosen before it */
  conditionalGain?: number;
}

/**
 * discover's screen: enumerates candidate expressions over the base model's sample set, builds them a
 * batch at a time, scores each on a sample of the fitted rows against the base model's logit
 * (screen.ts), drops near-copies, and hands the best `topK` to the verified comparison: the trials
 * after it (augmented model, the two shuffles, compare) get the candidates written into their params
 * before they run (or are marked done with nothing to compare when no candidate adds anything).
 */
export class DiscoverTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.DiscoverTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress }: TrialScope, device: number | undefined) {
    const p = discoverTrialParamsSchema.parse(trial.params);
    const t0 = Date.now();
    const baseTrial = await trialBySeq(this.w.ds, experiment.id, p.baseSeq);
    const recipe = trainTrialParamsSchema.parse(baseTrial.params).recipe as TrainTrialParams['recipe'] & { features: ResolvedFeature[] };
    const ss = await this.w.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: recipe.sampleSetId });
    await progress(0.02, 'loading the base model');
    const built = await this.w.samples.get(recipe, recipe.features);
    const trained = await this.w.trainer.trainOrReuse(built, recipe.architecture, recipe.training, { device }, recipeInit(this.w.dataDir, recipe, built));
    checkpoint();

    // the screen rows: a seeded sample of the fitted rows (never the validation rows the verdicts are taken on)
    const mask = validationMask(built.trainAll, built.timeOrdered);
    const fitted: number[] = [];
    for (let i = 0; i < mask.length; i++) if (!mask[i]) fitted.push(i);
    const pick = sampleRows(fitted.length, Math.min(p.screenRows, fitted.length), p.seed + 53);
    const idx = Uint32Array.from(pick, (k) => fitted[k]).sort();
    const rowsData = await materialize(built.trainAll, idx);
    const probs = await trained.model.predict(rowsData);
    const screenRows: ScreenRows = {
      logit: Float64Array.from(probs, (q) => Math.log(Math.max(q, 1e-7) / Math.max(1 - q, 1e-7))),
      label: rowsData.labels,
      half: Uint8Array.from(idx, (_, k) => k % 2),
    };
    checkpoint();

    // the candidates: over the set's columns and the base model's feature-table features (read as of
    // each impression), what the base reads as it is left out of the plain ones
    await progress(0.06, 'profiling the columns');
    const tables = tableInputs(recipe.features, ss);
    const profiles = [
      ...(await this.w.samples.withSamplesFile(recipe, (file) => profileColumns(file, ss))),
      ...(await profileTables(tables, (rel) => this.w.dataDir.pull(rel))),
    ];
    const used = new Set(recipe.features.filter((f) => f.source.kind === 'column').map((f) => (f.source as { column?: string }).column ?? f.name));
    const all = enumerateCandidates(profiles, used, !!recipe.time, ss.rowCount, {
      windows: p.windows,
      maxCandidates: p.maxCandidates,
      families: p.families,
    });
    const classes = columnClasses(ss.schema);
    // each must pass the expression checks over this set (it always should: they are made from its columns)
    const candidates = all.filter((c) => {
      try {
        checkExpr(
          c.expr,
          {
            columns: classes,
            label: recipe.label,
            hasTime: !!recipe.time,
            resolveRef: (n) => (tables.has(n) ? { kind: tables.get(n)!.kind, table: tables.get(n)!.file } : null),
          },
          c.kind,
        );
        return true;
      } catch {
        return false;
      }
    });
    if (!candidates.length) throw new Error(`no candidate expression can be made over the columns of ${ss.name}`);

    // screen, a batch at a time; the best `pool` are kept with their encodings for the near-copy check
    const pool = Math.max(5 * p.topK, 60);
    const scored: ScreenedCandidate[] = [];
    const binned = new Map<string, Binned>();
    const best: { name: string; gain: number }[] = [];
    let buildMs = 0;
    let scoreMs = 0;
    // numbers and their pairs, and the aggregates of earlier rows but distinct counts, are computed here
    // from one build of the raw columns they read (as the builder gives them: a missing number is the
    // training mean; window-values.ts); the rest are built a batch at a time
    const arithmetic = candidates.filter((c) => c.kind === 'numeric' && ARITHMETIC.has(c.family));
    // (in order of the rows they partition by: a partition's sorted rows, window starts and prefix sums
    // are kept while its candidates are scored and dropped after, so memory holds one partition's)
    const windowed = recipe.time
      ? candidates
        .filter((c) => !arithmetic.includes(c) && windowFast(c.expr))
        .map((c, k) => ({ c, k, by: windowKeys(c).join('\u0000') }))
        .sort((a, b) => (a.by < b.by ? -1 : a.by > b.by ? 1 : a.k - b.k))
        .map((x) => x.c)
      : [];
    // the rest in batches by the rows they partition by: DuckDB sorts once per partition of a query, so
    // a batch of one key's aggregates is one sort where a mixed batch was one per key
    const built_ = candidates
      .filter((c) => !arithmetic.includes(c) && !windowed.includes(c))
      .map((c, k) => ({ c, k, by: partitionOf(c) }))
      .sort((a, b) => (a.by < b.by ? -1 : a.by > b.by ? 1 : a.k - b.k))
      .map((x) => x.c);
    const rawBatch = [...arithmetic, ...windowed];
    const arithmeticSet = new Set(arithmetic);
    const rawNumbers = [...new Set([...arithmetic.flatMap((c) => c.columns), ...windowed.flatMap(windowMeasures)])];
    const rawKeys = [...new Set(windowed.flatMap(windowKeys))];
    // (a feature-table feature, @name, is joined as the builder joins it inside an expression)
    const rawSource = (n: string): ResolvedFeature['source'] =>
      n.startsWith('@') && tables.has(n.slice(1))
        ? { kind: 'expression', expression: { ref: n.slice(1) }, tables: { [n.slice(1)]: tables.get(n.slice(1))! } }
        : { kind: 'expression', expression: { col: n } };
    const rawFeatures: ResolvedFeature[] = [
      ...rawNumbers.map((n): ResolvedFeature => ({ name: `raw:${n}`, kind: 'numeric', source: rawSource(n) })),
      ...rawKeys.map(
        (n): ResolvedFeature => ({
          name: `key:${n}`,
          kind: 'categorical',
          source: n.startsWith('@') ? rawSource(n) : { kind: 'column', column: n },
        }),
      ),
    ];
    const asFeature = (c: Candidate) => candidateFeature(c, tables);
    const batches: Candidate[][] = [];
    if (rawBatch.length) batches.push(rawBatch);
    for (let b = 0; b < built_.length; b += DISCOVER_BATCH) batches.push(built_.slice(b, b + DISCOVER_BATCH));
    // a batch's build: the raw columns over every training row (the aggregates read them all), or only
    // the screen rows of a batch's candidates (every row is still read: an aggregate reads earlier rows)
    const build = (batch: Candidate[]) => {
      const tb = Date.now();
      const raw = batch === rawBatch;
      return this.w.samples
        .buildTrainInMemory(recipe, raw ? rawFeatures : batch.map(asFeature), undefined, raw && windowed.length ? undefined : idx, raw && windowed.length > 0)
        .then((r) => {
          buildMs += Date.now() - tb;
          return r.train;
        });
    };
    let screened = 0;
    // the next batch builds (DuckDB's threads) while this one is scored (this thread)
    let next: Promise<EncodedSplit> | null = batches.length ? build(batches[0]) : null;
    for (const [b, batch] of batches.entries()) {
      checkpoint();
      await progress(
        0.08 + (0.82 * screened) / candidates.length,
        `screening candidates ${screened + 1}-${screened + batch.length} of ${candidates.length}`,
      );
      screened += batch.length;
      const train = await next!;
      next = b + 1 < batches.length ? build(batches[b + 1]) : null;
      // keep a failed prefetch from surfacing as an unhandled rejection before it is awaited
      next?.catch(() => undefined);
      const ts = Date.now();
      const all = batch === rawBatch && windowed.length > 0;
      if (train.rows !== (all ? built.trainAll.rows : idx.length))
        throw new Error(`discover: a candidate build has ${train.rows} rows, expected ${all ? built.trainAll.rows : idx.length}`);
      let valueOf: (c: Candidate) => ScreenValues;
      let windowsOf: WindowValues | null = null;
      if (batch === rawBatch) {
        const numbers = new Map<string, Float32Array>();
        const numberOf = (n: string) => {
          let v = numbers.get(n);
          if (!v) numbers.set(n, (v = numericColumn(train, `raw:${n}`)));
          return v;
        };
        const atScreen = new Map<string, Float32Array>();
        for (const n of new Set(arithmetic.flatMap((c) => c.columns))) atScreen.set(n, all ? Float32Array.from(idx, (i) => numberOf(n)[i]) : numberOf(n));
        const windows = all
          ? new WindowValues(
              {
                rows: train.rows,
                time: train.times!,
                label: train.labels,
                ids: (n) => slotIds(train, `key:${n}`),
                values: numberOf,
              },
              idx,
            )
          : null;
        windowsOf = windows;
        valueOf = (c) => (arithmeticSet.has(c) ? arithmeticValues(c, atScreen) : { kind: 'numeric', values: windows!.values(c.expr) });
      } else valueOf = (c) => valuesAt(train, c);
      let partition: string | null = null;
      for (const [k, c] of batch.entries()) {
        if (batch === rawBatch && !arithmeticSet.has(c)) {
          const by = windowKeys(c).join('\u0000');
          if (partition !== null && by !== partition) windowsOf?.drop();
          partition = by;
        }
        // the job's lock is renewed on this thread: let it run between candidates
        if (k % 16 === 15) await new Promise((r) => setImmediate(r));
        const b = binsOf(valueOf(c));
        const s = binnedScore(b, screenRows);
        scored.push({ name: c.name, text: c.text, family: c.family, kind: c.kind, columns: c.columns, gain: s.gain, halves: s.halves });
        // keep the bins of the best so far only (`best`: the top `pool` scores, descending)
        const at = best.findIndex((x) => x.gain < s.gain);
        if (at >= 0 || best.length < pool) best.splice(at >= 0 ? at : best.length, 0, { name: c.name, gain: s.gain });
        if (best.length > pool) best.length = pool;
        if (s.gain > 0 && best.some((x) => x.name === c.name)) binned.set(c.name, b);
        if (binned.size > pool * 2) {
          const keep = new Set(best.map((x) => x.name));
          for (const k of [...binned.keys()]) if (!keep.has(k)) binned.delete(k);
        }
      }
      scoreMs += Date.now() - ts;
    }
    scored.sort((a, b) => b.gain - a.gain || (a.name < b.name ? -1 : 1));
    const positive = scored.filter((s) => s.gain > 0 && binned.has(s.name)).slice(0, pool);
    const { kept, copies } = dropNearCopies(
      positive.map((_, i) => i),
      new Map(positive.map((s, i) => [i, binnedEncoding(binned.get(s.name)!, screenRows)])),
    );
    for (const [i, of] of copies) positive[i].copyOf = positive[of].name;
    // the best `topK` by forward selection: each what it adds beyond the ones chosen before it
    const picks = selectForward(
      kept.map((i) => binned.get(positive[i].name)!),
      screenRows,
      p.topK,
    );
    const chosen = picks.map(({ index, gain }) => Object.assign(positive[kept[index]], { chosen: true, conditionalGain: gain }));
    checkpoint();

    // the verified comparison's trials get the chosen candidates
    const chosenCandidates = chosen.map((c) => candidates.find((x) => x.name === c.name)!);
    await this.handOn(experiment.id, p, recipe, chosenCandidates, ss, tables);

    // the screen's ranking, next to the verdicts the comparison will add
    const shown = scored.slice(0, 500);
    if (shown.length) {
      await this.w.ds
        .createQueryBuilder()
        .insert()
        .into(FeatureResultEntity)
        .values(
          shown.map((s, rank) => ({
            experimentId: experiment.id,
            trialId: trial.id,
            businessLine: experiment.businessLine,
            featureName: s.name,
            scorer: 'discover_screen',
            value: s.gain,
            ciLow: null,
            ciHigh: null,
            rank: rank + 1,
            details: {
              text: s.text,
              family: s.family,
              kind: s.kind,
              columns: s.columns,
              halves: s.halves,
              copyOf: s.copyOf ?? null,
              chosen: !!s.chosen,
              conditionalGain: s.conditionalGain ?? null,
            },
          })) as never[],
        )
        .orUpdate(['trial_id', 'value', 'ci_low', 'ci_high', 'rank', 'details'], ['experiment_id', 'feature_name', 'scorer'])
        .execute();
    }
    const families: Record<string, number> = {};
    for (const c of candidates) families[c.family] = (families[c.family] ?? 0) + 1;
    return {
      backend: trained.backend,
      metrics: {
        candidates: candidates.length,
        families,
        screenRows: idx.length,
        positive: scored.filter((s) => s.gain > 0).length,
        nearCopies: copies.size,
        chosen: chosen.map((c) => ({ name: c.name, text: c.text, family: c.family, gain: c.gain, conditionalGain: c.conditionalGain })),
        top: scored.slice(0, 50),
        timings: { totalMs: Date.now() - t0, buildMs, scoreMs },
      },
    };
  }

  /** Writes the chosen candidates into the comparison's trials, or marks them done when there are none. */
  private async handOn(
    experimentId: string,
    p: ReturnType<typeof discoverTrialParamsSchema.parse>,
    recipe: TrainTrialParams['recipe'],
    chosen: Candidate[],
    ss: SampleSetEntity,
    tables: Map<string, ExprTableRef>,
  ): Promise<void> {
    const repo = this.w.ds.getRepository(TrialEntity);
    const at = (seq: number) => repo.findOneByOrFail({ experimentId, seq });
    const [aug, screen, shuffle, compare] = await Promise.all([p.augmentedSeq, p.screenSeq, p.ablateSeq, p.compareSeq].map(at));
    if (!chosen.length) {
      const finishedAt = new Date();
      for (const t of [aug, screen, shuffle, compare])
        await repo.update(
          { id: t.id, status: 'queued' },
          { status: 'succeeded', metrics: { skipped: 'no candidate added to the base model on the screen' } as never, finishedAt },
        );
      return;
    }
    const features = chosen.map((c) => candidateFeature(c, tables));
    const k = chosen.length;
    const augParams: TrainTrialParams = { role: 'augmented', recipe: { ...recipe, features: [...recipe.features, ...features] } };
    const ablation = (old: TrialEntity): AblateTrialParams => ({
      ...(old.params as AblateTrialParams),
      groups: chosen.map((c) => [c.name]),
      alpha: p.alpha / k,
      maxRows: ABLATE_MAX_ROWS,
    });
    const compareParams: CompareTrialParams = {
      ...(compare.params as CompareTrialParams),
      candidates: chosen.map((c) => c.name),
      candidateAlpha: p.alpha / k,
      register: {
        sampleSetId: ss.id,
        candidates: chosen.map((c) => ({ name: c.name, text: c.text, kind: c.kind, expression: c.expr as unknown as Record<string, unknown> })),
      },
    };
    await this.w.ds.transaction(async (m) => {
      const r = m.getRepository(TrialEntity);
      await r.update({ id: aug.id }, { params: augParams as never });
      await r.update({ id: screen.id }, { params: ablation(screen) as never });
      await r.update({ id: shuffle.id }, { params: ablation(shuffle) as never });
      await r.update({ id: compare.id }, { params: compareParams as never });
    });
  }
}

/** A candidate as a feature of a recipe (with where the feature-table features it reads are joined from). */
export function candidateFeature(c: Candidate, tables: Map<string, ExprTableRef>): ResolvedFeature {
  const refs = c.columns.filter((n) => n.startsWith('@') && tables.has(n.slice(1))).map((n) => n.slice(1));
  return {
    name: c.name,
    kind: c.kind,
    source: {
      kind: 'expression',
      expression: c.expr,
      ...(refs.length ? { tables: Object.fromEntries(refs.map((n) => [n, tables.get(n)!])) } : {}),
    },
  };
}

/**
 * The base model's feature-table features the candidates may read (numbers and categories), by
 * feature name: joined as of each impression, as the model joins them. A name that is also a column of
 * the set (@name) is left out.
 */
export function tableInputs(features: ResolvedFeature[], ss: SampleSetEntity): Map<string, ExprTableRef> {
  const out = new Map<string, ExprTableRef>();
  for (const f of features) {
    if (f.source.kind !== 'table' || f.kind === 'multi_id' || ss.schema.some((c) => c.name === `@${f.name}`)) continue;
    const s = f.source;
    out.set(f.name, {
      kind: f.kind,
      file: s.file,
      entityKey: s.entityKey,
      sampleKey: s.sampleKey,
      timeColumn: s.timeColumn ?? null,
      column: s.column ?? f.name,
      ...(s.version !== undefined ? { version: s.version } : {}),
    });
  }
  return out;
}

/** What a candidate's rows are partitioned by (the keys of its window or time since; '' for none). */
function partitionOf(c: Candidate): string {
  const e = c.expr as { op?: string; by?: FeatureExpr[] };
  return (e.op === 'window' || e.op === 'since') && e.by ? e.by.map(leafName).join('\u0000') : '';
}

/** families the screen computes from the raw numbers (see arithmeticValues) */
const ARITHMETIC = new Set(['column', 'log', 'ratio', 'product', 'difference']);

/** A number, log or pair of numbers computed from the raw columns' values on the screen rows. */
function arithmeticValues(c: Candidate, raw: Map<string, Float32Array>): ScreenValues {
  const e = c.expr as { col?: string; op?: string; arg?: FeatureExpr; args?: FeatureExpr[] };
  if (e.col) return { kind: 'numeric', values: raw.get(e.col)! };
  if (e.op === 'log') return { kind: 'numeric', values: raw.get(leafName(e.arg!))!.map((x) => (x > -1 ? Math.log1p(x) : NaN)) };
  const a = raw.get(leafName(e.args![0]))!;
  const b = raw.get(leafName(e.args![1]))!;
  const f = e.op === 'div' ? (x: number, y: number) => (y === 0 ? NaN : x / y) : e.op === 'mul' ? (x: number, y: number) => x * y : (x: number, y: number) => x - y;
  return { kind: 'numeric', values: a.map((x, i) => f(x, b[i])) };
}

/** A numeric column of a build, one value per row. */
function numericColumn(train: EncodedSplit, name: string): Float32Array {
  const j = train.numericNames.indexOf(name);
  if (j < 0) throw new Error(`discover: ${name} is not in its build`);
  const w = train.numericNames.length;
  const values = new Float32Array(train.rows);
  for (let i = 0; i < train.rows; i++) values[i] = train.numeric[i * w + j];
  return values;
}

/** A single-id slot of a build, one id per row (-1: missing). */
function slotIds(train: EncodedSplit, name: string): Int32Array {
  const slot = train.slots.find((s) => s.name === name);
  if (!slot) throw new Error(`discover: ${name} is not in its build`);
  const ids = new Int32Array(train.rows);
  for (let i = 0; i < train.rows; i++) ids[i] = slot.offsets[i + 1] > slot.offsets[i] ? slot.ids[slot.offsets[i]] : -1;
  return ids;
}

/** The key and category columns an aggregate partitions by, and the number it aggregates. */
function windowKeys(c: Candidate): string[] {
  const e = c.expr as { op?: string; by?: FeatureExpr[]; arg?: FeatureExpr };
  return e.op === 'freq' ? [leafName(e.arg!)] : (e.by ?? []).map(leafName);
}
function windowMeasures(c: Candidate): string[] {
  const e = c.expr as { of?: FeatureExpr };
  return e.of ? [leafName(e.of)] : [];
}

/** A candidate's values on the screen rows, from its batch's build of those rows. */
function valuesAt(train: EncodedSplit, c: Candidate): ScreenValues {
  return train.numericNames.includes(c.name)
    ? { kind: 'numeric', values: numericColumn(train, c.name) }
    : { kind: 'categorical', ids: slotIds(train, c.name) };
}

/** distinct values (approximate) and minimum of each feature-table feature the candidates may read, over its table's rows */
async function profileTables(tables: Map<string, ExprTableRef>, local: (rel: string) => Promise<string>): Promise<ColumnProfile[]> {
  if (!tables.size) return [];
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    const out: ColumnProfile[] = [];
    for (const [name, t] of tables) {
      const source = await tableSource(await local(t.file));
      const q = quoteIdent(t.column);
      const numeric = t.kind === 'numeric';
      const [row] = (await con.runAndReadAll(`SELECT approx_count_distinct(${q}), ${numeric ? `min(TRY_CAST(${q} AS DOUBLE))` : 'NULL'} FROM ${source.sql}`)).getRows();
      out.push({
        name: `@${name}`,
        cls: numeric ? 'float' : 'string',
        distinct: Number(row[0] ?? 0),
        min: row[1] === null || row[1] === undefined ? null : Number(row[1]),
        key: false,
        ref: true,
      });
    }
    return out;
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

/** distinct values (approximate) and minimum of each column the candidates may read */
async function profileColumns(file: string, ss: SampleSetEntity): Promise<ColumnProfile[]> {
  const skip = new Set([ss.labelColumn, ss.timeColumn].filter(Boolean));
  const cols = ss.schema.filter((c) => !skip.has(c.name) && c.kind !== 'unsupported' && columnClassOfDuckdb(c.sourceType) !== 'list');
  const classes = columnClasses(ss.schema);
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    const source = await tableSource(file);
    const parts = cols.flatMap((c) => {
      const q = quoteIdent(c.name);
      const numeric = classes.get(c.name) === 'float' || classes.get(c.name) === 'integer';
      return [`approx_count_distinct(${q})`, numeric ? `min(${q})::DOUBLE` : 'NULL'];
    });
    const [row] = (await con.runAndReadAll(`SELECT ${parts.join(', ')} FROM ${source.sql}`)).getRows();
    return cols.map((c, i) => ({
      name: c.name,
      cls: classes.get(c.name) ?? 'unsupported',
      distinct: Number(row[2 * i] ?? 0),
      min: row[2 * i + 1] === null || row[2 * i + 1] === undefined ? null : Number(row[2 * i + 1]),
      key: ss.keyColumns.includes(c.name),
    }));
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

