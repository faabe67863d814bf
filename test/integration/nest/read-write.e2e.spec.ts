import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService, LockSignal, RedlockModule } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * The read-write lock example of docs/read-write-locks.md on real nodes: several app instances
 * (one Nest app each) read the catalog at once; a rebuild has it to itself.
 */

/** What every instance reports into (one process: the test reads it). */
const seen = {
  readers: 0,
  mostReaders: 0,
  writers: 0,
  overlaps: 0,
  writeTokens: [] as number[],
  /** Per read: its token, and the writes done when it was inside (reads and writes exclude each other). */
  reads: [] as Array<{ token: number; writesBefore: number[] }>,
};

@Injectable()
class PriceCatalog {
  // Any number of calls read at once, on every instance; a rebuild waits for them to finish.
  @DistributedLock('price-catalog', { mode: 'read', wait: 10_000 })
  async price(
    sku: string,
    @FencingToken() token?: number,
    @LockSignal() signal?: AbortSignal,
  ): Promise<number> {
    if (seen.writers > 0) seen.overlaps++;
    seen.reads.push({ token: token!, writesBefore: [...seen.writeTokens] });
    seen.mostReaders = Math.max(seen.mostReaders, ++seen.readers);
    await sleep(20);
    if (signal!.aborted) throw new Error('lost');
    seen.readers--;
    return token!;
  }

  // The writer: a plain lock of the same key.
  @DistributedLock('price-catalog', { wait: 10_000 })
  async rebuild(@FencingToken() token?: number): Promise<number> {
    if (seen.readers > 0 || seen.writers > 0) seen.overlaps++;
    seen.writers++;
    await sleep(10);
    seen.writers--;
    seen.writeTokens.push(token!);
    return token!;
  }

  @DistributedLock('price-catalog-skip', { mode: 'read', onBusy: 'skip' })
  async readOrSkip(): Promise<string | undefined> {
    return 'read';
  }
}

describe('@DistributedLock with mode read on real nodes (the docs example)', () => {
  let redis: RedisNodes;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    for (let i = 0; i < 3; i++) {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false })],
        providers: [PriceCatalog],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
    }
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.close();
  });

  test('3 instances read at once; rebuilds exclude them; read tokens lie between the writes around them', async () => {
    const calls = apps.flatMap((app) => {
      const catalog = app.get(PriceCatalog);
      return [
        ...Array.from({ length: 8 }, (_, i) => catalog.price(`sku-${i}`)),
        catalog.rebuild(),
        ...Array.from({ length: 4 }, (_, i) => catalog.price(`sku-late-${i}`)),
      ];
    });
    const tokens = await Promise.all(calls);
    console.log(
      `@DistributedLock mode read: ${tokens.length} calls, at most ${seen.mostReaders} readers at once`,
    );
    expect(tokens).toHaveLength(39);
    expect(seen.overlaps).toBe(0);
    expect(seen.mostReaders).toBeGreaterThan(1); // shared
    expect(seen.writeTokens).toHaveLength(3);
    const last = Math.max(...seen.writeTokens);
    // docs/read-write-locks.md: a read's token is at least the last write's before it and below
    // every write's after it. Not always a write's own: a writer's attempt that failed (the
    // instances' writers split the nodes) bumped the counter on the nodes that granted it, and a
    // reader's token is the highest counter of its majority (a bare-machine run saw 615 between the
    // writes 613 and 616).
    expect(seen.reads).toHaveLength(39 - 3);
    for (const { token, writesBefore } of seen.reads) {
      const after = seen.writeTokens.filter((t) => !writesBefore.includes(t));
      expect(token).toBeGreaterThanOrEqual(Math.max(0, ...writesBefore));
      expect(token).toBeLessThan(Math.min(Number.MAX_SAFE_INTEGER, ...after));
    }
    // After the writes, a read sees the last write's token.
    expect(await apps[0]!.get(PriceCatalog).price('after')).toBe(last);
  });

  test('onBusy skip for a reader while a writer holds; the LockService handle says the mode', async () => {
    const locks = apps[1]!.get(LockService);
    const writer = await locks.acquire('price-catalog-skip');
    expect(await apps[0]!.get(PriceCatalog).readOrSkip()).toBeUndefined();
    await writer.release();
    // The release is one-way: a read may still skip until it landed (at most 1 s; held, the
    // writer's key would stay for its 10 s ttl).
    const read = () => apps[0]!.get(PriceCatalog).readOrSkip();
    expect(await eventually(read, 'read', 1000)).toBe('read');
    const reader = await locks.acquire('price-catalog-skip', { mode: 'read' });
    expect(reader.mode).toBe('read');
    expect(await locks.inspect('price-catalog-skip')).toMatchObject({ held: true, mode: 'read', readers: 1 });
    await reader.release();
  });
});
