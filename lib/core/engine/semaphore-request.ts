import type { ResolvedLockOptions } from '../options.js';
import { lockKeyOf, slotKey } from '../scripts/keys.js';
import type { AcquireRequest } from './acquire.js';
import type { EngineParts } from './parts.js';

/*
 * A semaphore's acquire request and the pure helpers around it: its slot keys, and how a key's use
 * is named in a LockUsageError. The slot search itself is in semaphore.ts.
 */

/** The semaphore part of an acquire request. */
export interface SemaphoreRequest {
  /** The semaphore's own key (the marker of its use). */
  readonly lockKey: string;
  readonly permits: number;
}

/** The slot keys of a semaphore, in the order every attempt proposes (0..k-1). */
export function slotKeys(lockKey: string, permits: number): string[] {
  return Array.from({ length: permits }, (_, i) => slotKey(lockKey, i));
}

/** The acquire request of a semaphore of `opts.permits` permits on `names[0]`. */
export function slotRequest(
  parts: EngineParts,
  names: readonly string[],
  opts: ResolvedLockOptions,
): AcquireRequest & { semaphore: SemaphoreRequest } {
  const lockKey = lockKeyOf(parts.options.keyPrefix, names[0]!);
  opts.signal?.throwIfAborted();
  const startedAt = parts.runtime.now();
  return {
    names,
    sorted: names,
    lockKeys: slotKeys(lockKey, opts.permits),
    ticket: opts.wait > 0 ? parts.clocks.ticket(startedAt) : '',
    startedAt,
    opts,
    semaphore: { lockKey, permits: opts.permits },
  };
}

/** How a key is used, for a {@link LockUsageError} (permits 0: as a read-write lock). */
export function describeUse(permits: number): string {
  if (permits === 0) return "as a read-write lock (mode 'read')";
  return permits === 1 ? 'as a plain lock (permits 1)' : `as a semaphore with permits ${permits}`;
}
