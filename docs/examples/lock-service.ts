import { Injectable } from '@nestjs/common';
import { LockService, LockNotAcquiredError, type Lock } from 'nest-quorum-lock';

interface Inventory {
  reserve(sku: string, qty: number, fence: number): Promise<void>;
}

@Injectable()
export class StockService {
  constructor(
    private readonly locks: LockService,
    private readonly inventory: Inventory,
  ) {}

  // using(): acquire, auto-extend while the callback runs, release afterwards (also on errors).
  reserve(sku: string, qty: number): Promise<void> {
    return this.locks.using(`sku:${sku}`, (lock) => this.inventory.reserve(sku, qty, lock.fencingToken), {
      wait: 1000,
    });
  }

  // acquire(): a handle you manage yourself; `await using` releases it at the end of the block.
  async transfer(from: string, to: string): Promise<number> {
    await using lock = await this.locks.acquire([`sku:${from}`, `sku:${to}`], { ttl: 5000 });
    await lock.extend(5000); // need more time? extend (throws LockLostError if it was lost)
    return lock.fencingTokens[`sku:${to}`]!;
  }

  // tryAcquire(): null instead of an error when the lock is busy.
  async maybeCompact(): Promise<boolean> {
    const lock: Lock | null = await this.locks.tryAcquire('compaction');
    if (!lock) return false;
    try {
      return !lock.signal.aborted;
    } finally {
      await lock.release();
    }
  }

  isBusy(err: unknown): boolean {
    return err instanceof LockNotAcquiredError; // carries resources and retryAfterMs
  }
}
