import type { ColumnarDataset, RuntimeModel } from '@abacus/runtime';

/**
 * AUC drop (base - permuted, mean over repeats) and logloss increase of each group on each fold:
 * drops.auc[g][k]. One runtime ablate call per fold covers all groups.
 */
export async function groupDrops(
  model: RuntimeModel,
  folds: ColumnarDataset[],
  groups: string[][],
  repeats: number,
  seed: number,
  onFold?: (k: number) => Promise<void>,
): Promise<{ auc: number[][]; logloss: number[][] }> {
  const auc = groups.map(() => [] as number[]);
  const logloss = groups.map(() => [] as number[]);
  for (let k = 0; k < folds.length; k++) {
    await onFold?.(k);
    const r = await model.ablate(folds[k], { groups, repeats, seed: seed + k });
    r.groups.forEach((g, i) => {
      auc[i].push(-g.auc.mean);
      logloss[i].push(g.logloss.mean);
    });
  }
  return { auc, logloss };
}
