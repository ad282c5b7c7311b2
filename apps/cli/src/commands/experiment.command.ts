import fs from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { tierAlias, uuidSchema } from '@abacus/core';
import type { ApiClient } from '../api-client';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const submitFlags = z.object({
  spec: z.string().min(1),
  wait: z.boolean().optional(),
  timeout: z.coerce
    .number()
    .int('must be a whole number of seconds')
    .min(1)
    .max(7 * 24 * 3600),
  json: z.boolean().optional(),
});
const idFlags = z.object({ id: uuidSchema, json: z.boolean().optional() });
const listFlags = z.object({
  kind: z.enum(['score', 'subtract', 'add', 'multiply', 'divide']).optional(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']).optional(),
  domain: lineName.optional(),
  page: z.coerce.number().int().min(1),
  pageSize: z.coerce.number().int().min(1).max(500),
  json: z.boolean().optional(),
});

interface Trial {
  id: string;
  kind: string;
  seq: number;
  status: string;
  progress: number;
  attempts: number;
  error: string | null;
  backend: string | null;
}

export interface Experiment {
  id: string;
  kind: string;
  name: string;
  businessLine: string;
  owner: string;
  status: string;
  progress: number;
  progressMessage: string;
  error: string | null;
  result: Record<string, unknown> | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  trials: Trial[];
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** Exit codes: 0 succeeded, 1 usage/API error, 2 experiment failed, 3 experiment cancelled. */
export function exitCodeFor(status: string): number {
  return status === 'succeeded' ? 0 : status === 'cancelled' ? 3 : 2;
}

export async function waitFor(api: ApiClient, id: string, quiet: boolean, timeoutS: number): Promise<Experiment> {
  const deadline = Date.now() + timeoutS * 1000;
  let last = '';
  for (;;) {
    const e = await api.get<Experiment>(`/experiments/${id}`);
    const line = `${e.status} ${Math.round(e.progress * 100)}% ${e.progressMessage}`;
    if (!quiet && line !== last) process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
    last = line;
    if (TERMINAL.includes(e.status)) return e;
    if (Date.now() > deadline)
      throw new CliError(`timed out after ${timeoutS}s waiting for experiment ${id} (still ${e.status})`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The text of `experiment show`. */
export function renderExperiment(e: Experiment): string {
  const out = [
    `experiment ${e.id}`,
    `  kind: ${e.kind}   line: ${e.businessLine}   owner: ${e.owner}${e.name ? `   name: ${e.name}` : ''}`,
    `  status: ${e.status} (${Math.round(e.progress * 100)}%)${e.progressMessage ? ` — ${e.progressMessage}` : ''}`,
    `  created: ${e.createdAt}${e.finishedAt ? `   finished: ${e.finishedAt}` : ''}`,
  ];
  if (e.error) out.push(`  error: ${e.error}`);
  out.push(
    '',
    table(
      e.trials.map((t) => [
        t.seq,
        t.kind,
        t.status,
        `${Math.round(t.progress * 100)}%`,
        t.attempts,
        t.backend ?? '',
        t.error ?? '',
      ]),
      ['trial', 'kind', 'status', 'progress', 'attempts', 'backend', 'error'],
    ),
  );
  if (e.kind === 'subtract' && e.result) out.push('', ...renderSubtract(e.result));
  if (e.kind === 'add' && e.result) out.push('', ...renderAdd(e.result));
  if (e.kind === 'multiply' && e.result) out.push('', ...renderMultiply(e.result));
  if (e.kind === 'divide' && e.result) out.push('', ...renderDivide(e.result));
  if (e.kind === 'discover' && e.result) out.push('', ...renderDiscover(e.result));
  const ranking = (e.result?.ranking ?? null) as
    null | { rank: number; feature: string; kind: string; iv: number; strength: string; psi: number | null }[];
  if (ranking) {
    out.push(
      '',
      'features by information value:',
      table(
        ranking.map((r) => [r.rank, r.feature, r.kind, r.iv.toFixed(4), r.strength, r.psi === null ? '' : r.psi.toFixed(4)]),
        ['rank', 'feature', 'kind', 'iv', 'strength', 'psi'],
      ),
    );
  }
  return out.join('\n');
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const f4 = (x: number | null | undefined) => (x === null || x === undefined ? '' : x.toFixed(4));
const f5 = (x: number | null | undefined) => (x === null || x === undefined ? '' : x.toFixed(5));

function renderSubtract(r: Record<string, unknown>): string[] {
  const res = r as {
    features: number;
    removable: string[];
    removedShare: number;
    full: { auc: number };
    estimatedDrop: { mean: number; ciLow: number; ciHigh: number };
    retrainCheck: { fullAuc: number; prunedAuc: number; bestAuc: number; drop: number; seeds: number[] } | null;
    confirmed: { auc: number; fullAuc: number; aucDrop: number; withinLimit: boolean } | null;
    maxDrop: number;
    curve: {
      round: number;
      check: string;
      removed: number;
      added: string[];
      drop: number;
      ciLow: number | null;
      ciHigh: number | null;
      accepted: boolean;
    }[];
    perFeature: {
      feature: string;
      combinedRank: number;
      iv: number | null;
      shuffleDrop: number | null;
      shuffleCi: [number, number] | null;
      removable: boolean;
    }[];
    resourcesSaved: { storageBytesPerEntity: number; fetchBytesPerRequest: number; computeCost: number };
    featuresWithoutCosts: string[];
  };
  return [
    `removable: ${res.removable.length} of ${res.features} features (${Math.round(res.removedShare * 100)}%) at max AUC drop ${res.maxDrop}`,
    `  ${res.removable.join(', ') || '(none)'}`,
    `full model test AUC ${f4(res.full.auc)}; permuting all removable features together on it (validation): drop ${f5(res.estimatedDrop.mean)} [${f5(res.estimatedDrop.ciLow)}, ${f5(res.estimatedDrop.ciHigh)}]`,
    ...(res.retrainCheck
      ? [
          `retraining check (validation, seeds ${res.retrainCheck.seeds.join(', ')}): full ${f4(res.retrainCheck.fullAuc)} → pruned ${f4(res.retrainCheck.prunedAuc)} (best seen ${f4(res.retrainCheck.bestAuc)})`,
        ]
      : []),
    res.confirmed
      ? `confirmed on fresh seeds (test): full ${f4(res.confirmed.fullAuc)} → pruned ${f4(res.confirmed.auc)} (drop ${f5(res.confirmed.aucDrop)}, ${res.confirmed.withinLimit ? 'within' : 'OUTSIDE'} the limit)`
      : 'no confirmatory retrain',
    `resources saved: ${round2(res.resourcesSaved.storageBytesPerEntity)} B stored per entity, ${round2(res.resourcesSaved.fetchBytesPerRequest)} B fetched per request, compute ${round2(res.resourcesSaved.computeCost)}${res.featuresWithoutCosts.length ? ` (no costs known for ${res.featuresWithoutCosts.join(', ')})` : ''}`,
    '',
    'pruning curve: (validation split)',
    table(
      res.curve.map((c) => [
        c.round,
        c.check,
        c.removed,
        c.added.join(','),
        f5(c.drop),
        c.ciLow === null ? '' : `[${f5(c.ciLow)}, ${f5(c.ciHigh)}]`,
        c.accepted ? 'yes' : 'no',
      ]),
      ['round', 'check', 'removed', 'added', 'auc drop', 'interval', 'accepted'],
    ),
    '',
    'features (least important first):',
    table(
      res.perFeature.map((f) => [
        f.combinedRank,
        f.feature,
        f4(f.iv),
        f5(f.shuffleDrop),
        f.shuffleCi ? `[${f5(f.shuffleCi[0])}, ${f5(f.shuffleCi[1])}]` : '',
        f.removable ? 'remove' : 'keep',
      ]),
      ['rank', 'feature', 'iv', 'shuffle drop (validation)', 'interval', ''],
    ),
  ];
}

/** discover: what was screened, and each candidate sent on with its screen gain and verdict. */
export function renderDiscover(r: Record<string, unknown>): string[] {
  const res = r as {
    candidates: number;
    screenRows: number;
    chosen: {
      name: string;
      text: string;
      family: string;
      screenGain: number;
      verdict: string | null;
      leaveOneIn: { delta: number; ciLow: number; ciHigh: number } | null;
      gain: { delta: number; ciLow: number; ciHigh: number } | null;
    }[];
    adopted: string[];
    registered: string[];
    skipped: string | null;
  };
  if (!res.chosen) return [];
  const out = [
    `screened ${res.candidates} candidate expression(s) on ${res.screenRows} fitted rows against the base model; ${res.chosen.length} sent to the verified comparison`,
  ];
  if (res.skipped) out.push(`no comparison: ${res.skipped}`);
  if (res.chosen.length)
    out.push(
      '',
      table(
        res.chosen.map((c) => [
          c.text,
          c.family,
          f5(c.screenGain),
          c.leaveOneIn ? `${f5(c.leaveOneIn.delta)} [${f5(c.leaveOneIn.ciLow)}, ${f5(c.leaveOneIn.ciHigh)}]` : '',
          c.verdict ?? '',
          c.gain ? `${f5(c.gain.delta)} [${f5(c.gain.ciLow)}, ${f5(c.gain.ciHigh)}]` : '',
        ]),
        ['expression', 'family', 'screen gain', 'ΔAUC validation', 'verdict', 'ΔAUC test'],
      ),
    );
  out.push(
    '',
    res.registered.length
      ? `registered as candidate features: ${res.registered.join(', ')}`
      : res.adopted.length
        ? `adopted: ${res.adopted.join(', ')} (not registered)`
        : 'nothing adopted',
  );
  return out;
}

function renderAdd(r: Record<string, unknown>): string[] {
  const res = r as {
    base: { auc: number; features: number };
    augmented: { auc: number; features: number };
    delta: { auc: { delta: number; ciLow: number; ciHigh: number }; logloss: { delta: number; ciLow: number; ciHigh: number } };
    candidates: {
      feature: string;
      contribution: { mean: number; ciLow: number; ciHigh: number };
      screen?: { mean: number; ciLow: number; ciHigh: number };
      leaveOneIn: { delta: number; ciLow: number; ciHigh: number } | null;
      gain?: { delta: number; ciLow: number; ciHigh: number; source: string };
      verdict: string;
      reason: string;
    }[];
    notification?: { status: string; error?: string };
  };
  if (!res.candidates) return [];
  return [
    `test split: base AUC ${f4(res.base.auc)} (${res.base.features} features) → augmented ${f4(res.augmented.auc)} (${res.augmented.features})`,
    `ΔAUC ${f5(res.delta.auc.delta)} [${f5(res.delta.auc.ciLow)}, ${f5(res.delta.auc.ciHigh)}], Δlogloss ${f5(res.delta.logloss.delta)} [${f5(res.delta.logloss.ciLow)}, ${f5(res.delta.logloss.ciHigh)}]`,
    '',
    table(
      res.candidates.map((c) => [
        c.feature,
        c.screen ? `${f5(c.screen.mean)} [${f5(c.screen.ciLow)}, ${f5(c.screen.ciHigh)}]` : '',
        c.leaveOneIn ? `${f5(c.leaveOneIn.delta)} [${f5(c.leaveOneIn.ciLow)}, ${f5(c.leaveOneIn.ciHigh)}]` : '',
        c.verdict,
        c.gain
          ? `${f5(c.gain.delta)} [${f5(c.gain.ciLow)}, ${f5(c.gain.ciHigh)}] (${c.gain.source})`
          : `${f5(c.contribution.mean)} [${f5(c.contribution.ciLow)}, ${f5(c.contribution.ciHigh)}] (shuffle)`,
      ]),
      ['candidate', 'shuffle screen (validation)', 'leave-one-in (validation)', 'verdict', 'gain (test)'],
    ),
    ...(res.notification
      ? ['', `notification: ${res.notification.status}${res.notification.error ? ` (${res.notification.error})` : ''}`]
      : []),
  ];
}

interface DividePoint {
  features: number;
  selected: string[];
  estimatedValue: number;
  costFractions: { storage: number; communication: number; compute: number };
  auc: number;
  aucPerSeed: number[];
  seedSpread: number;
  liftKept: number;
}

/** divide: the cost–value frontier, the published tiers and the interactions kept together. */
export function renderDivide(r: Record<string, unknown>): string[] {
  const res = r as {
    frontier?: {
      tier: number;
      alias: string;
      budget: { storage: number; communication: number; compute: number };
      solver: { status: string; gap: number };
      milp: DividePoint;
      greedy: DividePoint;
      milpVsGreedy: string;
    }[];
    published?: { tier: number; name: string; version: number }[];
    groups?: string[][];
    large?: { pool: string[]; added: string[]; dropped: string[]; aucGain: number; seedSpread: number; verdict: string } | null;
    rule?: string;
  };
  if (!res.frontier) return [];
  const l = res.large;
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const fr = (c: DividePoint['costFractions']) => `${pct(c.storage)}/${pct(c.communication)}/${pct(c.compute)}`;
  return [
    'cost–value frontier (budget and cost as storage/communication/compute of the full model; AUC retrained, mean over seeds):',
    table(
      res.frontier.flatMap((f) => [
        [
          f.alias,
          fr(f.budget),
          'milp',
          `${f.solver.status}${f.solver.gap ? ` gap ${f.solver.gap.toExponential(1)}` : ''}`,
          f.milp.features,
          fr(f.milp.costFractions),
          f4(f.milp.auc),
          f5(f.milp.seedSpread),
          pct(f.milp.liftKept),
          f.milpVsGreedy,
        ],
        [
          '',
          '',
          'greedy',
          '',
          f.greedy.features,
          fr(f.greedy.costFractions),
          f4(f.greedy.auc),
          f5(f.greedy.seedSpread),
          pct(f.greedy.liftKept),
          '',
        ],
      ]),
      ['tier', 'budget', 'selection', 'solver', 'features', 'cost', 'auc', 'seed spread', 'lift kept', 'milp vs greedy'],
    ),
    '',
    `kept or dropped together (interacting): ${res.groups?.length ? res.groups.map((g) => g.join(' + ')).join('; ') : 'none'}`,
    ...(l
      ? [
          `large tier: ${l.verdict} (AUC ${l.aucGain >= 0 ? '+' : ''}${l.aucGain.toFixed(4)}, seed spread ${l.seedSpread.toFixed(4)}); from the pool (${l.pool.join(', ')}) added ${l.added.join(', ') || 'nothing'}; dropped ${l.dropped.join(', ') || 'nothing'}`,
        ]
      : []),
    `published: ${(res.published ?? []).map((p) => `${p.name} v${p.version} (${tierAlias(p.tier)})`).join(', ') || 'nothing'}`,
    ...(res.rule ? ['', `rule: ${res.rule}`] : []),
  ];
}

/** The multiply result as text: the baseline, each arm with its verdict and intervals, the best arm, the embeddings created. */
export function renderMultiply(r: Record<string, unknown>): string[] {
  const res = r as {
    testFrom: number;
    testRows: number;
    validationFrom?: number | null;
    validationRows?: number;
    baseline: { auc: number; logloss: number; trainRows: number; validationAuc?: number | null };
    sources: {
      domain: string;
      rows: number;
      kept: number;
      droppedAtOrAfterTestStart: number;
      droppedAtOrAfterValidationStart?: number;
      duplicatesDropped: number;
      labelRate: number;
      labelRateFlag: string | null;
    }[];
    results: {
      strategy: string;
      sources: string[];
      auc: number;
      logloss: number;
      trainRows: number;
      perSeed: { deltaAuc: number }[];
      deltaAuc: { delta: number; ciLow: number; ciHigh: number };
      /** what the verdict read (absent in results of older versions, which decided on the test split) */
      validation?: { delta: number; ciLow: number; ciHigh: number };
      verdict: string;
      embedding?: {
        ref: string;
        /** embedding_update: the version it improved */
        parent?: string;
        initialised: { seed: number; init?: { slots?: { slot: string; copied: number; of: number }[] } }[];
      };
    }[];
    rule: string;
    embeddings?: { ref: string; sources: string[] }[];
    ownerCheck?: { version: string; parent: string; line: string; delta: number; ciLow: number; ciHigh: number; verdict: string };
    best?: { strategy: string; sources: string[]; chosenOn: string; validationDelta: number; deltaAuc: number } | null;
  };
  if (!res.results) return [];
  const created = (res.results ?? []).filter((x) => x.embedding);
  const at = (t: number) => Math.round(t * 1000) / 1000;
  const decided = res.results.some((x) => x.validation);
  return [
    `target-only test AUC ${f4(res.baseline.auc)}, logloss ${f4(res.baseline.logloss)}${res.baseline.validationAuc != null ? `, validation AUC ${f4(res.baseline.validationAuc)}` : ''} (${res.baseline.trainRows} train rows, ${res.testRows} test rows from ${at(res.testFrom)})`,
    ...(res.validationFrom != null
      ? [
          `validation split: the target's last ${res.validationRows} training rows, from ${at(res.validationFrom)}; verdicts read it, ΔAUC is reported on the test split`,
        ]
      : []),
    '',
    res.validationFrom != null
      ? 'borrowed sets (leakage check: rows at or after the target validation start dropped, and so those after its test start):'
      : 'borrowed sets (leakage check: rows at or after the target test start dropped):',
    table(
      res.sources.map((s) => [
        s.domain,
        s.rows,
        s.droppedAtOrAfterTestStart,
        ...(res.validationFrom != null ? [s.droppedAtOrAfterValidationStart ?? ''] : []),
        s.duplicatesDropped,
        s.kept,
        f4(s.labelRate),
        s.labelRateFlag ?? '',
      ]),
      [
        'source',
        'rows',
        res.validationFrom != null ? 'dropped (test start)' : 'dropped (leakage)',
        ...(res.validationFrom != null ? ['dropped (validation start)'] : []),
        'duplicates',
        'kept',
        'label rate',
        'flag',
      ],
    ),
    '',
    table(
      res.results.map((x) => [
        x.strategy,
        x.sources.join(' + '),
        x.trainRows,
        ...(decided
          ? [f5(x.validation?.delta), x.validation ? `[${f5(x.validation.ciLow)}, ${f5(x.validation.ciHigh)}]` : '']
          : []),
        x.verdict,
        f4(x.auc),
        f4(x.logloss),
        f5(x.deltaAuc.delta),
        `[${f5(x.deltaAuc.ciLow)}, ${f5(x.deltaAuc.ciHigh)}]`,
        x.perSeed.map((p) => f5(p.deltaAuc)).join(' '),
      ]),
      [
        'strategy',
        'sources',
        'train rows',
        ...(decided ? ['validation ΔAUC', 'interval'] : []),
        'verdict',
        'test auc',
        'logloss',
        'test ΔAUC',
        'interval',
        'test ΔAUC per seed',
      ],
    ),
    ...(created.length
      ? [
          '',
          'shared embeddings created (use in a model spec as "init": { "embedding": "<name@version>" }):',
          table(
            created.map((x) => {
              const slots = x.embedding!.initialised[0]?.init?.slots ?? [];
              const skipped = slots.filter((s) => s.copied === 0).length;
              return [
                x.embedding!.ref,
                x.sources.length ? x.sources.join(' + ') : x.embedding!.parent ? `update of ${x.embedding!.parent}` : '',
                `${slots.length} slots, ${slots.reduce((a, s) => a + s.copied, 0)}/${slots.reduce((a, s) => a + s.of, 0)} rows${skipped ? `, ${skipped} skipped` : ''}`,
                x.embedding!.initialised.map((i) => i.seed).join(' '),
              ];
            }),
            ['embedding', 'learned with', 'carried into the target model', 'initialised models (seeds)'],
          ),
        ]
      : []),
    ...(res.best !== undefined
      ? [
          '',
          res.best
            ? `best: ${res.best.strategy}${res.best.sources.length ? ` with ${res.best.sources.join(' + ')}` : ''} (chosen on the ${res.best.chosenOn} split: ΔAUC ${f5(res.best.validationDelta)}; test ΔAUC ${f5(res.best.deltaAuc)})`
            : 'best: none (no arm is recommended on the validation split; keep training on the target alone)',
        ]
      : []),
    ...(res.ownerCheck
      ? [
          '',
          `owner check of ${res.ownerCheck.version} on ${res.ownerCheck.line} (its model from ${res.ownerCheck.parent} vs from it, validation split): ΔAUC ${res.ownerCheck.delta.toFixed(5)} [${res.ownerCheck.ciLow.toFixed(5)}, ${res.ownerCheck.ciHigh.toFixed(5)}] — ${res.ownerCheck.verdict}`,
        ]
      : []),
    '',
    `rule: ${res.rule}`,
  ];
}

export const registerExperiment: RegisterCommand = (program) => {
  const exp = program.command('experiment').description('submit, follow and cancel experiments');

  exp
    .command('submit')
    .description('submit an experiment spec (JSON: {"kind", "businessLine", "name", "spec"}); see configs/examples/')
    .argument('<spec>', 'path to the spec JSON file')
    .option('--wait', 'follow progress until it finishes; exit 0 succeeded, 2 failed, 3 cancelled')
    .option('--timeout <seconds>', 'give up waiting after this long', '3600')
    .option('--json', 'print the experiment as JSON')
    .action(async (specArg: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('experiment submit', submitFlags, { ...raw, spec: specArg }, ['spec']);
      const specPath = o.spec;
      if (!fs.existsSync(specPath)) throw new CliError(`spec file not found: ${specPath}`);
      let body: unknown;
      try {
        body = JSON.parse(fs.readFileSync(specPath, 'utf8'));
      } catch (err) {
        throw new CliError(`${specPath} is not valid JSON: ${(err as Error).message}`);
      }
      const api = apiFrom(cmd);
      let e = await api.post<Experiment>('/experiments', body);
      if (!o.json) process.stderr.write(`submitted experiment ${e.id} (${e.kind}, ${e.trials.length} trial(s))\n`);
      if (o.wait) e = await waitFor(api, e.id, !!o.json, o.timeout);
      if (o.json) {
        const results = o.wait ? await api.get<unknown[]>(`/experiments/${e.id}/results`) : undefined;
        printJson(results ? { ...e, results } : e);
      } else {
        process.stdout.write(`${o.wait ? renderExperiment(e) : e.id}\n`);
      }
      if (o.wait) process.exitCode = exitCodeFor(e.status);
    });

  exp
    .command('show')
    .description('show an experiment, its trials and its result')
    .argument('<id>', 'experiment id')
    .option('--json', 'print the experiment and its per-feature results as JSON')
    .action(async (idArg: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('experiment show', idFlags, { ...raw, id: idArg }, ['id']);
      const api = apiFrom(cmd);
      const e = await api.get<Experiment>(`/experiments/${o.id}`);
      if (o.json) return printJson({ ...e, results: await api.get<unknown[]>(`/experiments/${e.id}/results`) });
      process.stdout.write(`${renderExperiment(e)}\n`);
    });

  exp
    .command('list')
    .description('list experiments, newest first')
    .option('--kind <kind>', 'filter by kind')
    .option('--status <status>', 'filter by status')
    .option('--domain <line>', 'filter by business line')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'page size', '50')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('experiment list', listFlags, raw);
      const q = new URLSearchParams();
      if (o.kind) q.set('kind', o.kind);
      if (o.status) q.set('status', o.status);
      if (o.domain) q.set('businessLine', o.domain);
      q.set('page', String(o.page));
      q.set('pageSize', String(o.pageSize));
      const page = await apiFrom(cmd).get<{ items: Experiment[]; total: number; page: number; pageSize: number }>(
        `/experiments?${q}`,
      );
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((e) => [
            e.id,
            e.kind,
            e.businessLine,
            e.status,
            `${Math.round(e.progress * 100)}%`,
            e.createdAt,
            e.name,
          ]),
          ['id', 'kind', 'line', 'status', 'progress', 'created', 'name'],
        )}\n${page.total} experiment(s), page ${page.page}\n`,
      );
    });

  exp
    .command('cancel')
    .description('cancel a queued or running experiment')
    .argument('<id>', 'experiment id')
    .option('--json', 'print JSON')
    .action(async (idArg: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('experiment cancel', idFlags, { ...raw, id: idArg }, ['id']);
      const e = await apiFrom(cmd).post<Experiment>(`/experiments/${o.id}/cancel`);
      if (o.json) return printJson(e);
      process.stdout.write(`experiment ${e.id} ${e.status}\n`);
    });
};
