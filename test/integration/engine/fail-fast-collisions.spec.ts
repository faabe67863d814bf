import { LockNotAcquiredError, QuorumUnavailableError, Redlock, type Lock } from '../../../lib/index.js';
import { slotKey } from '../../../lib/core/scripts/keys.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { eventually } from '../../support/eventually.js';

/*
 * Fail-fast acquires (`wait: 0`, tryAcquire) that several engines make at the same moment on a free
 * key, as a cron tick on several instances does: the nodes see them in different orders and the
 * vote can split, each acquirer with a minority. Without a retry each gives its minority back and
 * fails, and nobody holds the lock (about 1 round in 11 with 4 engines on 3 nodes); each makes its
 * attempt again after the collision back-off instead (wait.ts, retrySplit), at most 10 times. A
 * lock that someone holds still fails at once, after one attempt. Semaphores alike: a permit whose
 * slot has no holder on a majority split (about 1 round in 75 with 2 permits and 4 engines left a
 * permit unused, 1 in 750 both), a semaphore whose every permit is held on a majority is full.
 */
describe('simultaneous fail-fast acquires (real nodes)', () => {
  let nodes: RedisNodes;
  const engines: Redlock[] = [];

  beforeAll(async () => {
    nodes = await RedisNodes.start(3);
    for (let i = 0; i < 8; i++) {
      const engine = new Redlock({ nodes: nodes.urls, restartGuard: false });
      await engine.connect();
      engines.push(engine);
    }
  });
  afterAll(async () => {
    await Promise.all(engines.map((engine) => engine.close()));
    await nodes?.close();
  });

  /**
   * `rounds` rounds of `count` engines calling tryAcquire on a fresh key at once: in how many
   * rounds how many held it, and how many rounds told nothing (an engine's node did not answer
   * within nodeTimeout, a stall of this process on a loaded machine: "quorum unavailable").
   */
  async function race(count: number, rounds: number, name: string, options: { permits?: number } = {}) {
    const holders = new Map<number, number>();
    let undecided = 0;
    for (let round = 0; round < rounds; round++) {
      const outcomes = await Promise.all(
        engines
          .slice(0, count)
          .map((engine) => engine.tryAcquire(`${name}:${round}`, options).catch((err: unknown) => err)),
      );
      const held = outcomes.filter(
        (outcome): outcome is Lock => outcome !== null && !(outcome instanceof Error),
      );
      await Promise.all(held.map((lock) => lock.release()));
      if (outcomes.some((outcome) => outcome instanceof QuorumUnavailableError)) undecided++;
      else holders.set(held.length, (holders.get(held.length) ?? 0) + 1);
    }
    expect(undecided).toBeLessThan(rounds / 2);
    return { holders: Object.fromEntries(holders), decided: rounds - undecided };
  }

  test.each([
    [4, 300],
    [8, 150],
  ])('%i engines at once, %i rounds: exactly one holds the lock in every round', async (count, rounds) => {
    const { holders, decided } = await race(count, rounds, `race:${count}`);
    expect(holders).toEqual({ 1: decided });
  });

  test('a vote split that lasts fails after 11 attempts, leaving nothing behind', async () => {
    // Two other acquirers hold a minority each (node 0, node 1): every attempt gets node 2 alone.
    await nodes.client(0).set('redlock:{race:split}', 'a:0', 'PX', 10_000);
    await nodes.client(1).set('redlock:{race:split}', 'b:0', 'PX', 10_000);
    const err = await engines[0]!.acquire('race:split', { wait: 0 }).catch((e: unknown) => e);
    // Each failed attempt gives node 2 back without awaiting the reply: read until it ran, at most 1 s.
    const left = await eventually(() => nodes.client(2).get('redlock:{race:split}'), null, 1000);
    await Promise.all([0, 1].map((i) => nodes.client(i).del('redlock:{race:split}')));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect((err as LockNotAcquiredError).attempts).toBe(11);
    expect(left).toBeNull();
  });

  const semaphoreKey = 'redlock:{sem-race:one-lease}';
  test.each([
    // a and b hold a minority each; b lets go of node 1.
    ['a lock', 'race:one-lease', {}, [], 'redlock:{race:one-lease}'],
    // Permit 0 held by x everywhere; permit 1 split as above.
    [
      'a semaphore',
      'sem-race:one-lease',
      { permits: 2 },
      [slotKey(semaphoreKey, 0)],
      slotKey(semaphoreKey, 1),
    ],
  ])(
    '%s granted by a retry of a split holds the lease of one attempt made when the call began',
    async (_, name, options, full, splitKey) => {
      await Promise.all(
        [0, 1, 2].flatMap((i) => full.map((key) => nodes.client(i).set(key, 'x:0', 'PX', 10_000))),
      );
      await nodes.client(0).set(splitKey, 'a:0', 'PX', 10_000);
      await nodes.client(1).set(splitKey, 'b:0', 'PX', 10_000);
      const ttl = 2000;
      // What a lock's validity is shortened by: the default driftFactor's allowance, the clock guard.
      const margins = ttl * 0.01 + 2 + 500;
      const began = Date.now();
      const acquiring = engines[0]!.acquire(name, { ...options, ttl, wait: 0 });
      // b lets go 10 ms after the call began: before its 10 retries are spent (their random back-off
      // sums to 111 ms on average; under 10 ms about once in a million calls).
      await new Promise((resolve) => setTimeout(resolve, 10));
      await nodes.client(1).del(splitKey);
      const lock = await acquiring;
      await lock.release();
      await Promise.all([0, 1, 2].map((i) => nodes.client(i).del(splitKey, ...full)));
      // Granted after those 10 ms (node 1 was b's until then), by an attempt that began later: the
      // lease still counts from the call, as one attempt's would (ms rounding).
      expect(lock.expiresAt).toBeLessThanOrEqual(began + ttl - margins + 2);
      expect(lock.expiresAt).toBeGreaterThan(began + ttl / 2);
    },
  );

  test('a lock held elsewhere fails at once, after one attempt', async () => {
    const held = await engines[0]!.acquire('race:held');
    const err = await engines[1]!.acquire('race:held', { wait: 0 }).catch((e: unknown) => e);
    await held.release();
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect((err as LockNotAcquiredError).attempts).toBe(1);
  });

  test.each([
    [2, 4, 300],
    [3, 6, 150],
  ])(
    'a semaphore of %i permits, %i engines at once, %i rounds: every permit is held in every round',
    async (permits, count, rounds) => {
      const { holders, decided } = await race(count, rounds, `sem-race:${permits}`, { permits });
      expect(holders).toEqual({ [permits]: decided });
    },
  );

  test('a semaphore permit split for good fails after 11 attempts; a full semaphore after one', async () => {
    // Permit 0 held by x everywhere; permit 1 by a on node 0 and b on node 1: node 2's is free.
    const lockKey = 'redlock:{sem-race:split}';
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).set(slotKey(lockKey, 0), 'x:0', 'PX', 10_000)));
    await nodes.client(0).set(slotKey(lockKey, 1), 'a:0', 'PX', 10_000);
    await nodes.client(1).set(slotKey(lockKey, 1), 'b:0', 'PX', 10_000);
    const split = await engines[0]!
      .acquire('sem-race:split', { permits: 2, wait: 0 })
      .catch((e: unknown) => e);
    const left = await eventually(() => nodes.client(2).get(slotKey(lockKey, 1)), null, 1000);
    // Now b holds permit 1 on a majority too: the semaphore is full.
    await nodes.client(2).set(slotKey(lockKey, 1), 'b:0', 'PX', 10_000);
    const full = await engines[0]!
      .acquire('sem-race:split', { permits: 2, wait: 0 })
      .catch((e: unknown) => e);
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).del(slotKey(lockKey, 0), slotKey(lockKey, 1))));
    expect(split).toBeInstanceOf(LockNotAcquiredError);
    expect((split as LockNotAcquiredError).attempts).toBe(11);
    expect(left).toBeNull();
    expect(full).toBeInstanceOf(LockNotAcquiredError);
    expect((full as LockNotAcquiredError).attempts).toBe(1);
  });
});
