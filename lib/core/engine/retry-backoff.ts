import type { ResolvedLockOptions } from '../options.js';
import type { Attempt } from './acquire.js';

/** Upper bound of the random back-off after acquirers collided (split votes), in ms. */
const MAX_COLLISION_BACKOFF_MS = 32;

/**
 * A queued waiter asks again at least this often even when nobody wakes it: the waiter ahead of
 * it may have died just as its turn came, and when that turn runs out nobody is woken.
 */
export const QUEUE_RECHECK_MS = 1000;

/**
 * How long to wait before the next attempt (a hand-over or a turn may end the wait earlier).
 * Held by someone: until the holder's lease ends on a majority. Votes split between acquirers
 * (nobody holds it): a short random back-off that doubles with each collision, so that one of
 * the colliding acquirers gets through instead of all retrying in step. No voter answered: the
 * configured retry delay. Each with jitter.
 */
export function pauseBeforeRetry(
  attempt: Exclude<Attempt, { outcome: 'granted' }>,
  opts: ResolvedLockOptions,
  collisions: number,
  random: () => number,
): number {
  const jitter = random() * opts.retryJitter;
  if (attempt.outcome === 'unavailable') return opts.retryDelay + jitter;
  if (attempt.contended) {
    const backoff = collisionBackoff(collisions, random);
    return attempt.retryAfterMs >= 0 ? Math.min(attempt.retryAfterMs, backoff) : backoff;
  }
  return attempt.retryAfterMs >= 0 ? attempt.retryAfterMs + jitter : opts.retryDelay + jitter;
}

/**
 * After the `collisions`-th split vote in a row: a random back-off that doubles with each, so that
 * one of the colliding acquirers gets through instead of all retrying in step.
 */
export function collisionBackoff(collisions: number, random: () => number): number {
  return random() * Math.min(MAX_COLLISION_BACKOFF_MS, 2 ** collisions);
}
