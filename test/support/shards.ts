import path from 'node:path';
import { sliceDataset } from '../../libs/runtime/src/bench/synthetic-ctr';
import type { ColumnarDataset } from '../../libs/runtime/src/dataset.types';
import { openShards, writeShard } from '../../libs/runtime/src/shard-format';

/** `d` written as shard files of the given row counts under `dir` (named `<tag>-<i>.shard`), then opened (mapped). */
export async function asShards(dir: string, d: ColumnarDataset, sizes: number[], tag: string) {
  const files: string[] = [];
  let at = 0;
  for (const [i, n] of sizes.entries()) {
    const f = path.join(dir, `${tag}-${i}.shard`);
    await writeShard(f, sliceDataset(d, at, at + n));
    files.push(f);
    at += n;
  }
  return openShards(files);
}
