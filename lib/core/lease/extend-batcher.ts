import type { ExtendRequest } from '../scripts/index.js';
import type { Voter } from '../voter/voter.js';

interface PendingExtend extends ExtendRequest {
  readonly resolve: (extended: boolean) => void;
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

  /** Extends `keys` to `ttlMs` if they still hold `value`. */
  extend(keys: readonly string[], value: string, ttlMs: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(() => this.flush());
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
      (results) => batch.forEach((item, i) => item.resolve(results[i] === true)),
      (err: unknown) => batch.forEach((item) => item.reject(err)),
    );
  }
}
