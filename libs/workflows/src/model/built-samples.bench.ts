/**
 * Peak memory of a sample build by stage, against rows (a script, not part of the unit suite):
 *   npx esbuild libs/workflows/src/model/built-samples.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/built-samples.bench.js && node dist-bench/built-samples.bench.js ROWS [NUMERIC=85] [SLOTS=15] [DIR] [DUCKDB_MB=2048] [--reference] [--iv] [--epoch]
 * Writes a synthetic Parquet set (time, user, label, NUMERIC numeric columns with missing values,
 * SLOTS categorical / multi-id columns), builds it through BuiltSamplesCache with the worker's defaults
 * and prints one JSON line: rows, seconds and the process's peak RSS per stage, and the built size.
 *
 * --reference (after the positional arguments): the set is written as day=N/ partitions (8 files)
 * and read as a set registered by reference on a file:// store is (SampleSetData: listing, the host's
 * cache, a folder of links); --iv: then the streaming IV/WOE scoring of every feature, as a score
 * trial runs it; --epoch: then one training epoch on the CPU backend from the built shards and an
 * evaluation of the test split; --fits K [--backend cpu|cuda] [--keep M]: then K whole-model fits
 * through ModelTrainer (training with early stopping, test and validation evaluation and
 * predictions, the checkpoint), [--lanes L] at a time: first on every feature, then (with --keep M)
 * K fits on the first M features beside the K whole fits found in the model cache, as a subtract's
 * confirm step runs them; the process's RSS (anonymous and file-backed) is traced every 50 ms with each
 * fit's phase. --gather R: a seeded sample of R validation rows copied from the shards in fold order,
 * as the prune and the shuffle ablation take theirs (RSS traced every 20 ms; --addon FILE loads
 * another build of the native addon, to compare). Each is a stage of its own in the JSON. --join-chunk-mb M: the build orders at most M MiB of
 * joined rows in one sort (a run of files at a time; the worker's default 4096). --split memory|scratch:
 * multiply's pretraining / fine-tuning split of the training rows (by the slot s1), copied into memory
 * or into shard files of a scratch folder, with the RSS traced as for --gather.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DataDir, SampleSetData } from '@abacus/catalog';
import type { SampleSetEntity } from '@abacus/data';
import { materialize, RuntimeModel, setAddonPath } from '@abacus/runtime';
import { scoreFileStreaming } from '@abacus/scoring';
import { FileStore, ObjectCache, StoreRegistry } from '@abacus/store';
import { splitByDomain } from '../multiply/multiply-trial.handler';
import { BuiltSamplesCache, projectBuilt } from './built-samples.cache';
import { foldOrder, sampleRows } from './dataset-subset';
import { ModelTrainer } from './model-trainer';
import { architectureSchema, trainingSchema, type ModelRecipe, type ResolvedFeature } from './model-recipe.schema';

async function writeSet(file: string, rows: number, numeric: number, slots: number, partitioned: boolean): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:', {
    memory_limit: '1GB',
    temp_directory: path.join(path.dirname(file), 'spill'),
  });
  const con = await instance.connect();
  const cols = [
    'i AS id',
    '(i * 7919) % 8640000 AS ts',
    '(i * 2654435761) % 1000003 AS user_id',
    'CAST(hash(i) % 100 < 8 + 10 * (((i * 37) % 100) / 100.0) AS INTEGER) AS click',
  ];
  for (let j = 0; j < numeric; j++)
    cols.push(`CASE WHEN hash(i, ${j}) % 17 = 0 THEN NULL ELSE ((hash(i * ${j + 3}) % 100000) / 1000.0) END AS x${j}`);
  for (let j = 0; j < slots; j++)
    cols.push(
      j % 3 === 2
        ? `[CAST(hash(i, ${j}) % 5000 AS INTEGER), CAST(hash(i, ${j + 100}) % 5000 AS INTEGER)] AS s${j}`
        : `'v' || (hash(i, ${j}) % ${j % 3 === 0 ? 1000 : 50}) AS s${j}`,
    );
  try {
    await con.run(
      partitioned
        ? `COPY (SELECT ${cols.join(', ')}, CAST(((i * 7919) % 8640000) // 1080000 AS INTEGER) AS day FROM range(${rows}) r(i)) TO '${file}' (FORMAT parquet, PARTITION_BY (day), ROW_GROUP_SIZE 122880)`
        : `COPY (SELECT ${cols.join(', ')} FROM range(${rows}) r(i)) TO '${file}' (FORMAT parquet, ROW_GROUP_SIZE 122880)`,
    );
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/** The process's resident set, anonymous and file-backed pages (KiB), from /proc/self/status. */
function procStatus(): { rss: number; anon: number; file: number } {
  const s = fs.readFileSync('/proc/self/status', 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** The process's memory now, and its peak traced every 20 ms until `stop()`. */
function traceStatus() {
  const before = procStatus();
  const top = { rss: 0, anon: 0, file: 0 };
  const tick = setInterval(() => {
    const m = procStatus();
    top.rss = Math.max(top.rss, m.rss);
    top.anon = Math.max(top.anon, m.anon);
    top.file = Math.max(top.file, m.file);
  }, 20);
  return { before, top, stop: () => clearInterval(tick) };
}

async function main(): Promise<void> {
  const valued = new Set([
    '--fits',
    '--backend',
    '--keep',
    '--trace',
    '--lanes',
    '--join-chunk-mb',
    '--gather',
    '--addon',
    '--split',
  ]);
  const flag = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const args = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !(i > 0 && valued.has(all[i - 1]!)));
  // --addon FILE: another build of the native addon (an earlier one, to compare)
  if (flag('--addon')) setAddonPath(path.resolve(flag('--addon')!));
  const rows = Number(args[0] ?? 1_000_000);
  const numeric = Number(args[1] ?? 85);
  const slots = Number(args[2] ?? 15);
  const duckdbMemoryMb = Number(args[4] ?? 2048);
  const root = args[3] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-build-mem-'));
  fs.mkdirSync(path.join(root, 'in'), { recursive: true });
  const reference = process.argv.includes('--reference');
  const file = path.join(root, 'in', `set-${rows}x${numeric + slots}${reference ? '' : '.parquet'}`);
  const tw = performance.now();
  if (!fs.existsSync(file)) await writeSet(file, rows, numeric, slots, reference);
  const writeS = (performance.now() - tw) / 1000;
  const features: ResolvedFeature[] = [
    ...Array.from({ length: numeric }, (_, j) => ({
      name: `x${j}`,
      kind: 'numeric' as const,
      source: { kind: 'column' as const },
    })),
    ...Array.from({ length: slots }, (_, j) => ({
      name: `s${j}`,
      kind: j % 3 === 2 ? ('multi_id' as const) : ('categorical' as const),
      source: { kind: 'column' as const },
    })),
  ];
  const recipe: ModelRecipe = {
    sampleSetId: 'bench',
    sampleFile: path.relative(root, file),
    label: 'click',
    positive: null,
    time: 'ts',
    testFrom: null,
    filter: null,
    features,
    architecture: architectureSchema.parse({}),
    training: trainingSchema.parse({}),
    modelId: null,
  };
  const threads = Math.min(4, os.availableParallelism());
  const dataDir = new DataDir(root);
  // a set registered by reference on a file:// store, read as the worker reads one
  const samples = new SampleSetData(dataDir, new StoreRegistry(), new ObjectCache(path.join(root, 'cache'), 1e12));
  const objects = reference ? await new FileStore(file).list('') : [];
  const entity = {
    id: '00000000-0000-0000-0000-00000000bead',
    name: 'bench',
    files: [],
    location: `file://${file}/`,
    objects,
  } as unknown as SampleSetEntity;
  if (reference) {
    recipe.sampleFile = `file://${file}/`;
    recipe.sampleVersion = `bench-${rows}x${numeric + slots}`;
  }
  const cache = new BuiltSamplesCache(dataDir, {
    threads,
    duckdbMemoryMb: duckdbMemoryMb,
    // --join-chunk-mb M: joined rows one sort orders at most (the worker's default: 4 GiB)
    ...(flag('--join-chunk-mb') ? { joinChunkBytes: Number(flag('--join-chunk-mb')) * 2 ** 20 } : {}),
    ...(reference
      ? { openSamples: (_r: ModelRecipe, onProgress?: (f: number, m: string) => void) => samples.open(entity, onProgress) }
      : {}),
  });
  const stages: Record<string, { s: number; peakRssGiB: number }> = {};
  let stage = 'start';
  let stageStart = performance.now();
  let peak = 0;
  const close = () => {
    stages[stage] = { s: +((performance.now() - stageStart) / 1000).toFixed(1), peakRssGiB: +(peak / 2 ** 30).toFixed(2) };
  };
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 100);
  const t0 = performance.now();
  const built = await cache.ensureBuilt(recipe, undefined, (_f, message) => {
    const next = message.startsWith('join') ? 'join' : message;
    if (next === stage) return;
    peak = Math.max(peak, process.memoryUsage.rss());
    close();
    stage = next;
    stageStart = performance.now();
    peak = process.memoryUsage.rss();
  });
  peak = Math.max(peak, process.memoryUsage.rss());
  close();
  const buildS = +((performance.now() - t0) / 1000).toFixed(1);
  const begin = (name: string) => {
    close();
    stage = name;
    stageStart = performance.now();
    peak = process.memoryUsage.rss();
  };
  const extra: Record<string, unknown> = {};
  const gatherRows = Number(flag('--gather') ?? 0);
  if (gatherRows > 0) {
    // a seeded sample of the validation split laid out in 5 folds, copied from the shards, as the
    // prune and the shuffle ablation copy their decision rows; the RSS traced every 20 ms meanwhile
    begin(`gather ${gatherRows} validation rows in fold order`);
    const v = (await cache.get(recipe)).validation;
    const laid = foldOrder(v.rows, 5, 7, sampleRows(v.rows, Math.min(gatherRows, v.rows), 29));
    const { before, top, stop } = traceStatus();
    const tg = performance.now();
    const copy = await materialize(v, laid.order);
    const gatherS = (performance.now() - tg) / 1000;
    stop();
    const bytes =
      copy.numeric.byteLength +
      copy.labels.byteLength +
      copy.slots.reduce((a, s) => a + s.offsets.byteLength + s.ids.byteLength, 0);
    const gib = (kb: number) => +(kb / 2 ** 20).toFixed(2);
    extra.gather = {
      addon: flag('--addon') ?? 'built',
      validationRows: v.rows,
      rows: copy.rows,
      copyGiB: +(bytes / 2 ** 30).toFixed(2),
      seconds: +gatherS.toFixed(2),
      before: { rssGiB: gib(before.rss), anonGiB: gib(before.anon), fileGiB: gib(before.file) },
      peak: { rssGiB: gib(top.rss), anonGiB: gib(top.anon), fileGiB: gib(top.file) },
    };
  }
  const splitMode = flag('--split');
  if (splitMode === 'memory' || splitMode === 'scratch') {
    // multiply's pretraining / fine-tuning split of the fitted rows by a line's slot (here s1, 50
    // values: the rows whose s1 is the first test row's are "the target's"), copied into memory or
    // into shard files of a scratch folder; the RSS traced every 20 ms meanwhile
    begin(`split by domain (${splitMode})`);
    const set = await cache.get(recipe);
    const scratch = splitMode === 'scratch' ? new DataDir(root).scratch('split-bench') : null;
    const { before, top, stop } = traceStatus();
    const ts = performance.now();
    const split = await splitByDomain(set, { scratch: scratch?.dir ?? null, domain: 's1' });
    const splitS = (performance.now() - ts) / 1000;
    stop();
    const gib = (kb: number) => +(kb / 2 ** 20).toFixed(2);
    extra.split = {
      mode: splitMode,
      trainRows: set.train.rows,
      pretrainRows: split.pretrain.rows,
      finetuneRows: split.finetune.rows,
      scratchGiB: scratch
        ? +(fs.readdirSync(scratch.dir).reduce((a, f) => a + fs.statSync(path.join(scratch.dir, f)).size, 0) / 2 ** 30).toFixed(2)
        : 0,
      seconds: +splitS.toFixed(2),
      before: { rssGiB: gib(before.rss), anonGiB: gib(before.anon), fileGiB: gib(before.file) },
      peak: { rssGiB: gib(top.rss), anonGiB: gib(top.anon), fileGiB: gib(top.file) },
    };
    scratch?.remove();
  }
  if (process.argv.includes('--iv')) {
    begin('iv (streaming, every feature)');
    const opened = reference ? await samples.open(entity) : { path: file, release: () => undefined };
    try {
      const scored = await scoreFileStreaming(
        opened.path,
        { label: 'click' },
        { columns: [...features.map((f) => f.name), 'click'], memoryLimitMb: duckdbMemoryMb, tempDir: path.join(root, 'tmp') },
      );
      extra.iv = { rows: scored.rows, features: scored.report.features.length, readMs: scored.readMs, scoreMs: scored.scoreMs };
    } finally {
      opened.release();
    }
  }
  if (process.argv.includes('--epoch')) {
    begin('open built shards');
    const set = await cache.get(recipe);
    begin('train one epoch (cpu)');
    const training = recipe.training;
    const model = RuntimeModel.create(
      {
        numeric: set.inputs.numeric,
        slots: set.inputs.slots,
        pooling: recipe.architecture.pooling,
        embeddingDim: recipe.architecture.embeddingDim,
        wide: recipe.architecture.wide,
        hidden: recipe.architecture.hidden,
        optimizer: {
          dense: { kind: 'adam', lr: training.learningRate },
          sparse: { kind: training.sparseOptimizer, lr: training.sparseLearningRate },
        },
        seed: training.seed,
      },
      { backend: 'cpu' },
    );
    const tt = performance.now();
    const r = await model.train(set.train, { epochs: 1, batchSize: training.batchSize, seed: 1, validationFraction: 0 });
    const trainS = (performance.now() - tt) / 1000;
    begin('evaluate test split (cpu)');
    const ev = await model.evaluate(set.test);
    extra.epoch = {
      trainRows: set.train.rows,
      testRows: set.test.rows,
      batchSize: training.batchSize,
      trainS: +trainS.toFixed(1),
      samplesPerSecond: Math.round(r.samplesPerSecond),
      testAuc: +ev.auc.toFixed(4),
    };
  }
  const fits = Number(flag('--fits') ?? 0);
  if (fits > 0) {
    const backend = (flag('--backend') ?? 'cpu') as 'cpu' | 'cuda';
    const keep = Number(flag('--keep') ?? features.length);
    begin(`${fits} whole-model fits at once (${backend}, ${keep} features)`);
    const whole = await cache.get(recipe);
    const names = features.slice(0, keep).map((f) => f.name);
    const set = keep < features.length ? projectBuilt(whole, names, `${whole.key}-first-${keep}`) : whole;
    const trainer = new ModelTrainer(dataDir, { backend, threads: 0 });
    // RSS from /proc (anonymous and file-backed pages apart) every 50 ms, with what each fit is doing
    const trace: string[] = [];
    const phase: string[] = Array.from({ length: Number(flag('--lanes') ?? fits) }, () => 'start');
    const statm = () => {
      const s = fs.readFileSync('/proc/self/status', 'utf8');
      const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
      return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
    };
    const tf = performance.now();
    let fitPeak = { rss: 0, anon: 0, file: 0, at: 0, phases: '' };
    // what the file-backed pages are, by file (the first time the RSS passes each further 256 MiB)
    const byFile: Record<string, unknown>[] = [];
    let nextSmaps = 0;
    const smaps = () => {
      const totals = new Map<string, number>();
      let name = '';
      for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
        const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
        if (head) name = head[1]!.replace(/\/[^/]*\.shard$/, '/*.shard') || '[anon]';
        const rss = /^Rss:\s+(\d+) kB/.exec(line);
        if (rss) totals.set(name, (totals.get(name) ?? 0) + Number(rss[1]));
      }
      return Object.fromEntries(
        [...totals]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8)
          .map(([k, v]) => [path.basename(path.dirname(k)) + '/' + path.basename(k), +(v / 2 ** 20).toFixed(3)]),
      );
    };
    const sample = setInterval(() => {
      const m = statm();
      if (m.rss > nextSmaps) {
        nextSmaps = m.rss + 256 * 1024;
        byFile.push({
          at: +((performance.now() - tf) / 1000).toFixed(2),
          rssGiB: +(m.rss / 2 ** 20).toFixed(2),
          phases: phase.join(' | '),
          gib: smaps(),
        });
      }
      const at = +((performance.now() - tf) / 1000).toFixed(2);
      if (m.rss > fitPeak.rss) fitPeak = { ...m, at, phases: phase.join(' | ') };
      trace.push(
        `${at}\t${(m.rss / 2 ** 20).toFixed(2)}\t${(m.anon / 2 ** 20).toFixed(2)}\t${(m.file / 2 ** 20).toFixed(2)}\t${phase.join(' | ')}`,
      );
    }, 50);
    // as a subtract runs them: the whole model's fits first (the prune's confirm-ahead), then the
    // confirm step: the kept features' fits trained and the whole model's found in the model cache,
    // `lanes` at a time, each fit's model dropped when it is done
    const lanes = Number(flag('--lanes') ?? fits);
    const fitAll = async (jobs: { set: typeof set; seed: number; tag: string }[]) => {
      let next = 0;
      const out: number[] = [];
      await Promise.all(
        Array.from({ length: Math.min(lanes, jobs.length) }, async (_, lane) => {
          while (next < jobs.length) {
            const j = jobs[next++]!;
            phase[lane] = `${j.tag}: load or create`;
            const r = await trainer.trainOrReuse(
              j.set,
              recipe.architecture,
              { ...recipe.training, seed: j.seed },
              {
                device: backend === 'cuda' ? 0 : undefined,
                onProgress: (_f, m) => (phase[lane] = `${j.tag}: ${m.replace(/, loss .*/, '')}`),
              },
            );
            phase[lane] = `${j.tag}: done${r.cached ? ' (cached)' : ''}`;
            out.push(+r.metrics.auc.toFixed(4));
          }
        }),
      );
      return out;
    };
    const seeds = Array.from({ length: fits }, (_, k) => 101 + k);
    const wholeAuc = await fitAll(seeds.map((seed) => ({ set: whole, seed, tag: `whole ${seed}` })));
    const tc = performance.now();
    const confirmAuc =
      keep < features.length
        ? await fitAll([
            ...seeds.map((seed) => ({ set, seed, tag: `kept ${seed}` })),
            ...seeds.map((seed) => ({ set: whole, seed, tag: `whole ${seed}` })),
          ])
        : [];
    const results = { wholeAuc, confirmAuc, confirmS: +((performance.now() - tc) / 1000).toFixed(1) };
    clearInterval(sample);
    if (flag('--trace')) fs.writeFileSync(flag('--trace')!, `s\trss GiB\tanon GiB\tfile GiB\tphases\n${trace.join('\n')}\n`);
    extra.fits = {
      fits,
      backend,
      features: keep,
      trainRows: set.train.rows,
      s: +((performance.now() - tf) / 1000).toFixed(1),
      lanes,
      ...results,
      peak: {
        at: fitPeak.at,
        rssGiB: +(fitPeak.rss / 2 ** 20).toFixed(2),
        anonGiB: +(fitPeak.anon / 2 ** 20).toFixed(2),
        fileGiB: +(fitPeak.file / 2 ** 20).toFixed(2),
        phases: fitPeak.phases,
      },
      byFile,
    };
  }
  close();
  clearInterval(timer);
  const dir = path.join(root, built.dir);
  const bytes = (d: string): number =>
    fs
      .readdirSync(d, { withFileTypes: true })
      .reduce((a, e) => a + (e.isDirectory() ? bytes(path.join(d, e.name)) : fs.statSync(path.join(d, e.name)).size), 0);
  console.log(
    JSON.stringify({
      rows,
      features: numeric + slots,
      threads,
      duckdbMemoryMb: duckdbMemoryMb,
      writeSetS: +writeS.toFixed(1),
      buildS,
      reference,
      ...extra,
      maxRssGiB: +(process.resourceUsage().maxRSS / 2 ** 20).toFixed(2),
      stages,
      builtGiB: +(bytes(dir) / 2 ** 30).toFixed(2),
      parquetGiB: +((fs.statSync(file).isDirectory() ? bytes(file) : fs.statSync(file).size) / 2 ** 30).toFixed(2),
      timings: built.meta.timings,
    }),
  );
  fs.rmSync(path.join(root, 'built'), { recursive: true, force: true });
  fs.rmSync(path.join(root, 'cache'), { recursive: true, force: true });
  fs.rmSync(path.join(root, 'models'), { recursive: true, force: true });
}

void main();
