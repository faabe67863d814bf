import { LockNotAcquiredError, QuorumUnavailableError, type RedlockError } from '../errors.js';
import type { LockEvents } from '../events.js';
import type { Voters } from '../quorum/voters.js';
import type { Runtime } from '../runtime.js';
import type { AcquireRequest, Attempt } from './acquire.js';
import { JoinedLock, type Lock } from './lock.js';

/*
 * What an acquire's caller and the event stream learn when it ends without a lock or while someone
 * listens (redlock.ts): the error of a failed acquire, and its acquired, busy or unavailable event.
 */

/** The error for an acquire that did not get the lock. */
export function acquireFailure(
  voters: Voters,
  attempt: Exclude<Attempt, { outcome: 'granted' }>,
  attempts: number,
  request: AcquireRequest,
): RedlockError {
  if (attempt.outcome === 'busy') {
    return new LockNotAcquiredError(request.names, attempt.retryAfterMs, attempts, attempt.why);
  }
  return new QuorumUnavailableError(
    request.names,
    voters.quorum,
    voters.list.length,
    attempt.failures,
    attempt.retryAfterMs,
  );
}

/** The lock `take` resolves with, its outcome emitted (acquired, busy or unavailable) with its duration. */
export function emitOutcome(events: LockEvents, runtime: Runtime, take: () => Promise<Lock>): Promise<Lock> {
  const started = runtime.now();
  return take().then(
    (lock) => {
      if (lock instanceof JoinedLock) return lock; // the enclosing holder's grant was counted
      const durationMs = runtime.now() - started;
      events.emit({
        type: 'acquired',
        resources: lock.resources,
        fencingToken: lock.fencingToken,
        durationMs,
      });
      return lock;
    },
    (err: unknown) => {
      const type =
        err instanceof LockNotAcquiredError
          ? 'busy'
          : err instanceof QuorumUnavailableError
            ? 'unavailable'
            : undefined;
      if (type) {
        const durationMs = runtime.now() - started;
        events.emit({ type, resources: (err as LockNotAcquiredError).resources, durationMs });
      }
      throw err;
    },
  );
}
