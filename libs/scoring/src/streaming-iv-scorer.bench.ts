/**
 * Peak memory of IV scoring, the columns read into memory vs. streamed through DuckDB (a script, not part
 * of the unit suite):
 *   npx esbuild libs/scoring/src/streaming-iv-scorer.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=/tmp/iv-stream-bench.js && NODE_PATH=$PWD/node_modules node /tmp/iv-stream-bench.js 3000000 256
 * (rows, then DuckDB's memory cap in MiB). It writes a Parquet file of that many rows x 20 features (12
 * numeric, 5 categorical, 3 id lists) with a label and a time split, then scores it in a fresh process per
 * way, since a process's peak RSS only grows. Prints one JSON line per way; the numbers are in the
 * "Scoring large sets" section of libs/scoring/README.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { readTable } from '@abacus/samples';
import { scoreTableAsync } from './iv-scorer';
import type { ScoreTableOptions } from './score-table-options.schema';
import { scoreFileStreaming } from './streaming-iv-scorer';

const OPTIONS: ScoreTableOptions = { label: 'y', time: 't', testFrom: 0.8, minIdShare: 0.001 };

/** 20 features: 8 continuous, 4 small integers, 5 strings, 3 id lists; about a quarter of the rows are events */
async function writeSamples(file: string, rows: number): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  const u = (k: number) => `(hash(i * ${2 * k + 1} + ${k}) % 1000003) / 1000003.0`;
  const cols = [
    ...Array.from({ length: 8 }, (_, k) => `CASE WHEN hash(i + ${k}) % 50 = 0 THEN NULL ELSE ${u(k)} * ${k + 1} END AS num${k}`),
    ...Array.from({ length: 4 }, (_, k) => `(hash(i * 31 + ${k}) % ${10 * (k + 1)})::INTEGER AS int${k}`),
    ...Array.from({ length: 5 }, (_, k) => `'c' || (hash(i * 17 + ${k}) % ${20 + 40 * k})::VARCHAR AS cat${k}`),
    ...Array.from(
      { length: 3 },
      (_, k) => `list_transform(range((hash(i + ${k}) % 4)::BIGINT), j -> ((hash(i * 13 + j + ${k}) % 500)::INTEGER)) AS ids${k}`,
    ),
  ];
  await con.run(`COPY (
    SELECT ${cols.join(', ')}, i / ${rows}.0 AS t, (${u(0)} + ${u(9)} < 0.7)::INTEGER AS y FROM range(${rows}) r(i)
  ) TO '${file}' (FORMAT parquet)`);
  con.closeSync();
  instance.closeSync();
}

async function run(way: string, file: string, memoryMb: number, out: string): Promise<void> {
  const t0 = performance.now();
  let report;
  let rows = 0;
  if (way === 'in-memory') {
    const table = await readTable(file);
    rows = table.rowCount;
    report = await scoreTableAsync(table, OPTIONS);
  } else {
    const r = await scoreFileStreaming(file, OPTIONS, { memoryLimitMb: memoryMb, tempDir: path.dirname(file) });
    rows = r.rows;
    report = r.report;
  }
  await writeFile(out, JSON.stringify(report));
  console.log(
    JSON.stringify({
      way,
      rows,
      features: report.features.length,
      ...(way === 'streaming' ? { duckdbMemoryMb: memoryMb } : {}),
      seconds: Math.round((performance.now() - t0) / 100) / 10,
      // maxRSS is in KiB
      peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    }),
  );
}

export async function benchStreamingScore(rows: number, memoryMb: number): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'abacus-iv-bench-'));
  try {
    const file = path.join(dir, 'samples.parquet');
    await writeSamples(file, rows);
    const self = process.argv[1];
    // the bare process: Node with DuckDB loaded, nothing read
    execFileSync(process.execPath, [self, '--way', 'idle'], { stdio: 'inherit' });
    const outs: string[] = [];
    for (const way of ['streaming', 'in-memory']) {
      const out = path.join(dir, `${way}.json`);
      execFileSync(process.execPath, [self, '--way', way, file, String(memoryMb), out], { stdio: 'inherit' });
      outs.push(await readFile(out, 'utf8'));
    }
    console.log(JSON.stringify({ sameReport: outs[0] === outs[1] }));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const main =
    args[0] !== '--way'
      ? benchStreamingScore(Number(args[0] ?? 3_000_000), Number(args[1] ?? 256))
      : args[1] === 'idle'
        ? DuckDBInstance.create(':memory:').then((db) => {
            db.closeSync();
            console.log(JSON.stringify({ way: 'idle', peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) }));
          })
        : run(args[1], args[2], Number(args[3]), args[4]);
  main.catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
