export * from './simulator/world.types';
export * from './simulator/sim-world.types';
export { simulateWorld } from './simulator/simulator.service';
export { simulateOptionsSchema, type SimulateOptions } from './simulator/simulate-options.schema';
export { FEATURE_CATALOG, DOMAIN_NAMES, type FeatureSpec } from './simulator/feature-catalog';
export { Prng } from './simulator/prng';
export { exactAuc } from './metrics/exact-auc';
export { writeWorld, type WorldManifest, type ManifestFile } from './simulator/world-writer';
