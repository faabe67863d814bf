import { LockNotAcquiredError, QuorumUnavailableError, type Lock, type Redlock } from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/** S8 / S9: nodes killed (SIGKILL) or hung (SIGSTOP) while clients lock. */

// 100 ms: a live node on a loaded 2-core machine must still answer well within it.
const NODE_TIMEOUT = 100;
const ROUNDS = 12;
/** Generous hang bound for one call: a stalled round would take as long as the fault lasts. */
const BOUND = NODE_TIMEOUT + 150;
const lockKey = (r: string) => `redlock:{${r}}`;

describe('node faults over 5 real nodes', () => {
  let cluster: TestCluster;
  let engine: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    engine = await cluster.engine({ nodeTimeout: NODE_TIMEOUT, ttl: 2000, retryDelay: 50, retryJitter: 20 });
    // Load the scripts on every node first (NOSCRIPT + EVAL costs a round trip on first use).
    const warm = await engine.acquire('warm-up');
    await warm.extend();
    await warm.release();
  });
  afterAll(() => cluster?.close());
  // A test that failed half-way must not leave the next one with nodes still reconnecting.
  beforeEach(() => waitAllReachable());

  /** Brings every node back: revives killed ones, resumes stopped ones. */
  async function heal(killed: number[], stopped: number[]): Promise<void> {
    for (const i of stopped) cluster.redis.resume(i);
    await Promise.all(killed.map((i) => cluster.redis.revive(i)));
  }

  /** Lock key values on every running node (killed nodes read as 'down'). */
  async function keysOnNodes(resource: string): Promise<Array<string | null>> {
    return Promise.all(
      cluster.redis.urls.map((_, i) =>
        cluster.redis.pid(i) === undefined
          ? Promise.resolve('down')
          : cluster.redis.client(i).get(lockKey(resource)),
      ),
    );
  }

  /** Waits until the engine's connection to every node is up again (bounded). */
  async function waitAllReachable(timeoutMs = 5000): Promise<void> {
    const until = performance.now() + timeoutMs;
    while (!engine.status().every((s) => s.reachable)) {
      if (performance.now() > until)
        throw new Error(`nodes not reachable again: ${JSON.stringify(engine.status())}`);
      await sleep(20);
    }
  }

  const minorityFaults: Array<{ name: string; kill: number[]; stop: number[] }> = [
    { name: '1 node killed and 1 stopped', kill: [0], stop: [1] },
    { name: '2 nodes stopped', kill: [], stop: [2, 4] },
  ];

  for (const fault of minorityFaults) {
    test(`S8: with ${fault.name}, acquire and release work with latency bounded by nodeTimeout`, async () => {
      const resource = `s8-${fault.kill.join('')}-${fault.stop.join('')}`;
      for (const i of fault.kill) await cluster.redis.kill(i);
      for (const i of fault.stop) cluster.redis.stop(i);
      const acquireMs: number[] = [];
      const releaseMs: number[] = [];
      const tokens: number[] = [];
      try {
        for (let n = 0; n < ROUNDS; n++) {
          let t = performance.now();
          const lock = await engine.acquire(resource, { ttl: 2000 });
          acquireMs.push(performance.now() - t);
          tokens.push(lock.fencingToken);
          // Exclusive even with the faults: a second acquire sees it busy, also within the bound.
          t = performance.now();
          await expect(engine.acquire(resource, { wait: 0 })).rejects.toBeInstanceOf(LockNotAcquiredError);
          acquireMs.push(performance.now() - t);
          t = performance.now();
          await lock.release();
          releaseMs.push(performance.now() - t);
          expect(lock.signal.aborted).toBe(true);
        }
      } finally {
        await heal(fault.kill, fault.stop);
      }
      expect(tokens).toHaveLength(ROUNDS);
      for (let n = 1; n < tokens.length; n++) expect(tokens[n]).toBeGreaterThan(tokens[n - 1]!);
      expect(Math.max(...acquireMs)).toBeLessThan(BOUND);
      expect(Math.max(...releaseMs)).toBeLessThan(BOUND);

      // The stopped nodes run their queued acquire/release pairs in order once resumed: nothing of
      // ours may be left anywhere afterwards. Read until they ran, at most 1 s (a key left behind
      // would stay for its 2 s ttl).
      await waitAllReachable();
      const none = [null, null, null, null, null];
      expect(await eventually(() => keysOnNodes(resource), none, 1000)).toEqual(none);
    });
  }

  test('S8: with 2 nodes stopped and a third busy, a fail-fast acquire gives up within nodeTimeout', async () => {
    const resource = 's8-undecided';
    await cluster.redis.client(0).set(lockKey(resource), 'someone-else', 'PX', 5000);
    cluster.redis.stop(3);
    cluster.redis.stop(4);
    let result: unknown;
    let elapsed: number;
    try {
      const t = performance.now();
      // 2 yes, 1 no, 2 silent: only the node timeout can decide (a majority is out of reach).
      result = await engine.acquire(resource, { wait: 0 }).catch((e: unknown) => e);
      elapsed = performance.now() - t;
    } finally {
      cluster.redis.resume(3);
      cluster.redis.resume(4);
    }
    expect(result).toBeInstanceOf(LockNotAcquiredError);
    expect(elapsed).toBeGreaterThanOrEqual(NODE_TIMEOUT - 5);
    expect(elapsed).toBeLessThan(BOUND);
    await waitAllReachable();
    // The partial grants on nodes 1 and 2 (and late ones on 3, 4) were released: read until the
    // releases ran, at most 1 s (a grant left behind would stay for its 2 s ttl).
    const released = ['someone-else', null, null, null, null];
    expect(await eventually(() => keysOnNodes(resource), released, 1000)).toEqual(released);
    await cluster.redis.client(0).del(lockKey(resource));
  });

  test('S8: close() of an engine returns within a bound while a node is stopped, even with a subscriber on it', async () => {
    const other = await cluster.engine({ nodeTimeout: NODE_TIMEOUT, ttl: 2000 });
    const held = await engine.acquire('s8-close', { ttl: 2000 });
    // A waiter opens the shared subscriber connections (one per node, queueing while offline).
    await expect(other.acquire('s8-close', { wait: 100 })).rejects.toBeInstanceOf(LockNotAcquiredError);
    await held.release();
    cluster.redis.stop(3);
    let closeMs: number;
    try {
      const t = performance.now();
      const outcome = await Promise.race([
        other.close().then(() => 'closed'),
        sleep(5000).then(() => 'hung'),
      ]);
      closeMs = performance.now() - t;
      expect(outcome).toBe('closed');
    } finally {
      cluster.redis.resume(3);
    }
    // Without the bounds, close() waits until the node is resumed (here: never within the race).
    expect(closeMs).toBeLessThan(2500);
  });

  test('S9: with 3 of 5 nodes down it never grants, fails within wait + 1 s, and recovers when they return', async () => {
    const resource = 's9';
    const before = await engine.acquire(resource);
    await before.release();

    const killed = [0, 1];
    const stopped = [2];
    for (const i of killed) await cluster.redis.kill(i);
    for (const i of stopped) cluster.redis.stop(i);
    const errors: unknown[] = [];
    const elapsed: number[] = [];
    let lock: Lock | undefined;
    try {
      for (let n = 0; n < 2; n++) {
        const t = performance.now();
        errors.push(
          await engine.acquire(resource, { wait: 500 }).then(
            (granted) => granted,
            (e: unknown) => e,
          ),
        );
        elapsed.push(performance.now() - t);
      }
      // The partial grants are given back one-way, in the background: let them land.
      const live = await eventually(
        () => Promise.all([3, 4].map((i) => cluster.redis.client(i).get(lockKey(resource)))),
        [null, null],
      );
      expect(live).toEqual([null, null]); // the two live nodes hold nothing of ours

      // The killed nodes come back (node 2 stays hung): a majority needs the engine to reconnect
      // to them on its own. It must grant again within a bound.
      await Promise.all(killed.map((i) => cluster.redis.revive(i)));
      const t = performance.now();
      while (!lock) {
        lock = await engine.acquire(resource, { wait: 0 }).catch(() => undefined);
        if (!lock) {
          expect(performance.now() - t).toBeLessThan(5000);
          await sleep(50);
        }
      }
    } finally {
      await heal(killed, stopped);
    }
    for (const err of errors) {
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      const failures = (err as QuorumUnavailableError).failures;
      expect(failures).toHaveLength(3);
      const named = failures.map((f) => f.node).join(' ');
      for (const i of [0, 1, 2]) expect(named).toContain(`:${cluster.redis.port(i)}`);
    }
    for (const ms of elapsed) {
      expect(ms).toBeGreaterThanOrEqual(450); // it did use its wait budget
      expect(ms).toBeLessThan(500 + 1000);
    }

    expect(lock.fencingToken).toBeGreaterThan(before.fencingToken);
    const other = await engine.acquire(resource, { wait: 0 }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(LockNotAcquiredError);
    await lock.release();
    await waitAllReachable();
    // The release lands a moment after it resolves (it does not wait for replies).
    const none = [null, null, null, null, null];
    expect(await eventually(() => keysOnNodes(resource), none)).toEqual(none);
  });
});
