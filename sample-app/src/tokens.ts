/** Injection tokens of the sample app. */
export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');
export const STORE_REDIS = Symbol('STORE_REDIS');
