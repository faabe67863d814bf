import { randomBytes } from 'node:crypto';

/**
 * Time, timers and randomness of one engine: every clock read, timer, deferral and random draw in
 * `lib/core` goes through the runtime the engine was built with (an eslint rule keeps it so), so
 * that the deterministic simulation can run the real engine in virtual time from a seed.
 */
export interface Runtime {
  /** Monotonic milliseconds (fractional): durations, deadlines, the order of events. */
  now(): number;
  /** Epoch milliseconds of the wall clock: only for values shown to people (`expiresAt`, logs). */
  wallNow(): number;
  /** Calls `fire` after `ms`, unless the returned function is called first. Keeps no process alive. */
  setTimeout(fire: () => void, ms: number): () => void;
  /** Calls `fire` once the I/O already received has been handled (Node's setImmediate). */
  defer(fire: () => void): void;
  /**
   * Calls `fire` at the end of the current tick: after the promise continuations it started, before
   * the event loop reads I/O or fires timers (Node's process.nextTick). A write-batching window.
   */
  endOfTick(fire: () => void): void;
  /** A uniform random number in [0, 1). */
  random(): number;
  /** `bytes` random bytes as base64url text (lock values' engine prefix). */
  randomText(bytes: number): string;
}

/** The real clocks, timers and `crypto` (the default runtime). */
export const realRuntime: Runtime = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout(fire, ms) {
    const timer = setTimeout(fire, Math.max(0, ms)).unref();
    return () => clearTimeout(timer);
  },
  defer: (fire) => void setImmediate(fire),
  endOfTick: (fire) => process.nextTick(fire),
  random: () => Math.random(),
  randomText: (bytes) => randomBytes(bytes).toString('base64url'),
};

/** What {@link settleWithin} resolves with when the time ran out first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Resolves with `promise`'s value, or with {@link TIMED_OUT} when `ms` pass first (a rejection is
 * passed on): a node that is down or paused must not hang a PING, a QUIT or a SUBSCRIBE.
 */
export function settleWithin<T>(
  runtime: Runtime,
  promise: Promise<T>,
  ms: number,
): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    const cancel = runtime.setTimeout(() => resolve(TIMED_OUT), ms);
    promise.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (err: unknown) => {
        cancel();
        reject(err);
      },
    );
  });
}

/** Resolves after `ms` on `runtime`'s clock. */
export function sleep(runtime: Runtime, ms: number): Promise<void> {
  return new Promise((resolve) => runtime.setTimeout(resolve, ms));
}
