import type { LockNode } from './lock-node.js';
import { EXTEND, EXTEND_MANY } from './scripts.js';

interface PendingExtend {
  readonly keys: readonly string[];
  readonly value: string;
  readonly ttl: number;
  readonly resolve: (extended: number) => void;
  readonly reject: (err: unknown) => void;
}

/** Largest batch per script call: bounds how long one call keeps the node busy. */
const MAX_BATCH = 500;

/**
 * Coalesces the extensions requested of one node in the same tick into one script call, so that
 * N watchdogs ticking together cost one round trip per node instead of N.
 */
export class ExtendBatcher {
  private pending: PendingExtend[] = [];

  constructor(private readonly node: LockNode) {}

  /** Extends `keys` to `ttl` if they still hold `value`: resolves 1 (extended) or 0. */
  extend(keys: readonly string[], value: string, ttl: number): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(() => this.flush());
      this.pending.push({ keys, value, ttl, resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    for (let i = 0; i < batch.length; i += MAX_BATCH) this.send(batch.slice(i, i + MAX_BATCH));
  }

  private send(batch: PendingExtend[]): void {
    if (batch.length === 1) {
      const [only] = batch as [PendingExtend];
      (this.node.run(EXTEND, only.keys, [only.value, only.ttl]) as Promise<number>).then(
        only.resolve,
        only.reject,
      );
      return;
    }
    const keys: string[] = [];
    const args: Array<string | number> = [batch.length];
    for (const item of batch) {
      keys.push(...item.keys);
      args.push(item.keys.length, item.value, item.ttl);
    }
    (this.node.run(EXTEND_MANY, keys, args) as Promise<number[]>).then(
      (results) => batch.forEach((item, i) => item.resolve(results[i] ?? 0)),
      (err: unknown) => batch.forEach((item) => item.reject(err)),
    );
  }
}
