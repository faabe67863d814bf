import type { Acquirer, AcquireRequest, Attempt } from './acquire.js';
import { SingleResourceWaiter } from './hand-over.js';
import type { HeldLock } from './held-lock.js';
import type { EngineParts } from './parts.js';
import { sleep } from '../runtime.js';
import { collisionBackoff, pauseBeforeRetry, QUEUE_RECHECK_MS } from './retry-backoff.js';
import type { WakeChannel } from './wake-channel.js';
import type { WakeSubscription } from './wake-subscription.js';

/** The error for the last failed attempt when the caller's `wait` ran out (the engine words it). */
export type WaitExhausted = (
  attempt: Exclude<Attempt, { outcome: 'granted' }>,
  attempts: number,
  request: AcquireRequest,
) => Error;

/**
 * True when the voters said the quorum cannot vote again before the wait runs out (voters
 * abstaining under the restart guard know until when): waiting on is in vain, so the caller is told
 * at once, with the time until it does. A busy lock is always waited for: holders usually release
 * long before their lease ends. Voters that are down tell nothing (retryAfterMs undefined).
 */
function quorumBackTooLate(attempt: Exclude<Attempt, { outcome: 'granted' }>, remainingMs: number): boolean {
  return (
    attempt.outcome === 'unavailable' &&
    attempt.retryAfterMs !== undefined &&
    attempt.retryAfterMs > remainingMs
  );
}

/**
 * Waits for a busy lock, up to the request's `wait`: attempts (acquire.ts) until one is granted,
 * a voter hands the lock over, or the wait runs out. Between attempts the caller waits in line:
 * each attempt queued it on the voters by its ticket, and a release hands the lock to the first
 * in line and tells only it (wake-channel.ts). A waiter for one resource takes a lock handed over
 * by a majority without an attempt of its own (single-resource-waiter.ts); others try again when a
 * majority gave them their turn, when the holder's lease should have run out, or at the latest
 * every QUEUE_RECHECK_MS. Resolves with the lock; rejects with `exhausted`'s error when the wait
 * ran out, or at once when the quorum is unavailable until after it would (quorumBackTooLate).
 */
