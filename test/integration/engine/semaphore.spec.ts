import {
  LockNotAcquiredError,
  LockUsageError,
  RedlockOptionsError,
  type Lock,
  type Redlock,
} from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * Semaphores (`permits` > 1) on real redis-server nodes: k slots, each a Redlock of its own.
 * Histories are checked for the number of holders at once, and the shares of each client.
 */

const slot = (r: string, permit: number) => `redlock:{${r}}:permit:${permit}`;

/** What a holder did: when it held (performance.now, in this process), which slot, its token. */
interface Held {
  client: number;
  permit: number | undefined;
  token: number;
  from: number;
  to: number;
}

/** The most intervals of `history` that overlap at any instant. */
function maxOverlap(history: readonly Held[]): number {
  const edges = history.flatMap((h) => [
    { at: h.from, d: 1 },
    { at: h.to, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d); // an end before a start at the same instant
  let now = 0;
  let max = 0;
  for (const e of edges) max = Math.max(max, (now += e.d));
  return max;
}

/**
 * `clients` engines loop on `using(resource, { permits })` for `ms`; each holder records when it
 * held (inside its validity: from the grant to before its release).
 */
async function contend(
  engines: readonly Redlock[],
  resource: string,
  permits: number,
  ms: number,
  holdMs = 5,
): Promise<Held[]> {
  const history: Held[] = [];
  const until = performance.now() + ms;
  await Promise.all(
    engines.map(async (engine, client) => {
      while (performance.now() < until) {
        await engine
          .using(
            resource,
            async (lock) => {
              const from = performance.now();
              await sleep(holdMs);
              history.push({
                client,
                permit: lock.permit,
                token: lock.fencingToken,
                from,
                to: performance.now(),
              });
            },
            { permits, wait: 10_000, ttl: 2000 },
          )
          .catch((err: unknown) => {
            if (!(err instanceof LockNotAcquiredError)) throw err;
          });
      }
    }),
  );
  return history;
}

/** Per-client counts, and the largest ratio of a count to their median. */
function shares(history: readonly Held[], clients: number): { counts: number[]; spread: number } {
  const counts = Array.from({ length: clients }, (_, c) => history.filter((h) => h.client === c).length);
  const sorted = [...counts].sort((a, b) => a - b);
  const median = sorted[Math.floor(clients / 2)]!;
  const spread = Math.max(...counts.map((c) => Math.max(c / median, median / c)));
  return { counts, spread };
}

describe('semaphores: k slots, each a Redlock of its own', () => {
  let cluster: TestCluster;
  let a: Redlock;
  let b: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    a = await cluster.engine();
    b = await cluster.engine();
  });
  afterAll(() => cluster?.close());

  test('k holders at once, each on its own slot with its own fencing tokens; the k+1-th waits', async () => {
    const first = await a.acquire('two', { permits: 2 });
    const second = await b.acquire('two', { permits: 2 });
    expect([first.permit, second.permit].sort()).toEqual([0, 1]);
    expect(first.mode).toBe('write');
    expect(await b.tryAcquire('two', { permits: 2 })).toBeNull();
    // (A round decides on the first majority: the third vote may still be on its way.)
    const value = (first as unknown as { value: string }).value;
    for (const node of [0, 1, 2]) {
      const read = () => cluster.redis.client(node).get(slot('two', first.permit!));
      expect(await eventually(read, value)).toBe(value);
    }
    const third$ = b.acquire('two', { permits: 2, wait: 5000 });
    await sleep(50);
    const freed = first.permit;
    const token = first.fencingToken;
    await first.release();
    const third = await third$;
    expect(third.permit).toBe(freed); // the released slot, handed to the first waiter
    expect(third.fencingToken).toBeGreaterThan(token); // fencing per key and permit
    await Promise.all([second.release(), third.release()]);
    // A plain lock has no permit.
    const plain = await a.acquire('plain-one');
    expect(plain.permit).toBeUndefined();
    await plain.release();
  });

  test('inspect: holders, free permits, mode and each slot, also from an engine that never used the key', async () => {
    const one = await a.acquire('looked-at', { permits: 3, ttl: 5000 });
    const two = await a.acquire('looked-at', { permits: 3, ttl: 5000 });
    for (const engine of [a, b]) {
      const view = await engine.inspect('looked-at');
      expect(view).toMatchObject({
        held: true,
        ttlMs: null, // a permit is free
        fencingToken: Math.max(one.fencingToken, two.fencingToken),
        semaphore: { permits: 3, holders: 2, free: 1, mode: 'write' },
      });
      expect(view.semaphore!.slots.map((s) => s.held)).toEqual([true, true, false]);
      expect(view.semaphore!.slots[one.permit!]!.fencingToken).toBe(one.fencingToken);
    }
    const three = await a.acquire('looked-at', { permits: 3, ttl: 5000 });
    const full = await b.inspect('looked-at');
    expect(full.semaphore!.free).toBe(0);
    expect(full.ttlMs).toBeGreaterThan(4000); // when the first permit frees
    await Promise.all([one.release(), two.release(), three.release()]);
    expect((await b.inspect('looked-at')).semaphore).toMatchObject({ holders: 0, free: 3 });
    expect((await b.inspect('plain-one')).semaphore).toBeUndefined();
  });

  test('a slot granted only on a minority is given back at once', async () => {
    // Node 0 has slot 0 taken by someone else: it grants slot 1, nodes 1 and 2 grant slot 0.
    await cluster.redis.client(0).set(slot('minority', 0), 'someone-else', 'PX', 5000);
    const lock = await a.acquire('minority', { permits: 2 });
    expect(lock.permit).toBe(0);
    // Given back one-way beside the grant: read until it landed, at most 1 s (held, the slot would
    // stay for the lock's 10 s ttl).
    const minorityGrant = () => cluster.redis.client(0).get(slot('minority', 1));
    expect(await eventually(minorityGrant, null, 1000)).toBeNull();
    // And slot 1 is free for another client on a majority.
    const other = await b.acquire('minority', { permits: 2 });
    expect(other.permit).toBe(1);
    await Promise.all([lock.release(), other.release()]);
  });

  test('never more than k holders under contention; grants first come, first served', async () => {
    const engines = [a, b, ...(await Promise.all([0, 1, 2, 3, 4, 5].map(() => cluster.engine())))];
    const history = await contend(engines, 'contended', 3, 3000);
    const { counts, spread } = shares(history, engines.length);
    console.log(
      `semaphore k=3, 8 clients, 3 s: ${history.length} grants, max holders ${maxOverlap(history)}, ` +
        `shares ${counts.join('/')} (max/median ${spread.toFixed(2)})`,
    );
    expect(maxOverlap(history)).toBeLessThanOrEqual(3);
    expect(maxOverlap(history)).toBe(3); // the permits were used
    expect(spread).toBeLessThanOrEqual(1.5);
    // Per slot, tokens strictly increase in grant order.
    for (const permit of [0, 1, 2]) {
      const tokens = history
        .filter((h) => h.permit === permit)
        .sort((x, y) => x.from - y.from)
        .map((h) => h.token);
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(tokens.length);
    }
  });

  test('one key with different permits, or as a plain lock, is a typed error naming both uses', async () => {
    const held = await a.acquire('usage', { permits: 3 });
    // In the same engine: no command sent.
    await expect(a.acquire('usage', { permits: 2 })).rejects.toThrow(LockUsageError);
    await expect(a.acquire('usage')).rejects.toThrow(
      /used as a plain lock.*already used as a semaphore with permits 3/,
    );
    // In another process (engine): the slot search finds the marker.
    const err = (await b.acquire('usage', { permits: 2 }).catch((e: unknown) => e)) as LockUsageError;
    expect(err).toBeInstanceOf(LockUsageError);
    expect(err.message).toMatch(
      /used as a semaphore with permits 2.*already used as a semaphore with permits 3/,
    );
    await held.release();
    // A plain lock in another process finds the semaphore's marker in the key: on its busy path only.
    const other = await cluster.engine();
    await expect(other.acquire('usage', { wait: 1000 })).rejects.toThrow(
      /"usage" is used as a plain lock \(permits 1\), but it is already used as a semaphore with permits 3/,
    );
    // A key used as a plain lock (its fence counter) is not taken as a semaphore.
    await (await b.acquire('used-plain')).release();
    const c = await cluster.engine();
    await expect(c.acquire('used-plain', { permits: 2 })).rejects.toThrow(/already used as a plain lock/);
    // Several resources with permits.
    await expect(a.acquire(['x', 'y'], { permits: 2 })).rejects.toThrow(RedlockOptionsError);
    await expect(a.acquire('x', { permits: 0 })).rejects.toThrow(RedlockOptionsError);
  });

  test('a minority node killed: still at most k holders', async () => {
    const engines = await Promise.all([0, 1, 2, 3].map(() => cluster.engine({ nodeTimeout: 50 })));
    const history$ = contend(engines, 'killed', 2, 2500);
    await sleep(800);
    const killedAt = performance.now();
    await cluster.redis.kill(2);
    const history = await history$;
    const late = history.filter((h) => h.from > killedAt);
    console.log(
      `semaphore k=2, 4 clients, node killed: ${late.length} grants, max holders ${maxOverlap(late)}`,
    );
    expect(maxOverlap(history)).toBeLessThanOrEqual(2);
    expect(late.length).toBeGreaterThan(20);
  });
});

