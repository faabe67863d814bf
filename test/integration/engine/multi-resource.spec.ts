import { LockNotAcquiredError, type Lock, type Redlock } from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/** Locks over several resources at once: all-or-none on every node, one fencing token per resource. */

const lockKey = (r: string) => `redlock:{${r}}`;

describe('multi-resource locks over 5 real nodes', () => {
  let cluster: TestCluster;
  let a: Redlock;
  let b: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    a = await cluster.engine({ nodeTimeout: 100, ttl: 3000 });
    b = await cluster.engine({ nodeTimeout: 100, ttl: 3000 });
  });
  afterAll(() => cluster?.close());

  /** Lock key values of each resource on each node: result[resource][node]. */
  async function values(resources: readonly string[]): Promise<Record<string, Array<string | null>>> {
    const out: Record<string, Array<string | null>> = {};
    for (const r of resources) {
      out[r] = await Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).get(lockKey(r))));
    }
    return out;
  }

  test('all-or-none: one busy resource fails the whole lock and leaves no key of ours on any node', async () => {
    const held = await a.acquire('mr-b');
    // (A round decides on the first majority: the other votes may still be on their way.)
    await eventually(async () => (await values(['mr-b']))['mr-b']!.includes(null), false);
    const holder = (await values(['mr-b']))['mr-b']!;
    expect(new Set(holder).size).toBe(1);

    const err = await b.acquire(['mr-a', 'mr-b', 'mr-c'], { wait: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect((err as LockNotAcquiredError).resources).toEqual(['mr-a', 'mr-b', 'mr-c']);
    await sleep(50);
    expect(await values(['mr-a', 'mr-b', 'mr-c'])).toEqual({
      'mr-a': [null, null, null, null, null],
      'mr-b': holder, // the holder's key, untouched
      'mr-c': [null, null, null, null, null],
    });

    // Also while waiting: still nothing of ours anywhere, and it succeeds once the holder releases.
    const waiting = b.acquire(['mr-a', 'mr-b', 'mr-c'], { wait: 2000 });
    await sleep(100);
    expect((await values(['mr-a', 'mr-c'])) as unknown).toEqual({
      'mr-a': [null, null, null, null, null],
      'mr-c': [null, null, null, null, null],
    });
    await held.release();
    const lock = await waiting;
    const after = await values(['mr-a', 'mr-b', 'mr-c']);
    // A majority holds all three for us (a node may have refused: the waiter was woken by the first
    // node's release, possibly before the holder's release reached every node).
    const ours = after['mr-a']!.find((v) => v !== null);
    expect(ours).toBeDefined();
    const holdingAll = [0, 1, 2, 3, 4].filter((i) =>
      ['mr-a', 'mr-b', 'mr-c'].every((r) => after[r]![i] === ours),
    );
    expect(holdingAll.length).toBeGreaterThanOrEqual(3);
    expect(lock.fencingTokens['mr-b']).toBeGreaterThan(held.fencingToken);
    await lock.release();
    expect(await values(['mr-a', 'mr-b', 'mr-c'])).toEqual({
      'mr-a': [null, null, null, null, null],
      'mr-b': [null, null, null, null, null],
      'mr-c': [null, null, null, null, null],
    });
  });

  test('all-or-none per node: resources busy on different minorities leave no node able to grant both', async () => {
    // Each resource alone is free on a majority (3 nodes), but no majority of nodes has both free.
    for (const i of [0, 1]) await cluster.redis.client(i).set(lockKey('split-x'), 'other', 'PX', 3000);
    for (const i of [2, 3]) await cluster.redis.client(i).set(lockKey('split-y'), 'other', 'PX', 3000);
    const err = await b.acquire(['split-x', 'split-y'], { wait: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    await sleep(50);
    expect(await values(['split-x', 'split-y'])).toEqual({
      'split-x': ['other', 'other', null, null, null],
      'split-y': [null, null, 'other', 'other', null],
    });
    // Each one alone can be locked (a majority has it free).
    for (const r of ['split-x', 'split-y']) {
      const lock = await b.acquire(r, { wait: 0 });
      await lock.release();
    }
  });

  test('a resource busy on a minority: the majority grants all, the busy node is left untouched', async () => {
    for (const i of [0, 1]) await cluster.redis.client(i).set(lockKey('minor-y'), 'other', 'PX', 3000);
    const lock = await b.acquire(['minor-x', 'minor-y'], { wait: 0 });
    const v = await values(['minor-x', 'minor-y']);
    const ours = v['minor-x']![2];
    expect(ours).not.toBeNull();
    // Nodes 0 and 1 refused the whole request: not even the free resource was set there.
    expect(v).toEqual({
      'minor-x': [null, null, ours, ours, ours],
      'minor-y': ['other', 'other', ours, ours, ours],
    });
    await lock.release();
    expect((await values(['minor-y']))['minor-y']).toEqual(['other', 'other', null, null, null]);
  });

  test('fencingTokens has one own, frozen entry per resource, also for names like __proto__ and constructor', async () => {
    const lock = await a.acquire(['toString', '__proto__', 'constructor']);
    try {
      const tokens = lock.fencingTokens;
      expect(Object.keys(tokens).sort()).toEqual(['__proto__', 'constructor', 'toString']);
      for (const r of lock.resources) {
        expect(Object.hasOwn(tokens, r)).toBe(true);
        expect(typeof tokens[r]).toBe('number');
      }
      expect(lock.fencingToken).toBe(tokens['toString']); // the first resource as named, not as sorted
      expect(Object.isFrozen(tokens)).toBe(true);
      expect(lock.fencingTokens).toBe(tokens); // built once
    } finally {
      await lock.release();
    }
  });

  test('one token per resource, each strictly increasing across grants; fencingToken is the first resource', async () => {
    const seen: Record<string, number[]> = { t1: [], t2: [], t3: [] };
    const record = (lock: Lock) => {
      expect(Object.keys(lock.fencingTokens).sort()).toEqual([...lock.resources].sort());
      expect(lock.fencingToken).toBe(lock.fencingTokens[lock.resources[0]!]);
      for (const r of lock.resources) seen[r]!.push(lock.fencingTokens[r]!);
    };
    const shapes: string[][] = [['t1', 't2'], ['t2', 't1', 't3'], ['t1'], ['t3', 't1'], ['t2']];
    for (let n = 0; n < 60; n++) {
      const shape = shapes[n % shapes.length]!;
      const lock = await (n % 2 ? a : b).acquire(shape);
      expect(lock.resources).toEqual(shape); // the caller's order
      record(lock);
      await lock.release();
    }
    for (const r of ['t1', 't2', 't3']) {
      const tokens = seen[r]!;
      expect(tokens.length).toBeGreaterThan(20);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
    }
    // One counter per resource on each node, next to its lock key (same hash tag).
    for (const r of ['t1', 't2', 't3']) {
      const counters = await Promise.all(
        [0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).get(`${lockKey(r)}:fence`)),
      );
      const max = Math.max(...counters.map(Number));
      expect(max).toBeGreaterThanOrEqual(seen[r]![seen[r]!.length - 1]!);
      expect(
        counters.filter((c) => Number(c) >= seen[r]![seen[r]!.length - 1]!).length,
      ).toBeGreaterThanOrEqual(3);
    }
  });

  test('duplicates are merged, and the multi-resource lock extends and releases every key', async () => {
    const asked = performance.now();
    const lock = await a.acquire(['dup', 'dup', 'dup-2'], { ttl: 300 });
    expect(lock.resources).toEqual(['dup', 'dup-2']);
    expect(Object.keys(lock.fencingTokens).sort()).toEqual(['dup', 'dup-2']);
    await lock.extend(1000);
    // Past the first lease (300 ms from before the ask): every key is still there, by the extension.
    await sleep(asked + 350 - performance.now());
    const pttls = await Promise.all(
      [0, 1, 2, 3, 4].flatMap((i) => ['dup', 'dup-2'].map((r) => cluster.redis.client(i).pttl(lockKey(r)))),
    );
    for (const p of pttls) {
      expect(p).toBeGreaterThan(0);
      expect(p).toBeLessThanOrEqual(1000);
    }
    await expect(b.acquire('dup-2', { wait: 0 })).rejects.toBeInstanceOf(LockNotAcquiredError);
    await lock.release();
    const next = await b.acquire(['dup-2', 'dup'], { wait: 0 });
    expect(next.fencingTokens['dup']).toBeGreaterThan(lock.fencingTokens['dup']!);
    expect(next.fencingTokens['dup-2']).toBeGreaterThan(lock.fencingTokens['dup-2']!);
    expect(next.fencingToken).toBe(next.fencingTokens['dup-2']);
    await next.release();
  });

  test('tokens of a multi-resource lock keep increasing per resource while nodes restart empty', async () => {
    const resources = ['mr-fence-1', 'mr-fence-2'];
    const last: Record<string, number> = { 'mr-fence-1': 0, 'mr-fence-2': 0 };
    const violations: string[] = [];
    const victims = [[0], [1, 3], [0, 4], [2], [0, 2]];
    for (let g = 0; g < 150; g++) {
      if (g > 0 && g % 30 === 0) {
        const down = victims[g / 30 - 1]!;
        await Promise.all(down.map((i) => cluster.redis.restart(i)));
        await reachable([a, b]);
      }
      // Interleave single-resource grants so the two counters drift apart.
      const shape = g % 3 === 0 ? [resources[g % 2]!] : resources;
      const lock = await (g % 2 ? a : b).acquire(shape, { wait: 2000 });
      for (const r of shape) {
        if (!(lock.fencingTokens[r]! > last[r]!))
          violations.push(`grant ${g} ${r}: ${lock.fencingTokens[r]} after ${last[r]}`);
        last[r] = lock.fencingTokens[r]!;
      }
      await lock.release();
    }
    expect(violations).toEqual([]);
  });

  test("a release skips a multi-resource waiter nobody listens for: the next waiter's turn comes at once", async () => {
    // Turns of 1,200 ms (4 x nodeTimeout): before, a dead waiter's turn held the key that long.
    const engine = await cluster.engine({ nodeTimeout: 300, ttl: 3000 });
    const held = await engine.acquire('mr-ghost-a');
    // A crashed process's place in line, ahead of every ticket: a multi-resource value ('*') whose
    // wake channel nobody subscribes to (the simulator's seed 11000023: 324 of 358 turns went to such).
    const ghost = 'GhostProcess0000:1*';
    await Promise.all(
      [0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).zadd(`${lockKey('mr-ghost-a')}:queue`, 1, ghost)),
    );
    const waiting = engine.acquire(['mr-ghost-a', 'mr-ghost-b'], { wait: 10_000 });
    await sleep(200); // its attempt failed (busy) and queued it behind the ghost
    const heldValue = (await values(['mr-ghost-a']))['mr-ghost-a']![0];
    await held.release();
    let after: Array<string | null> = [];
    for (const until = performance.now() + 5000; performance.now() < until; await sleep(5)) {
      after = (await values(['mr-ghost-a']))['mr-ghost-a']!;
      if (after.every((v) => v !== heldValue)) break; // the release ran on every node
    }
    expect(after.filter((v) => v === `~${ghost}`)).toEqual([]);
    const lock = await waiting;
    await lock.release();
    await engine.close();
  });

  /** Waits until the engines are connected to every node again (bounded). */
  async function reachable(engines: Redlock[]): Promise<void> {
    const until = performance.now() + 5000;
    while (!engines.every((e) => e.status().every((s) => s.reachable))) {
      if (performance.now() > until) throw new Error('nodes not reachable again');
      await sleep(10);
    }
  }
});
