import { LockNotAcquiredError, QuorumUnavailableError, type Redlock } from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const PREFIX = 'redlock:';
const lockKey = (r: string) => `${PREFIX}{${r}}`;

describe('quorum acquire over 5 real nodes', () => {
  let cluster: TestCluster;
  let engine: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    engine = await cluster.engine({ nodeTimeout: 100 });
  });
  afterAll(() => cluster?.close());

  async function keysOnNodes(key: string): Promise<Array<string | null>> {
    return Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).get(key)));
  }

  for (let k = 0; k <= 5; k++) {
    test(`with ${k} of 5 nodes held by another owner, acquire ${k <= 2 ? 'succeeds' : 'fails'}`, async () => {
      const resource = `matrix-${k}`;
      for (let i = 0; i < k; i++)
        await cluster.redis.client(i).set(lockKey(resource), 'someone-else', 'PX', 10_000);
      const result = await engine.acquire(resource, { ttl: 2000 }).catch((e: unknown) => e);
      const values = await keysOnNodes(lockKey(resource));
      if (k <= 2) {
        expect(result).not.toBeInstanceOf(Error);
        const lock = result as Awaited<ReturnType<Redlock['acquire']>>;
        await lock.release();
      } else {
        expect(result).toBeInstanceOf(LockNotAcquiredError);
        expect((result as LockNotAcquiredError).retryAfterMs).toBeGreaterThan(5000);
      }
      // Releases (the lock's, or the given-back partial grants) are one-way: they reach the nodes a
      // moment after they resolve, as seen from the test's own connections.
      const expected = [...new Array(k).fill('someone-else'), ...new Array(5 - k).fill(null)];
      const after = await eventually(() => keysOnNodes(lockKey(resource)), expected);
      expect(after.slice(0, k)).toEqual(new Array(k).fill('someone-else'));
      expect(after.slice(k)).toEqual(new Array(5 - k).fill(null));
      expect(values.slice(0, k)).toEqual(new Array(k).fill('someone-else'));
    });
  }

  test('two engines: the second gets the lock only after the first releases, with a higher token', async () => {
    const other = await cluster.engine();
    const first = await engine.acquire('handover', { ttl: 5000 });
    await expect(other.acquire('handover', { wait: 0 })).rejects.toBeInstanceOf(LockNotAcquiredError);
    const waiting = other.acquire('handover', { wait: 3000 });
    await sleep(100);
    await first.release();
    const second = await waiting;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(first.signal.aborted).toBe(true);
    await second.release();
  });

  test('a waiter is woken by the release, long before the holder lease would run out', async () => {
    const other = await cluster.engine();
    const first = await engine.acquire('wake', { ttl: 8000 });
    const started = performance.now();
    const waiting = other.acquire('wake', { wait: 5000 });
    await sleep(200);
    await first.release();
    const second = await waiting;
    const waited = performance.now() - started;
    expect(waited).toBeLessThan(2000); // the lease had 7.8 s left: polling by pttl would wait that long
    await second.release();
  });

  test('acquire respects an abort signal while waiting', async () => {
    const first = await engine.acquire('abortable', { ttl: 5000 });
    const controller = new AbortController();
    const waiting = engine
      .acquire('abortable', { wait: 4000, signal: controller.signal })
      .catch((e: unknown) => e);
    await sleep(100);
    controller.abort(new Error('caller gave up'));
    expect(await waiting).toEqual(new Error('caller gave up'));
    await first.release();
  });

  test('an unreachable majority is reported as QuorumUnavailableError naming the nodes', async () => {
    const remote = await cluster.engine({
      nodes: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', cluster.url(0)],
    });
    const err = await remote.acquire('nowhere').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect((err as Error).message).toContain('127.0.0.1:1');
  });
});

describe('tryAcquire makes one attempt (the engine default wait does not apply)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  });
  afterAll(() => cluster?.close());

  test('a busy lock gives null at once with a 5 s default wait; it waits only when its options pass wait', async () => {
    const holder = await cluster.engine();
    const engine = await cluster.engine({ wait: 5000 });
    const lock = await holder.acquire('try-once', { ttl: 10_000 });
    let started = performance.now();
    expect(await engine.tryAcquire('try-once')).toBeNull();
    expect(performance.now() - started).toBeLessThan(5000); // not the engine's default wait
    setTimeout(() => void lock.release(), 300);
    started = performance.now();
    const waited = await engine.tryAcquire('try-once', { wait: 3000 });
    expect(waited).not.toBeNull();
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    await waited!.release();
  });
});

describe('nodeTimeout counts from when the requests left this process (each client the library opens)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  });
  afterAll(() => cluster?.close());

  test.each(['ioredis', 'node-redis'] as const)(
    '%s: a process that stalls right after acquire() for twice nodeTimeout still gets the lock',
    async (client) => {
      const nodeTimeout = 100;
      const engine = await cluster.engine({ client, nodeTimeout, ttl: 5000 });
      // node-redis writes a tick's commands in an immediate: the stall below comes before they
      // leave, and the time-out must not be spent on it. (ioredis writes them at once.)
      for (let round = 0; round < 5; round++) {
        const acquiring = engine.acquire(`stalled-${client}-${round}`);
        const until = performance.now() + 2 * nodeTimeout;
        while (performance.now() < until); // a synchronous stall of this process
        const lock = await acquiring;
        await lock.release();
      }
    },
  );
});
