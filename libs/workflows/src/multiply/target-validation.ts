import { createHash } from 'node:crypto';
import { concatRows, sliceRows, slotOf } from '@abacus/runtime';
import { UNION_DOMAIN, validationRowCount, type SampleUnionResult } from '@abacus/samples';
import type { BuiltSet } from '../model/built-samples.cache';
import { VALIDATION_SHARE } from '../model/validation-split';

/**
 * multiply's validation split: the target's own rows only, the same rows for the baseline and every
 * arm. The built samples cache carves the last VALIDATION_SHARE of the training split, which for a
 * union would be borrowed and target rows mixed and a different cut for each set of sources; this
 * carves it again so that the validation split is the target's last `validation.rows` training rows
 * (the union file's validation start, see writeSampleUnion: borrowed rows at or after it were dropped
 * there, so these rows are the tail of the union's training split in time order), and the models fit
 * on every row before them. For the target alone it is the cut carveValidation makes.
 *
 * `targetDomainId`: the id of the target's rows in the domain slot, when the samples have one (their
 * validation rows are checked to be the target's).
 */
export async function carveTargetValidation<T extends BuiltSet>(
  built: T,
  validation: SampleUnionResult['validation'],
  targetDomainId: number | null,
): Promise<T> {
  const all = concatRows(built.train, built.validation);
  const n = all.rows;
  const nv = validation.rows;
  // only the domain column is read (for shards, gathered alone)
  const domain = all.slots.some((s) => s.name === UNION_DOMAIN) ? await slotOf(all, UNION_DOMAIN) : null;
  let targetRows = n;
  if (domain) {
    if (targetDomainId === null) throw new Error('multiply validation: the samples have a domain column but no target id');
    targetRows = 0;
    for (let r = 0; r < n; r++) {
      const isTarget = domain.ids[domain.offsets[r]] === targetDomainId;
      if (isTarget) targetRows++;
      else if (r >= n - nv) throw new Error(`multiply validation: training row ${r} of the last ${nv} is not the target's`);
    }
  }
  // the union file counted the target's training rows as the sample builder does
  if (validationRowCount(targetRows, VALIDATION_SHARE) !== nv) {
    throw new Error(
      `multiply validation: ${nv} validation rows for ${targetRows} target training rows (expected ${validationRowCount(targetRows, VALIDATION_SHARE)})`,
    );
  }
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 1, samples: built.key, targetValidation: { from: validation.from, rows: nv } }))
    .digest('hex')
    .slice(0, 32);
  return {
    ...built,
    key,
    // views of the shards (a copy in memory): the rows before the target's validation start, then its validation rows
    train: sliceRows(all, 0, n - nv),
    validation: sliceRows(all, n - nv, n),
  };
}
