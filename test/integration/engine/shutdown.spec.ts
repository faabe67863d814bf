import { EngineClosedError, LockLostError, type Redlock } from '../../../lib/index.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * Shutdown (issue 36, items 1-3; the contract's fourth edition): from close() on, new acquires and
 * those in flight or waiting reject with EngineClosedError; running work is told to stop through
 * its lock's signal, keeps its lock (the watchdog extends it) until it ends or drainTimeout runs
 * out; then every lock is released on every node, and nothing of this engine is left held.
 */

const PREFIX = 'redlock:';

describe('shutdown: drain, then nothing left held (real nodes)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
  });
  afterAll(() => cluster?.close());

  /** Lock keys of `resources` (a glob) held on each node. */
  const held = (pattern: string): Promise<number[]> =>
    Promise.all(
      cluster.redis.urls.map((_, i) =>
        cluster.redis
          .client(i)
          .keys(`${PREFIX}{${pattern}}`)
          .then((keys) => keys.length),
      ),
    );

  /** Each node's queue entries of `resource`. */
  const queued = (resource: string): Promise<number[]> =>
    Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).zcard(`${PREFIX}{${resource}}:queue`)),
    );

  test('close() with acquires in flight: they reject with EngineClosedError within 100 ms, and no key is left held', async () => {
    for (let round = 0; round < 5; round++) {
      // Locks granted before close() are never released by this test's callers: close() releases
      // them once the drain (short here) has run out.
      const engine = await cluster.engine({ nodeTimeout: 500, drainTimeout: 100 });
      const names = Array.from({ length: 40 }, (_, i) => `in-flight-${round}-${i}`);
      let closing = Infinity;
      const outcomes = names.map((name) =>
        engine.acquire(name, { ttl: 10_000 }).then(
          () => ({ error: undefined, after: performance.now() - closing }),
          (error: unknown) => ({ error, after: performance.now() - closing }),
        ),
      );
      await sleep(round * 2); // 0-8 ms: some grants land before close(), some during it
      closing = performance.now();
      await engine.close();
      for (const { error, after } of await Promise.all(outcomes)) {
        if (error === undefined) continue; // granted before close(): released by it
        expect(error).toBeInstanceOf(EngineClosedError);
        expect(after).toBeLessThan(100);
      }
      expect(await held(`in-flight-${round}-*`)).toEqual([0, 0, 0, 0, 0]);
    }
  });

  test('close() while an acquire waits: it rejects within 100 ms, leaves every queue, and never takes the lock', async () => {
    const holder = await cluster.engine();
    const lock = await holder.acquire('waited-for', { ttl: 10_000 });
    const waiter = await cluster.engine();
    const waiting = waiter.acquire('waited-for', { wait: 8000 }).catch((err: unknown) => err);
    expect(await eventually(async () => (await queued('waited-for')).every((n) => n === 1), true)).toBe(true);
    const closing = performance.now();
    const closed = waiter.close();
    const error = await waiting;
    expect(error).toBeInstanceOf(EngineClosedError);
    expect(performance.now() - closing).toBeLessThan(100);
    await closed;
    expect(await queued('waited-for')).toEqual([0, 0, 0, 0, 0]);
    await lock.release();
    // Nobody is handed the lock: it is free on every node at once.
    expect(await eventually(() => held('waited-for'), [0, 0, 0, 0, 0])).toEqual([0, 0, 0, 0, 0]);
  });

  test('running work keeps its lock through the drain, its signal aborts with EngineClosedError; new acquires are refused, nested ones join', async () => {
    const logger = new MemoryLogger();
    const engine = await cluster.engine({ logger, drainTimeout: 5000 });
    const other = await cluster.engine();
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let closed = false;
    const work = engine.using(
      'drained',
      async (lock) => {
        started();
        while (!lock.signal.aborted) await sleep(5);
        const reason: unknown = lock.signal.reason;
        // Two leases later, still ours: the watchdog extends it through the drain.
        await sleep(1300);
        const taken = await other.tryAcquire('drained');
        const nested = await engine.using('drained', (inner) => inner.fencingToken);
        const fresh = await engine.acquire('another-key').catch((err: unknown) => err);
        return { reason, taken, nested, token: lock.fencingToken, fresh, closedMeanwhile: closed };
      },
      { ttl: 600 },
    );
    await running;
    const closing = engine.close().then(() => (closed = true));
    const result = await work;
    await closing;
    expect(result.reason).toBeInstanceOf(EngineClosedError);
    expect(result.taken).toBeNull();
    expect(result.nested).toBe(result.token);
    expect(result.fresh).toBeInstanceOf(EngineClosedError);
    expect(result.closedMeanwhile).toBe(false);
    expect(await held('drained')).toEqual([0, 0, 0, 0, 0]);
    expect(logger.lines.filter((line) => /drain/.test(line))).toEqual([]);
  });

  test('work that outlasts drainTimeout: its lock is released then, logged once with its holder', async () => {
    const logger = new MemoryLogger();
    const engine = await cluster.engine({ logger, drainTimeout: 300 });
    const other = await cluster.engine();
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let lost: unknown;
    const work = engine.using(
      'outlasting',
      async (lock) => {
        started();
        await sleep(1200);
        lost = await lock.extend().catch((err: unknown) => err);
        return 'finished';
      },
      { ttl: 5000, holder: 'ReportsService.nightly' },
    );
    await running;
    const closing = performance.now();
    await engine.close();
    const tookMs = performance.now() - closing;
    expect(tookMs).toBeGreaterThanOrEqual(290);
    expect(tookMs).toBeLessThan(1000);
    // Released while the work still runs: another instance may take it.
    expect(await other.tryAcquire('outlasting')).not.toBeNull();
    expect(await work).toBe('finished');
    expect(lost).toBeInstanceOf(LockLostError);
    const lines = logger.lines.filter((line) => line.includes('outlasting'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warn: .*ReportsService\.nightly.*drainTimeout 300 ms/);
  });

  test('a bare acquire is waited for until its release(); a holdAtLeast lock is left to expire', async () => {
    const engine = await cluster.engine({ drainTimeout: 5000 });
    const other = await cluster.engine();
    const bare = await engine.acquire('bare', { ttl: 10_000 });
    await engine.using('kept', () => undefined, { holdAtLeast: 8000 });
    let closed = false;
    const closing = engine.close().then(() => (closed = true));
    await sleep(200);
    expect(closed).toBe(false);
    expect(bare.signal.reason).toBeInstanceOf(EngineClosedError);
    expect(await other.tryAcquire('bare')).toBeNull();
    await bare.release();
    await closing;
    expect(await held('bare')).toEqual([0, 0, 0, 0, 0]);
    const kept = await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).pttl(`${PREFIX}{kept}`)),
    );
    for (const ms of kept) expect(ms).toBeGreaterThan(6000);
  });

  test('acquire after close(): EngineClosedError, with its code', async () => {
    const engine: Redlock = await cluster.engine();
    await engine.close();
    const error = await engine.acquire('late').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(EngineClosedError);
    expect((error as EngineClosedError).code).toBe('ENGINE_CLOSED');
    await expect(engine.tryAcquire('late')).rejects.toBeInstanceOf(EngineClosedError);
    await expect(engine.using('late', () => 1)).rejects.toBeInstanceOf(EngineClosedError);
  });
});

