/**
 * The clock guard's marking and hand-overs (issue 26): a voter marked for every client (another
 * engine saw its clock step: scripts/clock-mark.ts) while a waiter is queued on it must not count
 * toward that waiter's lock when the holder's release hands it over. The waiter's own readings of
 * the voter agree (it never saw the step), so only the voter can refuse: it lost its fence
 * counters in the marking, and a hand-over without a counter is a turn whose claim reads the marker
 * (scripts/queue.ts). Real redis-server voters; the marking is the CLOCK_MARK script itself, run
 * as another engine runs it.
 */
import type { Redlock } from '../../../lib/index.js';
import { CLOCK_MARK, fenceCounterPattern } from '../../../lib/core/scripts/guards.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const MARKER = 'redlock:__restart_guard__';
const GUARD_MS = 2000;

describe('clock guard: a hand-over from a voter marked for every client does not count', () => {
  let cluster: TestCluster;

  beforeEach(async () => {
    cluster = await TestCluster.start(5);
    // Voters in service for long: the guard has passed on each.
    await Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).set(MARKER, '0')));
  });
  afterEach(async () => {
    await cluster?.close();
  });

  /** Marks voters `indices` as an engine that saw their clocks step would (CLOCK_MARK). */
  async function mark(indices: number[]): Promise<void> {
    for (const i of indices) {
      // ARGV: the guard, the counters' SCAN pattern, no step point (''), the markers to push.
      const args = [String(GUARD_MS), fenceCounterPattern('redlock:'), '', MARKER];
      await cluster.redis.client(i).eval(CLOCK_MARK.source, 0, ...args);
    }
  }

  /** Whether voter `i` holds a fence counter for `resource`. */
  const hasCounter = async (i: number, resource: string) =>
    (await cluster.redis.client(i).exists(`redlock:{${resource}}:fence`)) === 1;

  /**
   * `holder` holds `resource`; `waiter` waits for it and is queued on every voter. Returns the
   * waiter's acquire, settled into `outcome`.
   */
  async function queueBehind(holder: Redlock, waiter: Redlock, resource: string) {
    const held = await holder.acquire(resource);
    const outcome: { lockAt?: number } = {};
    const waiting = waiter.acquire(resource, { wait: 10_000 }).then((lock) => {
      outcome.lockAt = performance.now();
      return lock;
    });
    const queued = async () =>
      (
        await Promise.all(
          cluster.redis.urls.map((_, i) => cluster.redis.client(i).zcard(`redlock:{${resource}}:queue`)),
        )
      ).every((n) => n >= 1);
    expect(await eventually(queued, true, 3000)).toBe(true);
    return { held, waiting, outcome };
  }

  test('one voter marked while the waiter is queued: the others hand the lock over, the marked one issues no token', async () => {
    const holder = await cluster.engine({ ttl: GUARD_MS, restartGuard: GUARD_MS });
    const waiter = await cluster.engine({ ttl: GUARD_MS, restartGuard: GUARD_MS });
    const { held, waiting } = await queueBehind(holder, waiter, 'one');
    await mark([2]);
    expect(await hasCounter(2, 'one')).toBe(false); // the marking dropped it
    const markedAt = performance.now();
    await held.release();
    const lock = await waiting;
    // Handed over by voters 0, 1, 3 and 4 while voter 2's guard still runs.
    expect(performance.now() - markedAt).toBeLessThan(GUARD_MS);
    // Voter 2 issued no token (its counter stays missing: it still abstains for every client),
    // and holds no hand-over for the waiter; the others issued theirs.
    expect(await eventually(() => hasCounter(2, 'one'), false)).toBe(false);
    expect((await cluster.redis.client(2).get('redlock:{one}')) ?? '').not.toMatch(/^[^~]/);
    for (const i of [0, 1, 3, 4]) expect(await hasCounter(i, 'one')).toBe(true);
    await lock.release();
  });

  test('three voters marked while the waiter is queued: no lock from their hand-overs, only once their guard has passed', async () => {
    const holder = await cluster.engine({ ttl: GUARD_MS, restartGuard: GUARD_MS });
    const waiter = await cluster.engine({ ttl: GUARD_MS, restartGuard: GUARD_MS });
    const { held, waiting, outcome } = await queueBehind(holder, waiter, 'three');
    // Each voter's guard runs from its own marking: voter 2's, the first, ends first. The markings
    // are three round trips in a row (a loaded bare machine granted the lock 1,811 ms after the last
    // one: the first had come that much earlier), so the guard is measured from before the first.
    const markingAt = performance.now();
    await mark([2, 3, 4]);
    await held.release();
    // Two unmarked voters are no majority: the waiter holds nothing while the guard runs.
    await sleep(GUARD_MS - 600);
    expect(outcome.lockAt).toBeUndefined();
    for (const i of [2, 3, 4]) expect(await hasCounter(i, 'three')).toBe(false);
    // After the first marked voter's guard, the waiter's next attempt is granted (two unmarked voters
    // and that one), with counters seeded from the voters' clocks.
    const lock = await waiting;
    expect(outcome.lockAt! - markingAt).toBeGreaterThanOrEqual(GUARD_MS - 50);
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  });
});
