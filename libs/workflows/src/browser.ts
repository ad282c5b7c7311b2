/**
 * The browser-safe entry of @abacus/workflows: the experiment schemas the api validates with, for
 * the web app to validate the same way before it submits. Every module reachable from here imports
 * only zod and other such modules, by file (never a barrel that pulls in TypeORM, NestJS or Node):
 * `browser.spec.ts` walks the import graph, and the web app's build refuses Node-only packages.
 */
export {
  createExperimentSchema,
  experimentListQuerySchema,
  type CreateExperiment,
  type ExperimentKind,
} from './experiments/experiment.schemas';
export { scoreSpecSchema, binningOptionsSchema } from './score/score-experiment.schema';
export { subtractSpecSchema } from './subtract/subtract-experiment.schema';
export { addSpecSchema } from './add/add-experiment.schema';
export { multiplySpecSchema, MULTIPLY_STRATEGIES, type MultiplyStrategy } from './multiply/multiply-experiment.schema';
export { divideSpecSchema, RESOURCES } from './divide/divide-experiment.schema';
export { discoverSpecSchema, DISCOVER_FAMILIES } from './discover/discover-experiment.schema';
export { modelRefSchema, architectureSchema, trainingSchema } from './model/model-recipe.schema';
export { lineName } from '../../core/src/line-name';
export { LARGE_TIER, tierAlias } from '../../core/src/tier-alias';
export { formatZodIssues, type ValidationIssue } from '../../core/src/zod-issues';
