import { setTimeout as delay } from 'node:timers/promises';

/** Monotonic milliseconds (fractional). */
export const now = (): number => performance.now();

/** Resolves after `ms` (a timer: at least 1 ms, usually a little more). */
export const sleep = (ms: number): Promise<void> => delay(ms);

/**
 * Lets what ran before settle, so that a measurement does not pay for it: a full garbage
 * collection (the bench runs with --expose-gc) and a short pause in which timers left by the
 * previous library or benchmark run out. Called before each benchmark and before each library's
 * turn in B3, alike for every library.
 */
export async function settle(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await sleep(250);
  gc?.();
}

/** Latency summary in ms. */
export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentiles of `samples` (ms). NaN everywhere when there are none. */
export function summarise(samples: readonly number[]): Summary {
  const n = samples.length;
  if (n === 0) return { n, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (const s of sorted) sum += s;
  return { n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[n - 1]!, mean: sum / n };
}

/** Rounds a summary for the JSON report (µs precision is plenty). */
export function rounded(s: Summary): Summary {
  const r = (x: number) => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : x);
  return { n: s.n, p50: r(s.p50), p90: r(s.p90), p99: r(s.p99), max: r(s.max), mean: r(s.mean) };
}

/** Marker for a promise that did not settle within its cap. */
export const STALLED = Symbol('stalled');

/**
 * Races `promise` against a timer: resolves its value, or STALLED after `ms`. The promise keeps
 * running; a caller that gets STALLED decides what to do with it (rejections are not lost: the
 * returned promise rejects when `promise` rejects first).
 */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof STALLED> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<typeof STALLED>((resolve) => {
    timer = setTimeout(() => resolve(STALLED), ms);
  });
  return Promise.race([promise, cap]).finally(() => clearTimeout(timer));
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` in flight. */
export async function forEachLimited(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/**
 * Median of `values` (the mean of the two middle ones for an even count), NaN when empty. Each
 * benchmark reports the median of its rounds: one round that a burst of load from elsewhere on
 * the machine slowed down moves it less than it moves a mean or a pooled percentile.
 */
export function median(values: readonly number[]): number {
  const n = values.length;
  if (n === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const mid = n >> 1;
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Ratios of two contestants taken round by round: the median and the spread over the rounds. */
export interface PairedRatio {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly rounds: number;
}

/**
 * `numerators[i] / denominators[i]` for each round `i` both contestants ran in, summarised. The
 * two ran back to back in each round, so a ratio taken within a round cancels what drifts between
 * rounds (the machine's speed changed 2x between two runs on these VMs); its spread over the
 * rounds says how far a ratio of medians can be trusted, and whether a target missed or met by a
 * few percent is inside the noise.
 */
export function pairedRatio(numerators: readonly number[], denominators: readonly number[]): PairedRatio {
  const ratios: number[] = [];
  const n = Math.min(numerators.length, denominators.length);
  for (let i = 0; i < n; i++) ratios.push(numerators[i]! / denominators[i]!);
  if (ratios.length === 0) return { median: NaN, min: NaN, max: NaN, rounds: 0 };
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), rounds: n };
}

/** "per round: median 1.04x, 0.95-1.12x over 8 rounds" for a target's detail. */
export function describePaired(r: PairedRatio): string {
  return `per round: median ${r.median.toFixed(2)}x, ${r.min.toFixed(2)}-${r.max.toFixed(2)}x over ${r.rounds} rounds`;
}
