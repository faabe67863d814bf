import type { Acquirer, AcquireRequest } from './acquire.js';
import type { SemaphoreUses } from './key-uses.js';
import type { Leases } from './leases.js';
import type { Lock } from './lock.js';
import type { EngineParts } from './parts.js';
import { SlotAcquirer } from './semaphore.js';
import type { SemaphoreRequest } from './semaphore-request.js';
import { retrySplit, waitForLock, type WaitExhausted } from './wait.js';
import type { WakeChannel } from './wake-channel.js';

/*
 * The acquires of keys that several holders share, for the engine (redlock.ts): a semaphore's and
 * a reader's of a read-write lock. A plain lock's acquire does not come here.
 */

/** A semaphore's acquire request (its `semaphore` set). */
type SemaphoreAcquireRequest = AcquireRequest & { semaphore: SemaphoreRequest };

/**
 * An acquire whose attempts are not the plain one: a semaphore's slot search (semaphore.ts), or a
 * reader's (the plain attempt with a reader's value: the voters run the readers' semantics for
 * it, scripts/read.ts). Their waiters are given turns, as waiters for several resources are: a
 * release lets the first waiter, or every reader at the head of the line, in.
 */
export class SharedAcquirer {
  private readonly slots: SlotAcquirer;

  constructor(
    private readonly parts: EngineParts,
    private readonly acquirer: Acquirer,
    leases: Leases,
    private readonly wakes: WakeChannel,
    /** The keys the engine uses as semaphores or read-write locks. */
    private readonly semaphores: SemaphoreUses,
    private readonly failure: WaitExhausted,
    /** Aborts when the engine shuts down. */
    private readonly shutdown: AbortSignal,
  ) {
    this.slots = new SlotAcquirer(parts, acquirer, leases);
  }

  /** The lock of a semaphore's or a reader's request. */
  take(request: AcquireRequest): Promise<Lock> {
    // Known as such while this acquire runs and its lock is held (the lock's end: Leases' onEnd).
    const [name] = request.names;
    this.semaphores.begin(name!, request.opts.permits, request.opts.mode);
    return this.attempts(request).catch((err: unknown) => {
      this.semaphores.end(name!);
      throw err;
    });
  }

  private attempts(request: AcquireRequest): Promise<Lock> {
    // The same request object for every attempt: the slot search keys its rounds by it, so that a
    // late give-back of an earlier attempt does not take back a slot a later one won.
    const attempt = request.semaphore
      ? (value: string) => this.slots.attempt(request as SemaphoreAcquireRequest, value)
      : (value: string) => this.acquirer.attempt(request, value);
    if (request.opts.wait > 0)
      return waitForLock(
        this.parts,
        this.acquirer,
        this.wakes,
        request,
        this.failure,
        this.shutdown,
        attempt,
      );
    const value = this.parts.values.next(false, request.opts.mode === 'read');
    return attempt(value).then((first) =>
      first.outcome === 'granted'
        ? first.lock
        : retrySplit(this.parts, () => attempt(value), request, first, this.failure, this.shutdown),
    );
  }
}
