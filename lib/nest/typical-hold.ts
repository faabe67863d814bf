import type { LockNotAcquiredError } from '../core/index.js';

/** Weight of the newest run in the running average: recent runs count most, one outlier little. */
const NEWEST_WEIGHT = 0.2;

/**
 * How long one `@DistributedLock` method typically holds its lock, from its runs in this process
 * (an exponentially weighted average of the time from the lock's grant to the method's end).
 * Instances of one app run the same code, so this is the best guess of how long another holder
 * of the same lock keeps it: the basis of a busy lock's Retry-After (see `contexts/retry-after.ts`).
 */
export class TypicalHold {
  private averageMs: number | undefined;

  record(ms: number): void {
    this.averageMs =
      this.averageMs === undefined ? ms : this.averageMs + NEWEST_WEIGHT * (ms - this.averageMs);
  }

  /** Undefined until the method has run once. */
  get ms(): number | undefined {
    return this.averageMs;
  }
}

/** A busy-lock error raised by a decorated method, with the typical hold of that method. */
const holdOfRaiser = new WeakMap<LockNotAcquiredError, number>();

/** Called by the decorator when its acquire found the lock busy. */
export function noteTypicalHold(err: LockNotAcquiredError, hold: TypicalHold): void {
  if (hold.ms !== undefined) holdOfRaiser.set(err, hold.ms);
}

/** The typical hold of the method whose acquire raised `err`, when it has run before. */
export function typicalHoldOf(err: LockNotAcquiredError): number | undefined {
  return holdOfRaiser.get(err);
}