describe('semaphores and the restart guard', () => {
  test('a node that lost its data abstains from slot searches until the guard has passed', async () => {
    const nodes = await TestCluster.start(3);
    try {
      // Nodes in service for long: the guard has passed on each.
      await Promise.all([0, 1, 2].map((i) => nodes.redis.client(i).set('redlock:__restart_guard__', '0')));
      const engine = await nodes.engine({ restartGuard: 2500, ttl: 2000 });
      const first = await engine.acquire('guarded', { permits: 2 });
      await nodes.redis.client(0).flushall(); // node 0 forgets the slot it granted, and every counter
      const second = await engine.acquire('guarded', { permits: 2 });
      expect(second.permit).not.toBe(first.permit);
      // Node 0 took no part: it abstained (the slot's counter was missing: the guard's marker too).
      // The search may decide before node 0's reply arrives: wait for that reply.
      const end = performance.now() + 2000;
      while (engine.status()[0]!.abstainingUntil === undefined && performance.now() < end) await sleep(10);
      expect(engine.status()[0]!.abstainingUntil).toBeGreaterThan(Date.now() + 1000);
      expect(await nodes.redis.client(0).get(slot('guarded', second.permit!))).toBeNull();
      expect(await engine.tryAcquire('guarded', { permits: 2 })).toBeNull();
      await Promise.all([first.release(), second.release()]);
    } finally {
      await nodes.close();
    }
  });
});

// Keep the type import used when the tests are filtered.
export type { Lock };
