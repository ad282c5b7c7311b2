export { configSchema, isTimeZone, type AppConfig, type ConfigInput } from './config.schema';
export { loadConfig, ConfigError, sizeWorkerThreadPool, buildThreads, scoreThreads, scoreThreadsAlone, hostFits, hostBatchThreads } from './load-config';
export { parseHostAllowList, addressAllowed, isPublicAddress, webhookUrlProblem, type HostAllowList } from './webhook-target';
