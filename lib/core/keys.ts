/** Suffixes of the keys kept beside a lock key, under its hash tag (the scripts derive them). */
export const FENCE_SUFFIX = ':fence';
export const QUEUE_SUFFIX = ':queue';

/**
 * Last character of the lock values of acquires over several resources. A release hands a lock to
 * a waiter for one resource directly, and gives a waiter with this mark a turn to claim instead.
 */
export const MULTI_RESOURCE_MARK = '*';

/** Channel prefix that wakes an engine's waiters (+ the engine's random value prefix). */
export const WAKE_CHANNEL_PREFIX = '__redlock_wake__:';

/**
 * Key names. Each resource gets its own hash tag, so the keys kept beside its lock key (fence
 * counter, queue) hash to the same slot as the lock key.
 */
export class KeySpace {
  /** The restart-guard marker: one per node, never expires. */
  readonly guardMarker: string;

  constructor(readonly prefix: string) {
    this.guardMarker = `${prefix}__restart_guard__`;
  }

  lock(resource: string): string {
    return `${this.prefix}{${resource}}`;
  }
}
