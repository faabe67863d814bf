import { AsyncResource } from 'node:async_hooks';
import { isObservable, Observable, type Subscriber, type TeardownLogic } from 'rxjs';
import type { Lock, LockOptions } from '../core/index.js';
import type { LockService } from './lock.service.js';

/*
 * How `@DistributedLock` runs a method under the lock, through LockService.using only: the lock
 * is taken before the call, extended by the watchdog while the method (or its Observable) runs,
 * and released when it is done. Nested acquisitions inside the method join the lock (using runs
 * it in the lock's async context).
 */

/** The method's call, given the lock it runs under. */
export type LockedInvocation = (lock: Lock) => unknown;

/**
 * Runs `invoke` under the lock and resolves with its result once the lock is released. If the
 * method returns an Observable after all (no declared return type to tell us in advance), the
 * promise resolves at once to an Observable that keeps the lock until it completes, errors or is
 * unsubscribed (NestJS unwraps a promise of an Observable).
 */
export async function callLockedAsync(
  locks: LockService,
  resources: string[],
  options: LockOptions,
  invoke: LockedInvocation,
): Promise<unknown> {
  let observable: Observable<unknown> | undefined;
  let handOut!: () => void;
  const handedOut = new Promise<void>((resolve) => (handOut = resolve));
  const call = locks.using(
    resources,
    async (lock) => {
      const result = await invoke(lock);
      if (!isObservable(result)) return result;
      await new Promise<void>((ended) => {
        // Subscribed later by the caller: in the lock's async context all the same.
        const subscribe = AsyncResource.bind((subscriber: Subscriber<unknown>) =>
          mirrorWhileHeld(lock, result, subscriber, ended),
        );
        observable = new Observable(subscribe);
        handOut();
      });
      return undefined;
    },
    { watchdog: true, ...options },
  );
  await Promise.race([call, handedOut]);
  return observable ?? call;
}

/**
 * For methods declared to return an Observable: returns one at once; the lock is taken when it is
 * subscribed, held until the method's Observable completes, errors or is unsubscribed, and the
 * stream errors with LockLostError if the lock is lost meanwhile.
 */
export function callLockedObservable(
  locks: LockService,
  resources: string[],
  options: LockOptions,
  invoke: LockedInvocation,
): Observable<unknown> {
  return new Observable((subscriber) => {
    let stop: (() => void) | undefined;
    let unsubscribed = false;
    locks
      .using(
        resources,
        (lock) =>
          new Promise<void>((ended) => {
            if (unsubscribed) return ended();
            const source = new Observable((s) => {
              const result = invoke(lock);
              return (isObservable(result) ? result : promiseAsObservable(result)).subscribe(s);
            });
            stop = mirrorWhileHeld(lock, source, subscriber, ended);
          }),
        { watchdog: true, ...options },
      )
      .catch((err: unknown) => subscriber.error(err));
    return () => {
      unsubscribed = true;
      stop?.();
    };
  });
}

/**
 * Mirrors `source` into `subscriber` while `lock` is held; errors the stream with the loss reason
 * if the lock is lost. The returned teardown stops it and calls `ended` (the lock is then released).
 */
function mirrorWhileHeld(
  lock: Lock,
  source: Observable<unknown>,
  subscriber: Subscriber<unknown>,
  ended: () => void,
): () => void {
  const onAbort = () => {
    // Released locks abort with an AbortError; only a loss is an error for the stream.
    const reason: unknown = lock.signal.reason;
    if (reason instanceof Error && reason.name === 'LockLostError') subscriber.error(reason);
  };
  lock.signal.addEventListener('abort', onAbort, { once: true });
  let inner: TeardownLogic;
  try {
    inner = source.subscribe(subscriber);
  } catch (err) {
    subscriber.error(err);
  }
  if (lock.signal.aborted) onAbort();
  return () => {
    lock.signal.removeEventListener('abort', onAbort);
    if (inner && typeof inner === 'object') inner.unsubscribe();
    ended();
  };
}

function promiseAsObservable(result: unknown): Observable<unknown> {
  return new Observable((s) => {
    Promise.resolve(result).then(
      (value) => {
        s.next(value);
        s.complete();
      },
      (err: unknown) => s.error(err),
    );
  });
}
