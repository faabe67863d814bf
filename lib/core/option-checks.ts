import { RedlockOptionsError } from './errors.js';

/*
 * The checks of single option values: each returns the value or throws a RedlockOptionsError that
 * names the option and says how to fix it (resolve-options.ts and node-checks.ts apply them).
 */

/**
 * A value for an error message. String() throws on an object without a usable toString (e.g.
 * `Object.create(null)` from a config parser), which would replace the RedlockOptionsError by a
 * TypeError that names no option.
 */
export function show(value: unknown): string {
  try {
    return String(value);
  } catch {
    return `a ${typeof value} without toString`;
  }
}

export function checkTtlWithinGuard(option: string, ttl: number, restartGuard: number): void {
  if (ttl > restartGuard) {
    throw new RedlockOptionsError(
      option,
      `${ttl} ms exceeds restartGuard ${restartGuard} ms`,
      'A node that restarts must stay out of quorums for at least the longest lease: raise `restartGuard` or lower the ttl.',
    );
  }
}

/**
 * The longest delay Node's timers take: a longer one fires after 1 ms (with a
 * TimeoutOverflowWarning), so a `wait`, `retryDelay` or `retryJitter` above it would end at once instead.
 */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Upper bound of `fenceIdleTtl` (10 years). It is not a timer, but it is written into the fence
 * script's source, where JavaScript prints 1e21 and above in exponent form, a PX that Redis
 * refuses: with `fenceIdleTtl: 1e21` the counters lost their clock seed (tokens 2, 3, ...).
 */
export const MAX_FENCE_IDLE_MS = 10 * 365 * 24 * 3600 * 1000;

export function positive(option: string, value: unknown, max = MAX_DELAY_MS): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max) {
    throw new RedlockOptionsError(
      option,
      `got ${show(value)}`,
      `Use a finite number of milliseconds above 0 and at most ${max}.`,
    );
  }
  return value;
}

/** maxHold is compared with the clock, never given to a timer: no upper bound, and Infinity is allowed. */
export function positiveOrInfinity(option: string, value: unknown): number {
  if (value === Infinity) return value;
  return positive(option, value, Number.MAX_VALUE);
}

export function nonNegative(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_DELAY_MS) {
    throw new RedlockOptionsError(
      option,
      `got ${show(value)}`,
      `Use a finite number of milliseconds, 0 or more and at most ${MAX_DELAY_MS}.`,
    );
  }
  return value;
}