export async function waitForLock(
  parts: EngineParts,
  acquirer: Acquirer,
  wakes: WakeChannel,
  request: AcquireRequest,
  exhausted: WaitExhausted,
  /** Aborts (with EngineClosedError) when the engine shuts down: the wait ends, its queues left. */
  shutdown: AbortSignal,
  /**
   * Another kind of attempt (a semaphore's, or a reader's: their waiters are given turns, as for
   * several resources).
   */
  attempter?: (value: string) => Promise<Attempt>,
): Promise<HeldLock> {
  const { opts } = request;
  const firstValue = parts.values.next(
    request.names.length > 1 || attempter !== undefined,
    request.opts.mode === 'read',
  );
  const single =
    request.names.length === 1 && !attempter
      ? new SingleResourceWaiter(parts, acquirer, request, firstValue)
      : undefined;
  const value = () => single?.value ?? firstValue;
  const deadline = parts.runtime.now() + opts.wait;
  let subscription: WakeSubscription | undefined;
  let attempts = 0;
  let collisions = 0;
  let granted = false;
  /** The attempt just made followed a hand-over that did not count. */
  let handedInVain = false;
  try {
    for (;;) {
      opts.signal?.throwIfAborted();
      shutdown.throwIfAborted();
      attempts++;
      const listening = wakes.listening;
      const attempt = await (attempter
        ? attempter(value())
        : acquirer.attempt(request, value(), single?.follow()));
      if (attempt.outcome === 'granted') {
        granted = true;
        return attempt.lock;
      }
      shutdown.throwIfAborted();
      if (single?.renamed) {
        // Hand-overs to the retired value are not ours to count any more.
        single.renamed = false;
        subscription?.close();
        subscription = undefined;
      }
      const remaining = deadline - parts.runtime.now();
      if (remaining <= 0 || quorumBackTooLate(attempt, remaining))
        throw exhausted(attempt, attempts, request);
      // The first attempt did not queue when no voter's clock was known: its busy replies told
      // them, so the ticket is now the voters' time when the acquire started; queue at once.
      const queueNow =
        request.ticket === '' && (request.ticket = parts.clocks.ticket(request.startedAt)) !== '';
      if (queueNow) continue;
      if (!subscription) {
        // The attempt queued us: listen for our turn. A wake-up that arrived before this is kept
        // for us by the channel, unless the channel was not subscribed yet when we were queued:
        // then it went to nobody, so once subscribed, try again at once.
        subscription = wakes.register(value());
        if (!listening) {
          await wakes.ready();
          continue;
        }
      }
      collisions = attempt.outcome === 'busy' && attempt.contended ? collisions + 1 : 0;
      const pause = pauseBeforeRetry(attempt, opts, collisions, () => parts.runtime.random());
      const resumeAt = parts.runtime.now() + Math.min(pause, remaining, QUEUE_RECHECK_MS);
      let wake = await subscription.wait(resumeAt - parts.runtime.now(), opts.signal, shutdown);
      for (;;) {
        if (wake === 'aborted') {
          opts.signal?.throwIfAborted();
          shutdown.throwIfAborted();
        }
        if (wake !== 'handed' || !single) {
          handedInVain = false;
          break;
        }
        const lock = await single.takeHandOffs(subscription.handedOver());
        if (lock) {
          granted = true;
          return lock;
        }
        // Not countable (e.g. a voter's clock unknown): the next attempt takes what was handed, at
        // once the first time. When that attempt failed too, the hand-overs that follow are mostly
        // our own (its clean-up renamed us, and the voters where we were first handed the lock to
        // the new name): trying at once again would loop on attempt, rename, hand-over. So until
        // the pause ends, only hand-overs that count end the wait.
        const left = resumeAt - parts.runtime.now();
        if (!handedInVain || left <= 0) {
          handedInVain = true;
          break;
        }
        wake = await subscription.wait(left, opts.signal, shutdown);
      }
    }
  } finally {
    subscription?.close();
    // Gave up (wait ran out, aborted, voters down): leave the queues, so that nobody waits for
    // us and the next waiter's turn starts at once if ours had come.
    if (!granted && attempts > 0) void parts.voters.letGo(request.lockKeys, value(), { op: 'leave-queue' });
  }
}

/** How many times a fail-fast acquire whose vote split is made again, at most (222 ms of back-off). */
const SPLIT_RETRIES = 10;

/**
 * A fail-fast acquire (`wait: 0`) after its first attempt failed: the caller's error at once,
 * unless the vote split between acquirers that came at the same moment (nobody holds the lock;
 * without a retry each gives back its minority and fails, and nobody runs: a cron tick on several
 * instances). Then it is made again after the collision back-off while it splits, at most
 * SPLIT_RETRIES times, until the engine shuts down or the caller's signal aborts.
 */
export async function retrySplit(
  parts: EngineParts,
  /** Makes the attempt again (a mutex's with a new value; a semaphore's or a reader's with its own). */
  again: () => Promise<Attempt>,
  request: AcquireRequest,
  first: Exclude<Attempt, { outcome: 'granted' }>,
  exhausted: WaitExhausted,
  shutdown: AbortSignal,
): Promise<HeldLock> {
  let attempt = first;
  let attempts = 1;
  while (attempt.outcome === 'busy' && attempt.split && attempts <= SPLIT_RETRIES) {
    const pause = collisionBackoff(attempts, () => parts.runtime.random());
    await sleep(parts.runtime, pause);
    request.opts.signal?.throwIfAborted();
    if (shutdown.aborted) break;
    const next = await again();
    attempts++;
    if (next.outcome === 'granted') return next.lock;
    attempt = next;
  }
  throw exhausted(attempt, attempts, request);
}
