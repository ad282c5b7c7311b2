import type { DataDir } from '@abacus/catalog';
import { readIdSpaces, type BuiltSet } from '../model/built-samples.cache';
import type { ModelInit } from '../model/model-trainer';
import type { ResolvedInit } from '../model/model-recipe.schema';
import { applySharedEmbedding } from './shared-embedding-file';

/** The initialisation of a recipe's models from its shared embedding (none when the recipe names none). */
export function recipeInit(dataDir: DataDir, recipe: { init?: ResolvedInit | null }, built: BuiltSet): ModelInit | undefined {
  const init = recipe.init;
  if (!init) return undefined;
  return {
    key: JSON.stringify({ embedding: init.embeddingId, sha256: init.sha256, freeze: init.freeze }),
    apply: async (model) => ({
      embedding: init.ref,
      freeze: init.freeze,
      slots: await applySharedEmbedding(model, readIdSpaces(dataDir, built), await dataDir.pull(init.file), init.freeze),
    }),
  };
}
