export * from './serving.schemas';
export { decideTier, type Decision, type Signals, type TierState } from './policy-engine';
