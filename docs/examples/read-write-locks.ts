// Examples shown in docs/read-write-locks.md and the README. Type-checked by `npm run lint`; a test
// checks that every TypeScript block of the docs appears here verbatim.
import { Injectable } from '@nestjs/common';
import { DistributedLock, FencingToken, LockService, LockUpgradeError } from 'nest-quorum-lock';

interface PriceStore {
  read(sku: string, fence: number): Promise<number>;
  rebuild(fence: number): Promise<void>;
}

declare function exportPrices(fence: number): Promise<void>;

@Injectable()
export class PriceCatalog {
  constructor(private readonly store: PriceStore) {}

  // Any number of calls read at once, on every instance; a rebuild waits for them to finish.
  @DistributedLock('price-catalog', { mode: 'read', wait: 5_000 })
  async price(sku: string, @FencingToken() token?: number): Promise<number> {
    return this.store.read(sku, token!);
  }

  // The writer: a plain (exclusive) lock of the same key. While it waits, new readers queue
  // behind it; its release lets every reader queued behind it in at once.
  @DistributedLock('price-catalog', { wait: 30_000 })
  async rebuild(@FencingToken() token?: number): Promise<void> {
    await this.store.rebuild(token!);
  }
}

@Injectable()
export class PriceExport {
  constructor(private readonly locks: LockService) {}

  run(): Promise<void> {
    return this.locks.using(
      'price-catalog',
      async (lock) => {
        // lock.mode: 'read'. lock.fencingToken: at least the last rebuild's, below the next one's.
        await exportPrices(lock.fencingToken);
        // A read inside joins this one; a write inside would wait for itself: LockUpgradeError.
        await this.locks.acquire('price-catalog').catch((err: unknown) => {
          if (!(err instanceof LockUpgradeError)) throw err;
        });
      },
      { mode: 'read', wait: 5_000 },
    );
  }
}
