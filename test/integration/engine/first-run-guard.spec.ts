import { LockNotAcquiredError, QuorumUnavailableError } from '../../../lib/index.js';
import { MemoryLogger, TestCluster } from '../../support/cluster.js';

/**
 * Brand-new nodes under the restart guard (issue 29, items 6 and 7): an acquire that cannot get a
 * quorum before its `wait` runs out says so at once, with the time until a quorum votes again; a
 * busy lock is still waited for.
 */

const GUARD = 60_000;
const MARKER = 'redlock:__restart_guard__';

describe('first run on new nodes', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  });
  afterAll(() => cluster.close());

  test('a waiting acquire fails at once when the quorum votes again only after its wait, with the retry-after', async () => {
    await Promise.all([0, 1, 2].map((i) => cluster.redis.client(i).del(MARKER)));
    const e = await cluster.engine({ restartGuard: GUARD, logger: new MemoryLogger() });
    const started = performance.now();
    const err = await e.acquire('first-run', { wait: 2000 }).catch((x: unknown) => x);
    const tookMs = performance.now() - started;
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    const retryAfterMs = (err as QuorumUnavailableError).retryAfterMs!;
    expect(retryAfterMs).toBeGreaterThan(GUARD - 5000);
    expect(retryAfterMs).toBeLessThanOrEqual(GUARD);
    expect(tookMs).toBeLessThan(500); // not the whole 2000 ms
    // Once the engine knows, the next waiting acquire costs one round.
    const again = performance.now();
    await expect(e.acquire('first-run', { wait: 2000 })).rejects.toThrow(QuorumUnavailableError);
    expect(performance.now() - again).toBeLessThan(500);
    // The message agrees with retryAfterMs: no "retry shortly", no "check that they are running".
    const message = (err as Error).message;
    expect(message).toContain(`A quorum votes again in ${Math.ceil(retryAfterMs / 1000)} s`);
    expect(message).not.toMatch(/shortly|running and reachable/);
  });

  test('a busy lock is still waited for: the holder may release early', async () => {
    await Promise.all([0, 1, 2].map((i) => cluster.redis.client(i).set(MARKER, '0')));
    const holder = await cluster.engine({ restartGuard: GUARD, ttl: 30_000 });
    const waiter = await cluster.engine({ restartGuard: GUARD, ttl: 30_000 });
    const lock = await holder.acquire('busy-long-lease');
    const started = performance.now();
    const err = await waiter.acquire('busy-long-lease', { wait: 1500 }).catch((x: unknown) => x);
    const tookMs = performance.now() - started;
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(tookMs).toBeGreaterThanOrEqual(1400);
    // And a holder that releases early hands it over to a waiter within its wait.
    const second = waiter.acquire('busy-long-lease', { wait: 5000 });
    setTimeout(() => void lock.release(), 300);
    await (await second).release();
  });
});
