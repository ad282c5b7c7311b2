import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { BackendKind } from '../model-spec.schema';
import { RuntimeModel } from '../runtime-model';
import { inPlaceRows, SUM_SPARSE_ADAM } from './in-place-parity';

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

/**
 * The same fine-tune repeated: twice from the checkpoint (each a fresh model loaded from it), twice in
 * place (each a fresh model given the trained one's state), on the in-place parity's data and spec.
 * Tells a fit that differs from run to run (nondeterministic) from two ways that differ from each other.
 */
export async function runFitRepeat(backend: BackendKind): Promise<Record<string, number>> {
  const { train, val } = inPlaceRows();
  const spec = SUM_SPARSE_ADAM;
  const dir = mkdtempSync(path.join(tmpdir(), 'abacus-fit-repeat-'));
  try {
    const base = RuntimeModel.create(spec, { backend });
    await base.train(train, { epochs: 1, batchSize: 512, seed: 1 });
    await base.save(dir);
    const fit = { epochs: 1, batchSize: 256, seed: 7, maxSteps: 60 };
    const fromCheckpoint = async () => {
      const m = await RuntimeModel.load(dir, { backend });
      await m.train(train, fit);
      return m.predict(val);
    };
    const inPlace = async () => {
      const m = RuntimeModel.create(spec, { backend });
      m.copyStateFrom(base);
      await m.train(train, fit);
      return m.predict(val);
    };
    const c1 = await fromCheckpoint();
    const c2 = await fromCheckpoint();
    const p1 = await inPlace();
    const p2 = await inPlace();
    // the base model itself trained twice from the same start
    const b2 = RuntimeModel.create(spec, { backend });
    await b2.train(train, { epochs: 1, batchSize: 512, seed: 1 });
    const b1p = await base.predict(val);
    const b2p = await b2.predict(val);
    return {
      checkpointVsCheckpoint: maxDiff(c1, c2),
      inPlaceVsInPlace: maxDiff(p1, p2),
      checkpointVsInPlace: maxDiff(c1, p1),
      baseVsBase: maxDiff(b1p, b2p),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