describe('close() is bounded while a node does not answer (real nodes, each client the library opens)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  });
  afterAll(() => cluster?.close());

  test.each(['ioredis', 'node-redis'] as const)(
    '%s: a paused node, its wake subscription still opening, holds close() up for at most 5 nodeTimeouts',
    async (client) => {
      const nodeTimeout = 300;
      const engine = await cluster.engine({ client, nodeTimeout, drainTimeout: 0 });
      const name = `paused-close-${client}`;
      const held = await engine.acquire(name, { ttl: 10_000 });
      // A paused server accepts connections (the kernel does) and answers nothing: the wake
      // subscription the waiter below opens to it waits for its own bound.
      cluster.redis.stop(2);
      try {
        const waiting = engine.acquire(name, { ttl: 10_000, wait: 10_000 }).catch(() => 'closed');
        await sleep(200);
        const closing = performance.now();
        await engine.close();
        const took = performance.now() - closing;
        expect(await waiting).toBe('closed');
        expect(took).toBeLessThan(5 * nodeTimeout);
      } finally {
        cluster.redis.resume(2);
      }
      // Released where it could be: on the nodes that answer (the paused one's lease runs out).
      expect(held.signal.aborted).toBe(true);
      for (const i of [0, 1]) expect(await cluster.redis.client(i).exists(`${PREFIX}{${name}}`)).toBe(0);
    },
  );
});
