import { InvalidInputError } from '@abacus/core';
import type { SampleSetEntity } from '@abacus/data';

/**
 * An experiment may only start on a sample set whose import found a binary label (stored label stats),
 * so a bad label is a 400 at submit naming the spec field, not a trial failing after its retries.
 */
export function requireBinaryLabel(ss: SampleSetEntity, path: string): void {
  const stats = ss.labelStats;
  if (!stats) {
    throw new InvalidInputError(
      path,
      `sample set ${ss.name} has no label statistics (imported before labels were checked): import it again so label "${ss.labelColumn}" is verified to be binary`,
    );
  }
  if (!stats.binary) {
    throw new InvalidInputError(
      path,
      `label "${ss.labelColumn}" of sample set ${ss.name} is not binary (values: ${stats.classes.join(', ')})`,
    );
  }
}

/** The event value named at import, when the label is not 0/1 or false/true (undefined: the default rule). */
export function explicitPositive(ss: SampleSetEntity): string | undefined {
  return ss.labelStats?.explicitPositive ? ss.labelStats.positive : undefined;
}
