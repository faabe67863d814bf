import { LockNotAcquiredError, type Lock, type Redlock } from '../../../lib/index.js';
import { TestCluster, severConnections, sleep } from '../../support/cluster.js';
import { commandStats } from '../../support/commandstats.js';
import { eventually } from '../../support/eventually.js';
import { apartFrom, ticketErrorMs, waiting } from '../../support/waiting-line.js';

const lockKey = (r: string) => `redlock:{${r}}`;
const queueKey = (r: string) => `${lockKey(r)}:queue`;
/** The engine's value in the lock key (what a turn names). */
const lockValue = (lock: Lock) => (lock as unknown as { value: string }).value;

/** Calls of the engine's scripts (EVALSHA) a node has served since the last CONFIG RESETSTAT. */
async function scriptCalls(cluster: TestCluster, node: number): Promise<number> {
  return (await commandStats(cluster.redis.client(node), 'evalsha')).calls;
}

describe('waiting in line: first come, first served, one waiter woken per release', () => {
  let cluster: TestCluster;
  let holder: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    holder = await cluster.engine();
  });
  afterAll(() => cluster?.close());

  /**
   * Starts `count` engines waiting for `resource`, one after the other: each asks once the one
   * before is in line and heard on every node, and their tickets cannot be out of order
   * (waiting-line.ts).
   */
  async function queueUp(resource: string, count: number, options: { wait: number; ttl?: number }) {
    const waiters: Array<{ engine: Redlock; lock: Promise<Lock> }> = [];
    let asked = { at: 0, errorMs: 0 };
    for (let i = 0; i < count; i++) {
      const engine = await cluster.engine();
      const errorMs = ticketErrorMs(engine);
      await apartFrom(asked.at, asked.errorMs + errorMs);
      asked = { at: performance.now(), errorMs };
      const lock = engine.acquire(resource, options);
      lock.catch(() => undefined); // a failed test must not leave an unhandled rejection behind
      waiters.push({ engine, lock });
      await waiting(cluster, engine, resource, i + 1);
    }
    return waiters;
  }

  test('waiters get the lock in the order they asked for it', async () => {
    const first = await holder.acquire('fifo', { ttl: 10_000 });
    const waiters = await queueUp('fifo', 5, { wait: 8000 });
    const order: number[] = [];
    const done = waiters.map(async ({ lock }, i) => {
      const held = await lock;
      order.push(i);
      await sleep(20);
      await held.release();
    });
    await first.release();
    await Promise.all(done);
    // Without the queue, whoever's retry lands first wins: 1 chance in 120 of this order.
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  test('a release wakes the first waiter only, not every waiter', async () => {
    // Equal fence counters on every node, so no grant needs the second fencing round.
    await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).set('redlock:{one-woken}:fence', 1000)),
    );
    const first = await holder.acquire('one-woken', { ttl: 10_000 });
    const waiters = await queueUp('one-woken', 4, { wait: 8000, ttl: 10_000 });
    await sleep(100); // every waiter queued and asleep (each retried once after subscribing)
    await Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).config('RESETSTAT')));
    await first.release();
    const next = await waiters[0]!.lock;
    await sleep(100); // time for any other woken waiter to try
    // Node 0 saw the release only: it handed the lock to the first waiter, who took it without
    // asking again. Waking all four would add four attempts.
    expect(await scriptCalls(cluster, 0)).toBe(1);
    await next.release();
    for (const w of waiters.slice(1)) await (await w.lock).release();
  });

  test('a waiter for several resources keeps its place in each queue', async () => {
    const first = await holder.acquire(['multi-a', 'multi-b'], { ttl: 10_000 });
    const both = await cluster.engine();
    const onlyA = await cluster.engine();
    const apartMs = ticketErrorMs(both) + ticketErrorMs(onlyA);
    const askedFirst = performance.now();
    const both$ = both.acquire(['multi-a', 'multi-b'], { wait: 5000 });
    await waiting(cluster, both, 'multi-a', 1);
    await waiting(cluster, both, 'multi-b', 1);
    await apartFrom(askedFirst, apartMs);
    const onlyA$ = onlyA.acquire('multi-a', { wait: 5000 });
    await waiting(cluster, onlyA, 'multi-a', 2);
    const order: string[] = [];
    const done = [
      both$.then(async (lock) => {
        order.push('both');
        await sleep(20);
        await lock.release();
      }),
      onlyA$.then(async (lock) => {
        order.push('a');
        await lock.release();
      }),
    ];
    await first.release();
    await Promise.all(done);
    expect(order).toEqual(['both', 'a']);
  });

  test.each([
    { shape: 'one resource: the lock itself', resources: ['late-one'], mark: '' },
    { shape: 'several resources: a turn', resources: ['late-a', 'late-b'], mark: '~' },
  ])(
    "what a node hands to a waiter that already got a majority elsewhere ends with that waiter's release ($shape)",
    async ({ resources, mark }) => {
      // A lock held on nodes 3 and 4 only (an engine of its own over them), free on 0-2.
      const minority = await cluster.engine({}, [3, 4]);
      const old = await minority.acquire(resources, { ttl: 10_000 });
      const waiter = await cluster.engine();
      // The waiter's engine has waited before, so it listens for hand-overs (a node skips a
      // waiter whose engine does not).
      const warm = await holder.acquire(`${resources[0]!}-warm`);
      const warmed = waiter.acquire(`${resources[0]!}-warm`, { wait: 3000 });
      await sleep(50);
      await warm.release();
      await (await warmed).release();
      const lock = await waiter.acquire(resources, { wait: 3000 }); // 0-2 grant; 3 and 4 queue it
      await sleep(20); // the replies of 3 and 4 were not waited for
      await old.release(); // nodes 3 and 4 hand the lock to the first in line: the waiter, now a holder
      const handed = await Promise.all(
        [3, 4].map((i) => cluster.redis.client(i).get(lockKey(resources[0]!))),
      );
      expect(handed).toEqual([`${mark}${lockValue(lock)}`, `${mark}${lockValue(lock)}`]);
      await sleep(300); // past the point where a hand-over nobody waits for is passed on
      expect(await cluster.redis.client(3).get(lockKey(resources[0]!))).toBe(`${mark}${lockValue(lock)}`);
      await lock.release();
      const after = await eventually(
        () => Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).get(lockKey(resources[0]!)))),
        [null, null, null, null, null],
      );
      expect(after).toEqual([null, null, null, null, null]);
    },
  );

  test('a waiter that got the lock without its turn leaves the queue when it releases', async () => {
    await holder.acquire('ghost', { ttl: 10_000 });
    const [ahead, behind] = await queueUp('ghost', 2, { wait: 3000 });
    // The first in line goes silent, and the lease ends without a release (as if the holder
    // crashed): no turn is handed out, and the second waiter takes the free lock when it
    // re-checks, while still queued behind the first.
    const gone = ahead!.lock.catch((e: unknown) => e);
    severConnections(ahead!.engine, { keepSubscriptions: true });
    await Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).del(lockKey('ghost'))));
    const lock = await behind!.lock;
    expect(await cluster.redis.client(0).zrange(queueKey('ghost'), 0, -1)).toContain(lockValue(lock));
    await lock.release();
    // The release is one-way: let it reach every node before looking from other connections.
    const queued = () =>
      Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).zrange(queueKey('ghost'), 0, -1)));
    const queues = await eventually(
      async () => (await queued()).flat().filter((v) => v === lockValue(lock)),
      [],
    );
    // Left there, it would get a turn later and hold the lock up until the turn lapsed.
    expect(queues).toEqual([]);
    await gone;
  });

  test('a fail-fast caller does not jump the queue when the lock is handed over', async () => {
    const first = await holder.acquire('no-barging', { ttl: 10_000 });
    const [waiter] = await queueUp('no-barging', 1, { wait: 5000 });
    const other = await cluster.engine();
    await first.release();
    expect(await other.tryAcquire('no-barging', { wait: 0 })).toBeNull();
    const lock = await waiter!.lock;
    expect(lock.fencingToken).toBeGreaterThan(first.fencingToken);
    await lock.release();
  });

  test('a waiter that gives up leaves the queue on every node', async () => {
    const first = await holder.acquire('gave-up', { ttl: 10_000 });
    const [waiter] = await queueUp('gave-up', 1, { wait: 300 });
    const queued = await cluster.redis.client(0).zcard(queueKey('gave-up'));
    expect(queued).toBe(1);
    await expect(waiter!.lock).rejects.toBeInstanceOf(LockNotAcquiredError);
    await sleep(50);
    const left = await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).zcard(queueKey('gave-up'))),
    );
    expect(left).toEqual([0, 0, 0, 0, 0]);
    await first.release();
  });

  test('a waiter that went silent in its turn is skipped, long before the lease would run out', async () => {
    const first = await holder.acquire('silent', { ttl: 10_000 });
    const [silent, next] = await queueUp('silent', 2, { wait: 3000 });
    // The first waiter loses its connections: it can neither claim the lock nor leave the queue.
    const gone = silent!.lock.catch((e: unknown) => e);
    severConnections(silent!.engine, { keepSubscriptions: true });
    const released = performance.now();
    await first.release();
    const lock = await next!.lock;
    const waited = performance.now() - released;
    // The holder's lease had ~10 s left: the next waiter re-checks within a second and skips
    // the silent one once its turn (400 ms) has passed.
    expect(waited).toBeLessThan(3000);
    await lock.release();
    await gone;
  });
});
