import { Redis } from 'ioredis';
import { fencedReadRaisesTheToken } from '../../../docs/examples/fenced-reads.js';
import { FencedWriter, RedlockModule, LockService } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { Test } from '@nestjs/testing';

/*
 * docs/fencing.md, "A fenced read raises the token" (issue 40, item 8): the page's test, run as it
 * is on a real redis-server, and its advice on tokens from a real lock (large, from the nodes'
 * clocks: compare them, and give each test its own key).
 */
describe("docs/fencing.md: a fenced read raises the token (the page's test, on a real node)", () => {
  let redis: RedisNodes;
  let client: Redis;

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    client = new Redis(redis.url(0));
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.close();
  });

  test("the page's assertions hold: the read records its token, the older holder's write and read are refused", async () => {
    await fencedReadRaisesTheToken(client);
  });

  test("a real lock's tokens: a newer holder's read refuses the older holder's write; a made-up low token is refused on a key a real holder has read", async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const locks = app.get(LockService);
      const store = new FencedWriter(client);
      const older = await locks.acquire('account:9', { ttl: 1000 });
      await older.release();
      const newer = await locks.acquire('account:9', { ttl: 1000 });
      expect(newer.fencingToken).toBeGreaterThan(older.fencingToken);
      expect(newer.fencingToken).toBeGreaterThan(1e12); // seeded from the clock (microseconds)
      expect((await store.hgetall('account:9', newer.fencingToken)).accepted).toBe(true);
      expect(await store.hset('account:9', { balance: 1 }, older.fencingToken)).toEqual({
        accepted: false,
        lastToken: newer.fencingToken,
      });
      expect((await store.hset('account:9', { balance: 1 }, 8)).accepted).toBe(false);
      await newer.release();
    } finally {
      await app.close();
    }
  });
});
