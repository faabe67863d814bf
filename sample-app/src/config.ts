/** Where the sample app keeps its accounts. */
export type StoreKind = 'postgres' | 'redis';

/** The Redis client the lock's nodes are reached with (REDIS_CLIENT). */
export type RedisClientKind = 'ioredis' | 'node-redis' | 'glide';

/** The sample app's settings, read from the environment once at start-up. */
export interface SampleConfig {
  /** HTTP port (PORT, default 3000). */
  readonly port: number;
  /** Lock nodes (REDLOCK_NODES: comma-separated redis:// URLs). Empty = start local nodes. */
  readonly lockNodes: string[];
  /**
   * The client the lock's nodes are reached with (REDIS_CLIENT: `ioredis`, `node-redis` or
   * `glide`). Default `ioredis`.
   */
  readonly redisClient: RedisClientKind;
  /**
   * The accounts' database (STORE: `postgres` or `redis`). Default `postgres`, or `redis` when
   * only STORE_URL is set.
   */
  readonly store: StoreKind;
  /** PostgreSQL for the accounts (DATABASE_URL). Unset with the postgres store = start a local one. */
  readonly databaseUrl: string | undefined;
  /** Redis for the accounts (STORE_URL). Unset with the redis store = start a local one. */
  readonly storeUrl: string | undefined;
  /** Name of this instance in logs and responses (INSTANCE, default the pid). */
  readonly instance: string;
  /** How often the settlement job runs, ms (SETTLEMENT_INTERVAL_MS, default 5000). */
  readonly settlementIntervalMs: number;
  /** Simulated latency of the payment provider, ms (PAYMENT_DELAY_MS, default 20). */
  readonly paymentDelayMs: number;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const lockNodes = (env.REDLOCK_NODES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const storeUrl = env.STORE_URL || undefined;
  const store = env.STORE || (storeUrl ? 'redis' : 'postgres');
  if (store !== 'postgres' && store !== 'redis')
    throw new Error(`STORE must be "postgres" or "redis", got "${store}"`);
  const redisClient = env.REDIS_CLIENT || 'ioredis';
  if (redisClient !== 'ioredis' && redisClient !== 'node-redis' && redisClient !== 'glide')
    throw new Error(`REDIS_CLIENT must be "ioredis", "node-redis" or "glide", got "${redisClient}"`);
  return {
    port: Number(env.PORT ?? 3000),
    lockNodes,
    redisClient,
    store,
    databaseUrl: env.DATABASE_URL || undefined,
    storeUrl,
    instance: env.INSTANCE ?? `pid-${process.pid}`,
    settlementIntervalMs: Number(env.SETTLEMENT_INTERVAL_MS ?? 5000),
    paymentDelayMs: Number(env.PAYMENT_DELAY_MS ?? 20),
  };
}
