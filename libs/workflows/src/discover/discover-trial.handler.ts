import { DuckDBInstance } from '@duckdb/node-api';
import { FeatureResultEntity, SampleSetEntity, TrialEntity } from '@abacus/data';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { materialize } from '@abacus/runtime';
import { checkExpr, columnClassOfDuckdb, quoteIdent, tableSource, type EncodedSplit } from '@abacus/samples';
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
import { dropNearCopies, screenEncoding, screenScore, type ScreenRows, type ScreenValues } from './screen';

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

    // the candidates: over the set's columns, what the base reads as it is left out of the plain ones
    await progress(0.06, 'profiling the columns');
    const profiles = await this.w.samples.withSamplesFile(recipe, (file) => profileColumns(file, ss));
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
        checkExpr(c.expr, { columns: classes, label: recipe.label, hasTime: !!recipe.time }, c.kind);
        return true;
      } catch {
        return false;
      }
    });
    if (!candidates.length) throw new Error(`no candidate expression can be made over the columns of ${ss.name}`);

    // screen, a batch at a time; the best `pool` are kept with their encodings for the near-copy check
    const pool = Math.max(5 * p.topK, 60);
    const scored: ScreenedCandidate[] = [];
    const encodings = new Map<string, Float32Array>();
    let buildMs = 0;
    let scoreMs = 0;
    // numbers and their pairs are computed here from one build of the raw numbers they read (as the
    // builder gives them: a missing value is the training mean); the rest are built a batch at a time
    const arithmetic = candidates.filter((c) => c.kind === 'numeric' && ARITHMETIC.has(c.family));
    const built_ = candidates.filter((c) => !arithmetic.includes(c));
    const rawNames = [...new Set(arithmetic.flatMap((c) => c.columns))];
    const batches: Candidate[][] = [];
    if (arithmetic.length) batches.push(arithmetic);
    for (let b = 0; b < built_.length; b += DISCOVER_BATCH) batches.push(built_.slice(b, b + DISCOVER_BATCH));
    let screened = 0;
    for (const batch of batches) {
      checkpoint();
      await progress(
        0.08 + (0.82 * screened) / candidates.length,
        `screening candidates ${screened + 1}-${screened + batch.length} of ${candidates.length}`,
      );
      screened += batch.length;
      const tb = Date.now();
      const isArithmetic = batch === arithmetic;
      const { train } = await this.w.samples.buildTrainInMemory(
        recipe,
        isArithmetic ? rawNames.map((n) => ({ name: `raw:${n}`, kind: 'numeric', source: { kind: 'expression', expression: { col: n } } })) : batch.map(asFeature),
      );
      buildMs += Date.now() - tb;
      if (train.rows !== built.trainAll.rows)
        throw new Error(`discover: a candidate build has ${train.rows} training rows, the base model ${built.trainAll.rows}`);
      const raw = new Map<string, Float32Array>();
      if (isArithmetic) for (const n of rawNames) raw.set(n, (valuesAt(train, { name: `raw:${n}` } as Candidate, idx) as { values: Float32Array }).values);
      const ts = Date.now();
      for (const c of batch) {
        const v = isArithmetic ? arithmeticValues(c, raw) : valuesAt(train, c, idx);
        const s = screenScore(v, screenRows);
        scored.push({ name: c.name, text: c.text, family: c.family, kind: c.kind, columns: c.columns, gain: s.gain, halves: s.halves });
        // keep the encodings of the best so far only
        const floor = scored.length > pool ? [...scored].sort((x, y) => y.gain - x.gain)[pool - 1].gain : -Infinity;
        if (s.gain > 0 && s.gain >= floor) encodings.set(c.name, screenEncoding(v, screenRows));
        if (encodings.size > pool * 2) {
          const keep = new Set([...scored].sort((x, y) => y.gain - x.gain).slice(0, pool).map((x) => x.name));
          for (const k of [...encodings.keys()]) if (!keep.has(k)) encodings.delete(k);
        }
      }
      scoreMs += Date.now() - ts;
    }
    scored.sort((a, b) => b.gain - a.gain || (a.name < b.name ? -1 : 1));
    const positive = scored.filter((s) => s.gain > 0 && encodings.has(s.name)).slice(0, pool);
    const { kept, copies } = dropNearCopies(
      positive.map((_, i) => i),
      new Map(positive.map((s, i) => [i, encodings.get(s.name)!])),
    );
    for (const [i, of] of copies) positive[i].copyOf = positive[of].name;
    const chosen = kept.slice(0, p.topK).map((i) => positive[i]);
    for (const c of chosen) c.chosen = true;
    checkpoint();

    // the verified comparison's trials get the chosen candidates
    const chosenCandidates = chosen.map((c) => candidates.find((x) => x.name === c.name)!);
    await this.handOn(experiment.id, p, recipe, chosenCandidates, ss);

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
            details: { text: s.text, family: s.family, kind: s.kind, columns: s.columns, halves: s.halves, copyOf: s.copyOf ?? null, chosen: !!s.chosen },
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
        chosen: chosen.map((c) => ({ name: c.name, text: c.text, family: c.family, gain: c.gain })),
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
    const features = chosen.map(asFeature);
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

/** A candidate as a feature of a recipe. */
export function asFeature(c: Candidate): ResolvedFeature {
  const f: ResolvedFeature = { name: c.name, kind: c.kind, source: { kind: 'expression', expression: c.expr } };
  return f;
}

/** families the screen computes from the raw numbers (see arithmeticValues) */
const ARITHMETIC = new Set(['column', 'log', 'ratio', 'product', 'difference']);

/** A number, log or pair of numbers computed from the raw columns' values on the screen rows. */
function arithmeticValues(c: Candidate, raw: Map<string, Float32Array>): ScreenValues {
  const e = c.expr as { col?: string; op?: string; arg?: { col: string }; args?: { col: string }[] };
  if (e.col) return { kind: 'numeric', values: raw.get(e.col)! };
  if (e.op === 'log') return { kind: 'numeric', values: raw.get(e.arg!.col)!.map((x) => (x > -1 ? Math.log1p(x) : NaN)) };
  const a = raw.get(e.args![0].col)!;
  const b = raw.get(e.args![1].col)!;
  const f = e.op === 'div' ? (x: number, y: number) => (y === 0 ? NaN : x / y) : e.op === 'mul' ? (x: number, y: number) => x * y : (x: number, y: number) => x - y;
  return { kind: 'numeric', values: a.map((x, i) => f(x, b[i])) };
}

/** A candidate's values on the screen rows, from its batch's training split. */
function valuesAt(train: EncodedSplit, c: Candidate, idx: Uint32Array): ScreenValues {
  const j = train.numericNames.indexOf(c.name);
  if (j >= 0) {
    const w = train.numericNames.length;
    return { kind: 'numeric', values: Float32Array.from(idx, (i) => train.numeric[i * w + j]) };
  }
  const slot = train.slots.find((s) => s.name === c.name);
  if (!slot) throw new Error(`discover: candidate ${c.name} is not in its build`);
  return {
    kind: 'categorical',
    ids: Int32Array.from(idx, (i) => (slot.offsets[i + 1] > slot.offsets[i] ? slot.ids[slot.offsets[i]] : -1)),
  };
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

