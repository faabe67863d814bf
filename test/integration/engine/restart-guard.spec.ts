import { QuorumUnavailableError, type Lock, type Redlock } from '../../../lib/index.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/**
 * S5: a node that granted a lock restarts without persistence. Client A holds the lock on nodes
 * {0, 1, 2}; node 2 restarts empty; client B, cut off from nodes 0 and 1 (a partition), reaches
 * {2, 3, 4}. Without the guard B wins a majority while A still holds the lock; with it, node 2
 * abstains until the guard has run out, which is after every lease it may have forgotten.
 */

const GUARD = 1500;
const MARKER = 'redlock:__restart_guard__';
const lockKey = (r: string) => `redlock:{${r}}`;
/** Two loopback ports nothing listens on: B's view of nodes 0 and 1 behind the partition. */
const UNREACHABLE = ['redis://127.0.0.1:1', 'redis://127.0.0.1:2'];

describe('restart guard (S5)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
  });
  afterAll(() => cluster?.close());

  /** Waits until `engine` is connected to its node `index` again (after a restart). */
  async function reconnected(engine: Redlock, index: number): Promise<void> {
    const until = performance.now() + 5000;
    while (!engine.status()[index]?.reachable) {
      if (performance.now() > until) throw new Error(`node ${index} not reachable again`);
      await sleep(10);
    }
  }

  async function values(resource: string): Promise<Array<string | null>> {
    return Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).get(lockKey(resource))));
  }

  /** A holds `resource` on nodes {0,1,2} only: 3 and 4 are busy with a short foreign lease meanwhile. */
  async function grantOnFirstThree(a: Redlock, resource: string): Promise<Lock> {
    for (const i of [3, 4]) await cluster.redis.client(i).set(lockKey(resource), 'foreign', 'PX', 200);
    const lock = await a.acquire(resource);
    const held = await values(resource);
    expect(held.slice(3)).toEqual(['foreign', 'foreign']);
    expect(held[0]).not.toBeNull();
    expect(held.slice(0, 3)).toEqual([held[0], held[0], held[0]]);
    await sleep(250); // the foreign leases run out: nodes 3 and 4 are free
    expect(await values(resource)).toEqual([held[0], held[0], held[0], null, null]);
    return lock;
  }

  test('with the guard on, the restarted node abstains: B cannot lock while A holds it; B can after the guard', async () => {
    // Nodes initialised long ago: the marker exists and lets them vote at once.
    await Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).set(MARKER, '0')));
    const loggerA = new MemoryLogger();
    const loggerB = new MemoryLogger();
    const a = await cluster.engine({ restartGuard: GUARD, ttl: GUARD, nodeTimeout: 100, logger: loggerA });
    const b = await cluster.engine({
      nodes: [...UNREACHABLE, cluster.url(2), cluster.url(3), cluster.url(4)],
      restartGuard: GUARD,
      ttl: GUARD,
      nodeTimeout: 100,
      connectTimeout: 200,
      retryDelay: 100,
      retryJitter: 20,
      logger: loggerB,
    });

    const resource = 'guarded';
    const lockA = await grantOnFirstThree(a, resource);
    const restarted = Date.now();
    await cluster.redis.restart(2);
    await reconnected(b, 2);
    await reconnected(a, 2);
    // The first engine to reconnect found no marker and wrote it (the guard counts from the node's
    // return, not from the first lock); both engines abstain on it until then.
    const ready = Number(await cluster.redis.client(2).get(MARKER));
    expect(ready).toBeGreaterThanOrEqual(restarted + GUARD - 50);
    expect(ready).toBeLessThanOrEqual(Date.now() + GUARD);

    const failFast = await b.acquire(resource, { wait: 0 }).catch((e: unknown) => e);
    const waited = await b.acquire(resource, { wait: 500 }).catch((e: unknown) => e);
    // A's lock is still valid: B must have failed for the guard's sake, not because A's lease ended.
    expect(lockA.signal.aborted).toBe(false);
    expect(lockA.expiresAt).toBeGreaterThan(Date.now());

    for (const err of [failFast, waited]) {
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      const node2 = (err as QuorumUnavailableError).failures.find((f) =>
        f.node.endsWith(`:${cluster.redis.port(2)}`),
      );
      expect(node2?.reason).toMatch(/restart guard/);
    }
    // B's partial grants on 3 and 4 were released; node 2 set nothing.
    await sleep(50);
    expect((await values(resource)).slice(2)).toEqual([null, null, null]);
    // Node 2 was not even asked (the engines abstain on it locally): no fence counter there.
    expect(await cluster.redis.client(2).exists(`${lockKey(resource)}:fence`)).toBe(0);

    // Users are told which node abstains and until when -- once, although B retried several times.
    const abstaining = loggerB.lines.filter((l) => l.includes('abstains'));
    expect(abstaining).toHaveLength(1);
    expect(abstaining[0]).toMatch(
      new RegExp(
        `^warn: Redis node redis://(locker:\\*\\*\\*@)?127\\.0\\.0\\.1:${cluster.redis.port(2)} abstains`,
      ),
    );
    // "until <ISO time>": the client's estimate of the node's marker (clock skew aside, within ms).
    const until = Date.parse(/until (\S+):/.exec(abstaining[0]!)?.[1] ?? '');
    expect(Math.abs(until - ready)).toBeLessThan(100);
    expect(Math.abs(b.status()[2]!.abstainingUntil! - ready)).toBeLessThan(100);

    // After the guard, node 2 votes again and B gets the lock, with a higher token than A's.
    const lockB = await b.acquire(resource, { wait: 3 * GUARD });
    expect(Date.now()).toBeGreaterThanOrEqual(ready - 20);
    expect(lockA.signal.aborted).toBe(true); // A's lease ended before the guard did
    expect(lockB.fencingToken).toBeGreaterThan(lockA.fencingToken);
    await lockB.release();
    await lockA.release();
    // A, which reconnected too, was told once as well.
    expect(loggerA.lines.filter((l) => l.includes('abstains'))).toHaveLength(1);
  });

  test('control: with the guard off, B wins while A still holds the lock (the checker sees the violation)', async () => {
    const a = await cluster.engine({ restartGuard: false, ttl: GUARD, nodeTimeout: 100 });
    const b = await cluster.engine({
      nodes: [...UNREACHABLE, cluster.url(2), cluster.url(3), cluster.url(4)],
      restartGuard: false,
      ttl: GUARD,
      nodeTimeout: 100,
      connectTimeout: 200,
    });
    const resource = 'unguarded';
    const lockA = await grantOnFirstThree(a, resource);
    await cluster.redis.restart(2);
    await reconnected(b, 2);

    const lockB = await b.acquire(resource, { wait: 0 });
    // Two holders at once: A's validity has not ended and B holds a majority of 3 of 5.
    expect(lockA.signal.aborted).toBe(false);
    expect(lockA.expiresAt).toBeGreaterThan(Date.now());
    expect(lockB.signal.aborted).toBe(false);
    await lockB.release();
    await lockA.release();
  });

  test('an engine with the guard off marks the nodes it seeds as trusted: a guarded engine then votes at once', async () => {
    const fresh = await TestCluster.start(3);
    try {
      const unguarded = await fresh.engine({ restartGuard: false });
      await (await unguarded.acquire('trusted')).release();
      // (A round decides on the first majority: the third vote may still be on its way.)
      const markers = () => Promise.all([0, 1, 2].map((i) => fresh.redis.client(i).get(MARKER)));
      expect(await eventually(markers, ['0', '0', '0'])).toEqual(['0', '0', '0']);
      const guarded = await fresh.engine({ restartGuard: GUARD, ttl: 1000 });
      const lock = await guarded.acquire('trusted-too'); // a new resource: its counters are seeded now
      await lock.release();
    } finally {
      await fresh.close();
    }
  });
});
