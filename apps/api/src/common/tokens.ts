/** DI token of the parsed AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
