import { exhaustMap, from, interval, map, share, takeWhile, type Observable, type Subscription } from 'rxjs';
import type { HeldLock } from './held-lock.js';

/**
 * One RxJS `interval` per watchdog period, shared by every lock that uses that period: their
 * extensions then fall in the same tick and are sent to each node as one batch. An interval stops
 * when its last watchdog unsubscribes.
 */
export class WatchdogClock {
  private readonly ticks = new Map<number, Observable<number>>();

  tick(periodMs: number): Observable<number> {
    let ticks = this.ticks.get(periodMs);
    if (!ticks) {
      ticks = interval(periodMs).pipe(share());
      this.ticks.set(periodMs, ticks);
    }
    return ticks;
  }
}

/**
 * Keeps a lock alive while its holder works: every `period` ms (default ttl / 3) it extends the
 * lease to `ttl`, never beyond `maxHold` after the grant. An extension that a majority refuses,
 * or that fails with too little validity left for another try, marks the lock lost (its signal
 * aborts at once) and ends the watchdog: a lost lock is never re-taken. The caller
 * attaches the returned subscription to the lock, so it ends on release too.
 */
export function startWatchdog(
  lock: HeldLock,
  maxHold: number,
  clock = new WatchdogClock(),
  period = lock.ttl / 3,
): Subscription {
  const holdEnd = performance.now() + maxHold;
  const tick = Math.max(1, Math.floor(period));
  return clock
    .tick(tick)
    .pipe(
      map(() => holdEnd - performance.now()),
      // The last extension reaches exactly maxHold; one shorter than a tick is not worth a round.
      takeWhile((remaining) => {
        if (remaining > tick) return true;
        lock.maxHoldReached = true;
        return false;
      }),
      // An extension still in flight when the next tick comes is not doubled.
      exhaustMap((remaining) => {
        // From a clamped extension on, maxHold decides when the lock ends.
        if (remaining <= lock.ttl) lock.maxHoldReached = true;
        return from(lock.extendFromWatchdog(Math.min(lock.ttl, remaining), tick));
      }),
    )
    .subscribe({
      // extend() already marked the lock lost and aborted its signal; nothing else to do here.
      error: () => undefined,
    });
}
