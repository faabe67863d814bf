/**
 * Benchmark settings, read once from the environment so that a quick run is one variable away:
 * `BENCH_SCALE=0.1 npm run bench -- B1 B3` runs a tenth of every op count and duration.
 */
export interface BenchConfig {
  /** Multiplier of every op count and duration below (BENCH_SCALE, default 1). */
  readonly scale: number;
  /** Libraries to run, by id (BENCH_LIBS, comma separated; default: ours and every peer). */
  readonly libraries: readonly string[] | undefined;
  /**
   * The dist/ directory of another build of this library (`--baseline <dir>` or BENCH_BASELINE),
   * run as one more column, `ours@baseline`, in the same interleaved rounds as the current build.
   */
  readonly baseline: string | undefined;
  /** Lease of every lock in B1-B5, ms. The same for every library. */
  readonly ttl: number;
  /** How long an acquire may wait for a busy lock, ms: the same generous budget for every library. */
  readonly wait: number;
  /** Our per-node timeout, ms (also the B5 latency bound). */
  readonly nodeTimeout: number;
  /**
   * B1, B2, B3 and B8 split each library's run into `rounds` slices and alternate the libraries
   * between slices, so that a burst of load from elsewhere on the machine hits all of them alike;
   * they report the median of the rounds.
   */
  readonly rounds: number;
  readonly b1: { readonly ops: number; readonly warmup: number };
  readonly b2: { readonly loops: number; readonly seconds: number; readonly warmupSeconds: number };
  readonly b3: {
    readonly clients: number;
    readonly seconds: number;
    readonly workMs: number;
    readonly pauseMs: number;
  };
  /** First grants: `ops` acquire + release on never-used keys, and as many on one warm key. */
  readonly b8: { readonly ops: number; readonly warmup: number };
  /** Semaphores: `clients` on one key of `permits`, each holding `holdMs`, pausing `pauseMs`. */
  readonly b9: {
    readonly clients: number;
    readonly permits: number;
    readonly seconds: number;
    readonly holdMs: number;
    readonly pauseMs: number;
  };
  readonly b5: {
    readonly ops: number;
    /** Upper bound of one library's run while the node is stopped, s (a stalling peer must not stall the bench). */
    readonly budgetSeconds: number;
    /** An acquire or release that has not settled after this many ms counts as stalled. */
    readonly stallMs: number;
  };
  readonly b6: {
    readonly locks: number;
    readonly seconds: number;
    readonly ttl: number;
    readonly concurrency: number;
  };
  /** Readers' throughput on one key: `loops` loops, each hold `holdMs` of work. */
  readonly b10: {
    readonly loops: number;
    readonly seconds: number;
    readonly warmupSeconds: number;
    readonly holdMs: number;
  };
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`${name}=${raw} is not a positive number`);
  }
  return value;
}

/**
 * Reads the configuration; throws on malformed values (a typo must not silently run the defaults).
 * `baseline` is the `--baseline` argument, which wins over BENCH_BASELINE.
 */
export function readConfig(baseline?: string): BenchConfig {
  const scale = envNumber('BENCH_SCALE', 1);
  const count = (n: number, min = 1) => Math.max(min, Math.round(n * scale));
  const seconds = (s: number, min = 0.5) => Math.max(min, s * scale);
  const libs = process.env.BENCH_LIBS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    scale,
    libraries: libs && libs.length > 0 ? libs : undefined,
    baseline: baseline ?? (process.env.BENCH_BASELINE || undefined),
    ttl: 10_000,
    wait: 10_000,
    nodeTimeout: 100,
    rounds: Math.round(envNumber('BENCH_ROUNDS', 5)),
    b1: { ops: count(5_000, 50), warmup: count(500, 20) },
    b2: { loops: 64, seconds: seconds(10), warmupSeconds: seconds(1, 0.2) },
    b3: { clients: 16, seconds: seconds(10, 1), workMs: 1, pauseMs: 5 },
    b8: { ops: count(2_000, 50), warmup: count(200, 20) },
    b9: { clients: 32, permits: 8, seconds: seconds(10, 1), holdMs: 2, pauseMs: 1 },
    b5: {
      ops: count(1_000, 20),
      budgetSeconds: envNumber('BENCH_B5_BUDGET_SECONDS', seconds(120, 10)),
      stallMs: 12_000,
    },
    b6: {
      locks: Math.round(envNumber('BENCH_B6_LOCKS', 10_000)),
      // BENCH_B6_SECONDS, when set, wins over BENCH_SCALE (at least 3 s: a tick is ttl / 3 = 1 s).
      seconds: envNumber('BENCH_B6_SECONDS', seconds(30, 3)),
      ttl: 3_000,
      concurrency: 128,
    },
    b10: { loops: 16, seconds: seconds(6, 1), warmupSeconds: seconds(1, 0.2), holdMs: 2 },
  };
}
