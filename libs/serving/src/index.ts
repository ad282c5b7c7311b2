export * from './serving.schemas';
export { activeWindow, decideTier, type ActiveWindow, type Decision, type Signals, type TierState } from './policy-engine';
export { ActiveTierCache, type ActiveTier } from './active-cache';
export { ServingService, SWITCH_EVENT, artifactLinks } from './serving.service';
export { ServingWebhookHandler } from './webhook-delivery.handler';
export { DeliverySweeper } from './delivery-sweeper';
