import type { ExtendRequest } from '../scripts/extend.js';
import type { Voter } from '../voter/voter-api.js';

/**
 * One lock's answer from one voter, as one number, so that a watchdog tick builds no object per
 * lock and voter: 1 extended, 0 not, when the reply carried no clock; with a clock reading (the
 * clock guard), the voter's clock in microseconds, negated when it did not extend the lock.
 */
export type ExtendOutcome = number;

/** Whether the voter extended the lock. */
export function wasExtended(outcome: ExtendOutcome): boolean {
  return outcome > 0;
}

/** The voter's clock in the reply, microseconds; undefined when it carried none. */
export function clockOf(outcome: ExtendOutcome): number | undefined {
  return outcome > 1 || outcome < 0 ? Math.abs(outcome) : undefined;
}

interface PendingExtend extends ExtendRequest {
  readonly resolve: (outcome: ExtendOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/** Largest batch per call: bounds how long one call keeps a voter busy. */
const MAX_BATCH = 500;

/**
 * Coalesces the extensions requested of one voter in the same tick into one call, so that N
 * watchdogs ticking together cost one round trip per voter instead of N.
 */
export class ExtendBatcher {
  private pending: PendingExtend[] = [];

  constructor(private readonly voter: Voter) {}

  /** Extends `keys` to `ttlMs` if they still hold `value` (see {@link ExtendOutcome}). */
  extend(keys: readonly string[], value: string, ttlMs: number): Promise<ExtendOutcome> {
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) void Promise.resolve().then(() => this.flush());
      this.pending.push({ keys, value, ttlMs, resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    for (let i = 0; i < batch.length; i += MAX_BATCH) this.send(batch.slice(i, i + MAX_BATCH));
  }

  private send(batch: PendingExtend[]): void {
    this.voter.extend(batch).then(
      (results) => {
        const clockUs = results.clockUs;
        for (let i = 0; i < batch.length; i++) {
          const extended = results[i] === true;
          batch[i]!.resolve(clockUs === undefined ? (extended ? 1 : 0) : extended ? clockUs : -clockUs);
        }
      },
      (err: unknown) => batch.forEach((item) => item.reject(err)),
    );
  }
}
