/** The sample app's settings, read from the environment once at start-up. */
export interface SampleConfig {
  /** HTTP port (PORT, default 3000). */
  readonly port: number;
  /** Lock nodes (REDLOCK_NODES: comma-separated redis:// URLs). Empty = start local nodes. */
  readonly lockNodes: string[];
  /** The application's database, a Redis (STORE_URL). */
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
  return {
    port: Number(env.PORT ?? 3000),
    lockNodes,
    storeUrl: env.STORE_URL || undefined,
    instance: env.INSTANCE ?? `pid-${process.pid}`,
    settlementIntervalMs: Number(env.SETTLEMENT_INTERVAL_MS ?? 5000),
    paymentDelayMs: Number(env.PAYMENT_DELAY_MS ?? 20),
  };
}
