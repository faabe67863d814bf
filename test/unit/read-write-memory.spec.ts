import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DistributedLock, LockService, LockUpgradeError, LockUsageError } from '../../lib/index.js';
import { RedlockTestingModule } from '../../lib/testing/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user's service: reads share the catalog, a rebuild has it alone. */
@Injectable()
class Catalog {
  readers = 0;
  mostReaders = 0;
  overlaps = 0;
  writing = false;

  @DistributedLock('catalog', { mode: 'read', wait: 5000 })
  async read(): Promise<void> {
    if (this.writing) this.overlaps++;
    this.mostReaders = Math.max(this.mostReaders, ++this.readers);
    await sleep(10);
    this.readers--;
  }

  @DistributedLock('catalog', { wait: 5000 })
  async rebuild(): Promise<void> {
    if (this.readers > 0 || this.writing) this.overlaps++;
    this.writing = true;
    await sleep(5);
    this.writing = false;
  }
}

describe('read-write locks on the in-memory voter (RedlockTestingModule)', () => {
  let moduleRef: TestingModule;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ ttl: 1000 })],
      providers: [Catalog],
    }).compile();
    await moduleRef.init();
  });
  afterAll(() => moduleRef?.close());

  test('@DistributedLock mode read: readers share, rebuilds exclude them, every call served', async () => {
    const catalog = moduleRef.get(Catalog);
    const calls = Array.from({ length: 12 }, (_, i) => (i % 4 === 3 ? catalog.rebuild() : catalog.read()));
    await Promise.all(calls);
    expect(catalog.overlaps).toBe(0);
    expect(catalog.mostReaders).toBeGreaterThan(1);
  });

  test('LockService: mode on the handle, inspect, join, upgrade error, and no read of a semaphore key', async () => {
    const locks = moduleRef.get(LockService);
    const one = await locks.acquire('shelf', { mode: 'read' });
    const two = await locks.acquire('shelf', { mode: 'read' });
    expect([one.mode, two.mode]).toEqual(['read', 'read']);
    expect(two.fencingToken).toBe(one.fencingToken);
    expect(await locks.tryAcquire('shelf')).toBeNull();
    expect(await locks.inspect('shelf')).toMatchObject({ held: true, mode: 'read', readers: 2 });
    await Promise.all([one.release(), two.release()]);
    const writer = await locks.acquire('shelf');
    expect(writer.fencingToken).toBeGreaterThan(one.fencingToken);
    await writer.release();
    await locks.using(
      'shelf',
      async (outer) => {
        expect((await locks.acquire('shelf', { mode: 'read' })).fencingToken).toBe(outer.fencingToken);
        await expect(locks.acquire('shelf')).rejects.toThrow(LockUpgradeError);
      },
      { mode: 'read' },
    );
    const sem = await locks.acquire('pool', { permits: 2 });
    await expect(locks.acquire('pool', { mode: 'read' })).rejects.toThrow(LockUsageError);
    await sem.release();
  });
});
