import { LockLostError, type Redlock } from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const lockKey = (r: string) => `redlock:{${r}}`;

describe('extend and release after expiry (S13)', () => {
  let cluster: TestCluster;
  let a: Redlock;
  let b: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    a = await cluster.engine({ nodeTimeout: 50 });
    b = await cluster.engine({ nodeTimeout: 50 });
  });
  afterAll(() => cluster?.close());

  /**
   * The lock key of `resource` on every node, once every node has one (at most 2 s): a round
   * decides on the first majority, the other votes may still be on their way.
   */
  async function everyNodeHas(resource: string): Promise<Array<string | null>> {
    const read = () =>
      Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).get(lockKey(resource))));
    await eventually(async () => (await read()).includes(null), false);
    return read();
  }

  test('extend after expiry throws LockLostError and leaves the new holder key intact', async () => {
    const old = await a.acquire('s13-extend', { ttl: 200 });
    await sleep(300);
    expect(old.signal.aborted).toBe(true);
    expect(old.signal.reason).toBeInstanceOf(LockLostError);
    const next = await b.acquire('s13-extend', { ttl: 5000 });
    await expect(old.extend(5000)).rejects.toBeInstanceOf(LockLostError);
    const values = await everyNodeHas('s13-extend');
    expect(new Set(values).size).toBe(1);
    expect(values[0]).not.toBeNull();
    expect(next.fencingToken).toBeGreaterThan(old.fencingToken);
    await next.extend(5000); // the new holder is unaffected
    await next.release();
  });

  test('release of an expired lock never deletes another holder key', async () => {
    const old = await a.acquire('s13-release', { ttl: 200 });
    await sleep(300);
    const next = await b.acquire('s13-release', { ttl: 5000 });
    await old.release();
    const values = await everyNodeHas('s13-release');
    expect(values.every((v) => v !== null)).toBe(true);
    await expect(a.acquire('s13-release')).rejects.toThrow(/held by another owner/);
    await next.release();
    await next.release(); // idempotent
  });

  test('extend keeps a lock beyond its first lease and moves expiresAt', async () => {
    const lock = await a.acquire('extend-ok', { ttl: 300 });
    const firstExpiry = lock.expiresAt;
    await sleep(150);
    await lock.extend(300);
    expect(lock.expiresAt).toBeGreaterThan(firstExpiry);
    await sleep(200); // past the first lease
    expect(lock.signal.aborted).toBe(false);
    await expect(b.acquire('extend-ok')).rejects.toThrow(/held by another owner/);
    await lock.release();
    expect(lock.signal.aborted).toBe(true);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  test('using() keeps the lock with the watchdog and releases it afterwards', async () => {
    const tokens: number[] = [];
    await a.using(
      'watchdog',
      async (lock) => {
        tokens.push(lock.fencingToken);
        await sleep(1000); // 5 x ttl
        expect(lock.signal.aborted).toBe(false);
        await expect(b.acquire('watchdog')).rejects.toThrow(/held by another owner/);
      },
      { ttl: 200 },
    );
    const values = await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).get(lockKey('watchdog'))),
    );
    expect(values).toEqual([null, null, null, null, null]);
  });

  test('maxHold stops the watchdog: the lock is lost when the bound is reached', async () => {
    const lock = await a.acquire('max-hold', { ttl: 200, maxHold: 400, watchdog: true });
    await sleep(800);
    expect(lock.signal.aborted).toBe(true);
    expect(String((lock.signal.reason as Error).message)).toMatch(/maxHold/);
    const next = await b.acquire('max-hold');
    await next.release();
  });

  test('nested using() on the same resource joins the held lock with the same token', async () => {
    const seen: number[] = [];
    await a.using('nested', async (outer) => {
      seen.push(outer.fencingToken);
      await a.using('nested', async (inner) => {
        seen.push(inner.fencingToken);
      });
      expect(outer.signal.aborted).toBe(false); // the inner call did not release it
    });
    expect(seen[0]).toBe(seen[1]);
  });
});
