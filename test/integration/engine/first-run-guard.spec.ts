import { LockNotAcquiredError, QuorumUnavailableError } from '../../../lib/index.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';

/**
 * Brand-new nodes under the restart guard (issue 29, items 6 and 7): an acquire that cannot get a
 * quorum before its `wait` runs out says so at once, with the time until a quorum votes again; a
 * busy lock is still waited for.
 */

const GUARD = 60_000;
const SHORT_GUARD = 1500;
const MARKER = 'redlock:__restart_guard__';

describe('first run on new nodes', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3, { freshFor: [] }); // new, not recorded fresh: they abstain
  });
  afterAll(() => cluster?.close());

  test('the guard counts from boot: one line for every new node, one when a quorum votes again', async () => {
    await Promise.all([0, 1, 2].map((i) => cluster.redis.client(i).del(MARKER)));
    const logger = new MemoryLogger();
    const booted = Date.now();
    const e = await cluster.engine({ restartGuard: SHORT_GUARD, ttl: 1000, logger });
    // Checked when the voters connected: every node abstains from boot, before any lock.
    const until = e.status().map((s) => s.abstainingUntil ?? 0);
    for (const u of until) {
      expect(u).toBeGreaterThanOrEqual(booted + SHORT_GUARD - 50);
      expect(u).toBeLessThanOrEqual(Date.now() + SHORT_GUARD);
    }
    const lines = logger.lines.filter((l) => l.includes('abstain'));
    expect(lines).toHaveLength(1);
    const [line] = lines as [string];
    for (let i = 0; i < 3; i++) expect(line).toContain(cluster.url(i).replace(/^redis:\/\/.*@/, ''));
    expect(line).toMatch(
      /^warn: Redis nodes redis:\/\/\S+, redis:\/\/\S+, redis:\/\/\S+ abstain from lock quorums until /,
    );
    expect(line).toContain('No lock can be granted until a quorum of 2 of 3 votes again, at ');
    expect(line).toContain('Waiting is the safe choice');
    expect(line).toContain('`npx nest-quorum-lock fresh-node <url>` records them fresh');
    // Waiting after boot gains the time: once the guard ran out, the first lock is granted at once.
    await sleep(until.sort()[1]! - Date.now() + 20);
    const started = performance.now();
    await (await e.acquire('after-boot', { wait: 0 })).release();
    expect(performance.now() - started).toBeLessThan(200);
    const back = logger.lines.filter((l) => l.includes('A quorum of the Redis nodes votes again'));
    expect(back).toHaveLength(1);
    expect(back[0]).toMatch(
      /^log: A quorum of the Redis nodes votes again \([23] of 3, 2 needed\): the restart guard has run out; locks can be granted\.$/,
    );
  });

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
    expect(tookMs).toBeLessThan(2000); // not the whole wait
    // Once the engine knows, the next waiting acquire fails at once too.
    const again = performance.now();
    await expect(e.acquire('first-run', { wait: 2000 })).rejects.toThrow(QuorumUnavailableError);
    expect(performance.now() - again).toBeLessThan(2000);
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
