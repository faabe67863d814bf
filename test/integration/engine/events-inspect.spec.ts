import type { LockEvent, Redlock } from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';

describe('events$ and inspect (5 real redis-server nodes)', () => {
  let cluster: TestCluster;
  let engine: Redlock;
  let other: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    engine = await cluster.engine({ nodeTimeout: 100 });
    other = await cluster.engine({ nodeTimeout: 100 });
  });
  afterAll(() => cluster?.close());

  function record(target: Redlock): { events: LockEvent[]; stop: () => void } {
    const events: LockEvent[] = [];
    const subscription = target.events$.subscribe((e) => events.push(e));
    return { events, stop: () => subscription.unsubscribe() };
  }

  test('a lock lifecycle emits acquired, extended, released; a second caller busy', async () => {
    const { events, stop } = record(engine);
    const lock = await engine.acquire('ev-life', { ttl: 1000 });
    await lock.extend(1000);
    const busy = await engine.acquire('ev-life', { wait: 0 }).catch((e: unknown) => e);
    expect((busy as Error).name).toBe('LockNotAcquiredError');
    await lock.release();
    stop();
    expect(events.map((e) => e.type)).toEqual(['acquired', 'extended', 'busy', 'released']);
    expect(events[0]).toMatchObject({ resources: ['ev-life'], fencingToken: lock.fencingToken });
    expect(events[0]!.durationMs).toBeGreaterThan(0);
    expect(events[3]).toMatchObject({ resources: ['ev-life'], fencingToken: lock.fencingToken });
    expect(events[3]!.durationMs).toBeGreaterThanOrEqual(0);
  });

  test('a lock lost (its keys taken away) emits lost with the reason', async () => {
    const { events, stop } = record(engine);
    // A lease long enough that the extension below comes well within it, also on a loaded machine
    // (with 1 s, the keys' deletion and the extension once took longer: "its validity ran out").
    const lock = await engine.acquire('ev-lost', { ttl: 5000 });
    await Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).del('redlock:{ev-lost}')));
    await expect(lock.extend()).rejects.toThrow(/lost/);
    stop();
    const lost = events.find((e) => e.type === 'lost');
    expect(lost).toMatchObject({ resources: ['ev-lost'], fencingToken: lock.fencingToken });
    expect(lost!.reason).toMatch(/nodes still held it/);
  });

  test('a node that goes away and comes back emits node-down and node-up', async () => {
    const { events, stop } = record(engine);
    const label = engine.status()[4]!.node;
    await cluster.redis.kill(4);
    await sleep(100);
    await cluster.redis.restart(4);
    const deadline = Date.now() + 5000;
    while (!events.some((e) => e.type === 'node-up' && e.node === label) && Date.now() < deadline)
      await sleep(50);
    stop();
    const mine = events.filter((e) => e.node === label).map((e) => e.type);
    expect(mine).toContain('node-down');
    expect(mine.indexOf('node-up')).toBeGreaterThan(mine.indexOf('node-down'));
  });

  test('inspect: the majority view of a held and a free lock, and the last token issued', async () => {
    const lock = await other.acquire('ev-inspect', { ttl: 2000 });
    const held = await engine.inspect('ev-inspect');
    expect(held.held).toBe(true);
    expect(held.ttlMs).toBeGreaterThan(1500);
    expect(held.ttlMs).toBeLessThanOrEqual(2000);
    expect(held.fencingToken).toBe(lock.fencingToken);
    await lock.release();
    const free = await engine.inspect('ev-inspect');
    expect(free).toEqual({ held: false, ttlMs: null, fencingToken: lock.fencingToken });
    const next = await other.acquire('ev-inspect', { ttl: 2000 });
    expect(next.fencingToken).toBeGreaterThan(free.fencingToken!);
    await next.release();
    expect(await engine.inspect('ev-never')).toEqual({ held: false, ttlMs: null, fencingToken: null });
  });

  test('inspect needs a majority: with 3 of 5 nodes paused it throws QuorumUnavailableError', async () => {
    for (const i of [0, 1, 2]) cluster.redis.stop(i);
    try {
      await expect(engine.inspect('ev-inspect')).rejects.toMatchObject({ name: 'QuorumUnavailableError' });
    } finally {
      for (const i of [0, 1, 2]) cluster.redis.resume(i);
    }
  });
});
