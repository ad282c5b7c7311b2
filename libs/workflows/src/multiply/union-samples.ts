import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { DataDir, OpenedSamples } from '@abacus/catalog';
import { writeSampleUnion, type SampleUnionResult } from '@abacus/samples';
import { VALIDATION_SHARE } from '../model/validation-split';
import type { UnionPartParams } from './multiply-experiment.schema';

/**
 * multiply/<hash of (sets, data versions, columns, test start, validation share)>/samples.parquet,
 * relative to the data directory
 */
export function unionFile(parts: UnionPartParams[], columns: string[], testFrom: number): string {
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 3, parts, columns, testFrom, validationShare: VALIDATION_SHARE }))
    .digest('hex')
    .slice(0, 32);
  return path.join('multiply', key, 'samples.parquet');
}

/**
 * The union file of target and borrowed sets, written once (trials of one experiment, and of later
 * experiments on the same data, reuse it; with a deployment store, on every host: it is stored, and
 * read from the store by a host that lacks it); its leakage counts are kept beside it. `cached`: it
 * was there already.
 *
 * Leakage: borrowed rows at or after the target's test start are dropped, and so are those at or after
 * its validation start (the first of the target's last VALIDATION_SHARE training rows), so that every
 * model of the experiment fits on rows before the target's validation split and is judged on the same
 * target rows (see carveTargetValidation).
 */
export async function ensureUnion(
  dataDir: DataDir,
  rel: string,
  parts: UnionPartParams[],
  columns: string[],
  testFrom: number,
  /**
   * where this host reads a part's rows (SampleSetData.open: an upload's file, pulled from the
   * deployment's store when another host took it; a set registered by reference, through the host's
   * cache); without it, uploads in this data directory
   */
  open?: (part: UnionPartParams) => Promise<OpenedSamples>,
): Promise<SampleUnionResult & { cached: boolean }> {
  const file = dataDir.abs(rel);
  const metaRel = path.join(path.dirname(rel), 'union.json');
  const meta = dataDir.abs(metaRel);
  const stored = () => ({ ...(JSON.parse(fs.readFileSync(meta, 'utf8')) as SampleUnionResult), cached: true });
  if (fs.existsSync(file) && fs.existsSync(meta)) {
    // a use of this host's copies (they may be local copies of the store's)
    await dataDir.pull(rel);
    await dataDir.pull(metaRel);
    return stored();
  }
  // written by another host: from the deployment's store (its counts are stored after the file)
  if (dataDir.shared && (await dataDir.exists(metaRel)) && (await dataDir.exists(rel))) {
    await dataDir.pull(rel);
    await dataDir.pull(metaRel);
    return stored();
  }
  const opened: OpenedSamples[] = [];
  let result: SampleUnionResult;
  try {
    for (const p of parts) {
      if (open) opened.push(await open(p));
      else {
        await dataDir.pull(p.file);
        opened.push({ path: dataDir.abs(p.file), fetchedBytes: 0, objects: 1, release: () => undefined });
      }
    }
    result = await writeSampleUnion(
      {
        parts: parts.map((p, i) => ({
          domain: p.domain,
          file: opened[i]!.path,
          label: p.label,
          positive: p.positive,
          time: p.time,
        })),
        columns,
        testFrom,
        validationShare: VALIDATION_SHARE,
      },
      file,
    );
  } finally {
    for (const o of opened) o.release();
  }
  const tmp = `${meta}.${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(result, null, 2));
  fs.renameSync(tmp, meta);
  // for the other hosts (the same bytes whichever host writes it): the file, then its counts
  await dataDir.push(rel);
  await dataDir.push(metaRel);
  return { ...result, cached: false };
}
