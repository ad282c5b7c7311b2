export { configSchema, type AppConfig, type ConfigInput } from './config.schema';
export { loadConfig, ConfigError } from './load-config';
