import type { Runtime } from '../runtime.js';
import type { HeldLock } from './held-lock.js';

/**
 * One timer per watchdog period, shared by every lock that uses that period: their extensions fall
 * in the same tick and go to each node as one batch (extend-batcher.ts). A period's timer stops when
 * its last watchdog does.
 */
export class WatchdogClock {
  private readonly periods = new Map<number, { readonly watchdogs: Set<() => void>; cancel: () => void }>();

  constructor(private readonly runtime: Runtime) {}

  /** Calls `onTick` every `periodMs` (with the other watchdogs of that period); returns its stop. */
  every(periodMs: number, onTick: () => void): () => void {
    let period = this.periods.get(periodMs);
    if (!period) {
      const created: { watchdogs: Set<() => void>; cancel: () => void } = {
        watchdogs: new Set(),
        cancel: () => undefined,
      };
      const arm = () => {
        created.cancel = this.runtime.setTimeout(() => {
          for (const tick of [...created.watchdogs]) tick();
          if (created.watchdogs.size > 0) arm();
        }, periodMs);
      };
      arm();
      this.periods.set(periodMs, (period = created));
    }
    const { watchdogs } = period;
    watchdogs.add(onTick);
    return () => {
      if (!watchdogs.delete(onTick) || watchdogs.size > 0) return;
      this.periods.get(periodMs)?.cancel();
      this.periods.delete(periodMs);
    };
  }
}

/**
 * Keeps a lock alive while its holder works: every `period` ms (default ttl / 3) it extends the
 * lease to `ttl`, never beyond `maxHold` after the grant, and never twice at once. An extension that
 * a majority refuses, or that fails with too little validity left for another try, marks the lock
 * lost (its signal aborts at once) and ends the watchdog: a lost lock is never re-taken. Returns the
 * stop, which the lock calls when it ends.
 */
export function startWatchdog(
  lock: HeldLock,
  maxHold: number,
  clock: WatchdogClock,
  runtime: Runtime,
  period = lock.ttl / 3,
): () => void {
  const holdEnd = runtime.now() + maxHold;
  const tick = Math.max(1, Math.floor(period));
  let extending = false;
  const stop = clock.every(tick, () => {
    const remaining = holdEnd - runtime.now();
    // The last extension reaches exactly maxHold; one shorter than a tick is not worth a round.
    if (remaining <= tick) {
      lock.maxHoldReached = true;
      return stop();
    }
    if (extending) return;
    // From a clamped extension on, maxHold decides when the lock ends.
    if (remaining <= lock.ttl) lock.maxHoldReached = true;
    extending = true;
    lock.extendFromWatchdog(Math.min(lock.ttl, remaining), tick).then(
      () => void (extending = false),
      () => stop(), // extend() already marked the lock lost and aborted its signal
    );
  });
  return stop;
}
