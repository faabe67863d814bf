/**
 * The clock guard sees a step in the first reply after it, whatever the operation (issue 26):
 * an extension (one lock: EXTEND; several in one tick: EXTEND_MANY; a reader's: READ_EXTEND) and a semaphore's slot search
 * carry the voter's clock like a plain grant, so the stepped voter stops counting there at once.
 * Real redis-server voters whose wall clocks the clock shim steps.
 */
import type { LockEvent, Redlock } from '../../../lib/index.js';
import { ACQUIRE, CLOCK_WINDOW_US } from '../../../lib/core/scripts/acquire.js';
import { ClockFiles, nodeClock } from '../../support/clock-shim.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';

const MARKER = 'redlock:__restart_guard__';

/** Polls `check` every 10 ms until it holds, at most 2 s (a round decides before its last replies). */
async function eventually(check: () => boolean): Promise<void> {
  const deadline = performance.now() + 2000;
  while (!check() && performance.now() < deadline) await sleep(10);
}

describe('clock guard: a step seen first in an extension reply or a semaphore grant', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  beforeAll(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(5, { env: (i) => clocks.env(nodeClock(i)) });
  });
  afterAll(async () => {
    await cluster?.close();
    clocks?.close();
  });
  beforeEach(async () => {
    for (let i = 0; i < 5; i++) clocks.set(nodeClock(i), 0);
    await Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).set(MARKER, '0')));
  });

  /** A fresh engine (its bootstrap reads every clock) and the clock events it emits. */
  async function engine(): Promise<{ engine: Redlock; steps: () => LockEvent[]; logger: MemoryLogger }> {
    const logger = new MemoryLogger();
    // Healing off: the voter's first reply after the step is the extension's, not a re-take's.
    const e = await cluster.engine({ ttl: 10_000, restartGuard: 10_000, healHolds: false, logger });
    const events: LockEvent[] = [];
    e.events$.subscribe((event) => events.push(event));
    return {
      engine: e,
      logger,
      steps: () => events.filter((event) => event.type === 'node-abstaining' && event.cause === 'clock'),
    };
  }

  test('one lock extended (EXTEND): the stepped voter is excluded from that extension on', async () => {
    const { engine: e, steps, logger } = await engine();
    const lock = await e.acquire('extend-one');
    expect(steps()).toEqual([]);
    clocks.step(nodeClock(2), 5000); // less than the lease: voter 2 still holds the key
    await lock.extend();
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    expect(steps()[0]!.node).toContain(String(cluster.redis.port(2)));
    expect(logger.lines.find((l) => l.includes('stepped forward'))).toMatch(
      /stepped forward by (49\d\d|5000) ms/,
    );
    // Extended on a majority without voter 2; the lock is still held.
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  test('locks extended in one tick (EXTEND_MANY): the step is seen in the batch reply', async () => {
    const { engine: e, steps } = await engine();
    const locks = await Promise.all(['many-a', 'many-b', 'many-c'].map((r) => e.acquire(r)));
    clocks.step(nodeClock(4), 5000);
    await Promise.all(locks.map((l) => l.extend()));
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    expect(steps()[0]!.node).toContain(String(cluster.redis.port(4)));
    await Promise.all(locks.map((l) => l.release()));
  });

  test("a read lock extended (READ_EXTEND): the reply carries the voter's clock, the stepped voter is excluded from the reader's extension majority", async () => {
    const { engine: e, steps, logger } = await engine();
    const lock = await e.acquire('read-extend', { mode: 'read' });
    expect(steps()).toEqual([]);
    // Voters 3 and 4 no longer hold the reader: only voters 0, 1 and 2 can extend it.
    for (const i of [3, 4]) {
      await cluster.redis.client(i).del('redlock:{read-extend}', 'redlock:{read-extend}:readers');
    }
    clocks.step(nodeClock(2), 5000); // less than the lease: voter 2 still holds the reader
    // Voter 2's extension reply shows the step: it does not count, and 2 of 5 are no majority.
    await expect(lock.extend()).rejects.toMatchObject({ name: 'LockLostError' });
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    expect(steps()[0]!.node).toContain(String(cluster.redis.port(2)));
    expect(logger.lines.find((l) => l.includes('stepped forward'))).toMatch(
      /stepped forward by (49\d\d|5000) ms/,
    );
    await lock.release();
  });

  test('a plain grant within the expected window carries no clock, and a step is still seen in the first grant after it', async () => {
    // The script itself, on a real voter: the token alone within CLOCK_WINDOW_US of ARGV[6], the
    // clock outside it and without it.
    const client = cluster.redis.client(0);
    const time = async () => {
      const [s, us] = (await client.time()) as [string, string];
      return Number(s) * 1_000_000 + Number(us);
    };
    // guardMs fenceIdleMs seedWindowMs queueIdleMs turnMs clock (scripts/settings.ts)
    const settings0 = '10000 604800000 200 10400 300 0';
    // Declared: the lock key, its fence counter, its queue, the restart-guard marker.
    const keys = ['redlock:{window}', 'redlock:{window}:fence', 'redlock:{window}:queue', MARKER];
    const grant = async (expected?: number) => {
      const settings = settings0.replace(/0$/, '1');
      // Six arguments: the engine runs the clock guard ('' for no expectation).
      const args = [
        'script-probe',
        settings,
        '1000',
        '',
        '',
        expected === undefined ? '' : expected.toFixed(0),
      ];
      const reply = await client.evalsha(ACQUIRE.sha, keys.length, ...keys, ...args);
      await client.del('redlock:{window}');
      return reply;
    };
    await client.script('LOAD', ACQUIRE.source);
    await grant(); // seeds the fence counter: the grants below take the usual path
    // Expected 0.5 ms after this client read the clock: within the window of the script's reading
    // unless the machine stalls the call; one try in ten is enough to show the short reply.
    let short: unknown;
    for (let i = 0; i < 10 && typeof short !== 'number'; i++) short = await grant((await time()) + 500);
    expect(typeof short).toBe('number');
    expect(await grant((await time()) - 10 * CLOCK_WINDOW_US)).toEqual([
      expect.any(Number),
      expect.any(Number),
    ]);
    expect(await grant()).toEqual([expect.any(Number), expect.any(Number)]);
    // Five arguments: the engine runs no clock guard, and the token comes alone whatever the clock.
    const plain = await client.evalsha(
      ACQUIRE.sha,
      keys.length,
      ...keys,
      'script-probe',
      settings0,
      '1000',
      '',
      '',
    );
    await client.del('redlock:{window}');
    expect(typeof plain).toBe('number');

    // The engine: grants in a row (the first after the bootstrap reading within the window), then
    // voter 3 steps 1 s (more than the guard, 500 ms): the next grant excludes it.
    const { engine: e, steps } = await engine();
    for (let i = 0; i < 20; i++) await (await e.acquire('window')).release();
    expect(steps()).toEqual([]);
    clocks.step(nodeClock(3), 1000);
    await (await e.acquire('window')).release();
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    expect(steps()[0]!.node).toContain(String(cluster.redis.port(3)));
  });

  test('a hand-over from a voter the clock guard excludes does not count', async () => {
    const holder = await cluster.engine({ ttl: 5000, restartGuard: 10_000, clockGuard: false });
    const { engine: waiter, steps } = await engine();
    const held = await holder.acquire('handed');
    // Voters 3 and 4 hold the key for someone else for 2 s: only voters 0, 1 and 2 hand it over.
    const foreignUntil = performance.now() + 2000;
    for (const i of [3, 4]) await cluster.redis.client(i).set('redlock:{handed}', 'someone', 'PX', 2000);
    clocks.step(nodeClock(2), 1000); // less than the lease left there
    await (await waiter.acquire('probe')).release(); // the waiter sees the step: voter 2 is excluded
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    // Queued after the step: its readings of voter 2 agree with that voter's hand-over.
    const waiting = waiter.acquire('handed', { ttl: 5000, wait: 5000 });
    const queued = async () =>
      (
        await Promise.all([0, 1, 2].map((i) => cluster.redis.client(i).zcard('redlock:{handed}:queue')))
      ).every((n) => n >= 1);
    for (let i = 0; i < 400 && !(await queued()); i++) await sleep(5);
    await held.release();
    const lock = await waiting;
    // Not from the hand-overs of 0, 1 and 2: only once voters 3 and 4 are free.
    expect(performance.now()).toBeGreaterThan(foreignUntil - 50);
    await lock.release();
  });

  test('a semaphore grant carries the voter clock: a stepped voter is excluded, the slot still granted by the others', async () => {
    const { engine: e, steps } = await engine();
    const first = await e.acquire('sem', { permits: 2 });
    expect(steps()).toEqual([]);
    clocks.step(nodeClock(1), 30_000);
    const second = await e.acquire('sem', { permits: 2 });
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    expect(steps()[0]!.node).toContain(String(cluster.redis.port(1)));
    expect(new Set([first.permit, second.permit])).toEqual(new Set([0, 1]));
    await Promise.all([first.release(), second.release()]);
  });

  test('a semaphore grant of an excluded voter does not count toward the slot', async () => {
    const { engine: e, steps } = await engine();
    await (await e.acquire('sem-decisive', { permits: 2 })).release();
    // On voters 3 and 4 both slots are taken by others: only voters 0, 1 and 2 can grant one.
    const slots = [0, 1].map((permit) => `redlock:{sem-decisive}:permit:${permit}`);
    for (const i of [3, 4]) {
      for (const slot of slots) await cluster.redis.client(i).set(slot, 'someone', 'PX', 10_000);
    }
    clocks.step(nodeClock(2), 30_000);
    const taken = await e.tryAcquire('sem-decisive', { permits: 2, ttl: 1000 });
    expect(taken).toBeNull(); // voters 0 and 1 only: voter 2's grant does not count
    await eventually(() => steps().length > 0);
    expect(steps()).toHaveLength(1);
    for (const i of [3, 4]) await cluster.redis.client(i).del(...slots);
    await taken?.release();
  });
});
