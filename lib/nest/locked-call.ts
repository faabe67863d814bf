import { AsyncResource } from 'node:async_hooks';
import { isObservable, Observable, type Subscriber, type TeardownLogic } from 'rxjs';
import { EngineClosedError, LockLostError, type Lock, type LockOptions } from '../core/index.js';
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
 * promise resolves at once to an Observable that keeps the lock until its subscription completes,
 * errors or is unsubscribed (NestJS unwraps a promise of an Observable), so that the stream runs
 * under the lock whose token and signal the method was given. One subscription runs under it; if
 * none comes before the lock's first validity would have ended (at most its ttl), the lock is
 * released, and a subscription then (or a second one) errors with LockLostError.
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
        let state: 'waiting' | 'subscribed' | 'over' = 'waiting';
        const boundMs = Math.max(0, lock.expiresAt - Date.now());
        const unclaimed = setTimeout(() => {
          if (state !== 'waiting') return;
          state = 'over';
          ended();
        }, boundMs);
        // Subscribed later by the caller: in the lock's async context all the same.
        const subscribe = AsyncResource.bind((subscriber: Subscriber<unknown>) => {
          if (state !== 'waiting') {
            const why =
              state === 'over'
                ? `nothing subscribed to the method's Observable within ${Math.round(boundMs)} ms, so the lock was released`
                : 'the lock it ran under belongs to the first subscription (subscribe once, or share() the stream)';
            subscriber.error(new LockLostError(resources, why));
            return;
          }
          state = 'subscribed';
          clearTimeout(unclaimed);
          return mirrorWhileHeld(lock, result, subscriber, () => {
            state = 'over';
            ended();
          });
        });
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
 * stream errors with LockLostError if the lock is lost meanwhile (EngineClosedError when shutdown
 * tells the work to stop). Unsubscribing while the acquire waits cancels the acquire.
 */
export function callLockedObservable(
  locks: LockService,
  resources: string[],
  options: LockOptions,
  invoke: LockedInvocation,
): Observable<unknown> {
  return new Observable((subscriber) => {
    let stop: (() => void) | undefined;
    const cancel = new AbortController();
    locks
      .using(
        resources,
        (lock) =>
          new Promise<void>((ended) => {
            if (cancel.signal.aborted) return ended();
            const source = new Observable((s) => {
              const result = invoke(lock);
              return (isObservable(result) ? result : promiseAsObservable(result)).subscribe(s);
            });
            stop = mirrorWhileHeld(lock, source, subscriber, ended);
          }),
        { watchdog: true, ...options, signal: cancel.signal },
      )
      .catch((err: unknown) => subscriber.error(err));
    return () => {
      // Still waiting for the lock: the acquire gives up (and leaves the queues).
      if (!stop) cancel.abort();
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
    // Released locks abort with an AbortError; a loss, or shutdown telling the work to stop, is an
    // error for the stream.
    const reason: unknown = lock.signal.reason;
    if (reason instanceof LockLostError || reason instanceof EngineClosedError) subscriber.error(reason);
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
