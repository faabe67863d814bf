import { isObservable, Observable, type Subscription } from 'rxjs';
import type { Lock } from '../core/lock.js';
import type { LockOptions } from '../core/options.js';
import type { Redlock } from '../core/redlock.js';

/**
 * Runs `invoke` while holding the lock and releases it when the returned promise settles. If the
 * method returns an Observable after all (no declared return type to tell us in advance), the
 * promise resolves to an Observable that keeps the lock until it completes, errors or is
 * unsubscribed (NestJS unwraps a promise of an Observable).
 */
export async function callLockedAsync(
  engine: Redlock,
  resources: string[],
  options: LockOptions | undefined,
  invoke: (lock: Lock) => unknown,
): Promise<unknown> {
  const lock = await engine.acquireWith(resources, options, true);
  let result: unknown;
  try {
    result = await engine.runHolding(lock, () => invoke(lock));
  } catch (err) {
    await lock.release();
    throw err;
  }
  if (isObservable(result)) return holdWhileSubscribed(engine, lock, () => result as Observable<unknown>);
  await lock.release();
  return result;
}

/**
 * For methods declared to return an Observable: returns one at once; the lock is taken when it is
 * subscribed, held until the method's Observable completes, errors or is unsubscribed, and the
 * stream errors with LockLostError if the lock is lost meanwhile.
 */
export function callLockedObservable(
  engine: Redlock,
  resources: string[],
  options: LockOptions | undefined,
  invoke: (lock: Lock) => unknown,
): Observable<unknown> {
  return new Observable((subscriber) => {
    let inner: Subscription | undefined;
    let lock: Lock | undefined;
    engine.acquireWith(resources, options, true).then(
      (acquired) => {
        lock = acquired;
        if (subscriber.closed) {
          void acquired.release();
          return;
        }
        inner = holdWhileSubscribed(engine, acquired, () => {
          const result = invoke(acquired);
          return isObservable(result)
            ? result
            : new Observable((s) => {
                Promise.resolve(result).then(
                  (value) => {
                    s.next(value);
                    s.complete();
                  },
                  (err: unknown) => s.error(err),
                );
              });
        }).subscribe(subscriber);
      },
      (err: unknown) => subscriber.error(err),
    );
    return () => {
      inner?.unsubscribe();
      if (!inner) void lock?.release();
    };
  });
}

/** Mirrors `source()` and releases `lock` when it ends; errors with the loss reason if the lock is lost. */
function holdWhileSubscribed(
  engine: Redlock,
  lock: Lock,
  source: () => Observable<unknown>,
): Observable<unknown> {
  return new Observable((subscriber) => {
    const onAbort = () => {
      // Released locks abort with an AbortError; only a loss is an error for the stream.
      if (lock.signal.reason instanceof Error && lock.signal.reason.name === 'LockLostError') {
        subscriber.error(lock.signal.reason);
      }
    };
    lock.signal.addEventListener('abort', onAbort, { once: true });
    let inner: Subscription | undefined;
    try {
      inner = engine.runHolding(lock, () => source().subscribe(subscriber));
    } catch (err) {
      subscriber.error(err);
    }
    if (lock.signal.aborted) onAbort();
    return () => {
      lock.signal.removeEventListener('abort', onAbort);
      inner?.unsubscribe();
      void lock.release();
    };
  });
}
