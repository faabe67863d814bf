import {
  LockNotAcquiredError,
  LockUpgradeError,
  LockUsageError,
  RedlockOptionsError,
  type Lock,
  type Redlock,
} from '../../../lib/index.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { apartFrom, ticketErrorMs, waiting } from '../../support/waiting-line.js';

/*
 * Read-write locks (`mode: 'read'`) on real redis-server nodes: readers share the key, a writer
 * (a plain lock of the same key) excludes them and is not starved by them, a writer's release
 * lets the queued readers in together, and the tokens order reads between writes.
 */

const lockKey = (r: string) => `redlock:{${r}}`;
const readersKey = (r: string) => `redlock:{${r}}:readers`;

/** Polls `check` until it holds (releases are one-way: the nodes run them a moment later). */
async function eventually(check: () => Promise<boolean>, ms = 2000): Promise<void> {
  const until = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > until) throw new Error('condition not met in time');
    await sleep(10);
  }
}

/** What a holder did: its mode, when it held (performance.now, this process), its token. */
interface Held {
  mode: 'read' | 'write';
  token: number;
  from: number;
  to: number;
}

describe('read-write locks on the quorum', () => {
  let cluster: TestCluster;
  let a: Redlock;
  let b: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    a = await cluster.engine();
    b = await cluster.engine();
  });
  afterAll(() => cluster?.close());

  test('readers share the key; a writer is kept out until the last reader leaves', async () => {
    const r1 = await a.acquire('shared', { mode: 'read', ttl: 5000 });
    const r2 = await b.acquire('shared', { mode: 'read', ttl: 5000 });
    expect([r1.mode, r2.mode]).toEqual(['read', 'read']);
    expect(r1.permit).toBeUndefined();
    for (const node of [0, 1, 2]) {
      const redis = cluster.redis.client(node);
      expect(await redis.get(lockKey('shared'))).toBe('~read');
      expect(Object.keys(await redis.hgetall(readersKey('shared')))).toHaveLength(2);
    }
    // A writer (a plain lock of the key, or mode 'write') finds it busy.
    expect(await b.tryAcquire('shared')).toBeNull();
    expect(await a.tryAcquire('shared', { mode: 'write' })).toBeNull();
    const view = await b.inspect('shared');
    expect(view).toMatchObject({ held: true, mode: 'read', readers: 2 });
    expect(view.ttlMs).toBeGreaterThan(4000);
    await r1.release();
    await eventually(async () => (await b.inspect('shared')).readers === 1);
    expect(await b.tryAcquire('shared')).toBeNull(); // r2 still reads
    await r2.release();
    await eventually(async () => (await cluster.redis.client(0).get(lockKey('shared'))) === null);
    const writer = await b.acquire('shared');
    expect(writer.mode).toBe('write');
    // And a reader is kept out while the writer holds.
    expect(await a.tryAcquire('shared', { mode: 'read' })).toBeNull();
    expect((await a.inspect('shared')).mode).toBeUndefined();
    await writer.release();
    // Under the clock guard (on by default) a read's grant carries the node's clock, as a write's does.
    const probe = 'probe:0^';
    const vote = await a.voters[0]!.acquire([lockKey('clocked')], probe, 1000, '');
    expect(vote).toMatchObject({ kind: 'granted', clockUs: expect.any(Number) as number });
    await a.voters[0]!.letGo([lockKey('clocked')], probe, { op: 'release' });
  });

  test('a writer waiting is not overtaken by later readers, and its release lets the queued readers in together', async () => {
    const r1 = await a.acquire('fair', { mode: 'read', ttl: 5000 });
    const writerErrorMs = ticketErrorMs(b);
    const writerAsked = performance.now();
    const w$ = b.acquire('fair', { wait: 5000, ttl: 5000 });
    await waiting(cluster, b, 'fair', 1); // the writer is in line, and heard (waiting-line.ts)
    // A later reader does not get in beside r1: the writer waits ahead of it.
    expect(await a.tryAcquire('fair', { mode: 'read' })).toBeNull();
    await apartFrom(writerAsked, writerErrorMs + ticketErrorMs(a));
    const later = [0, 1, 2].map(() => a.acquire('fair', { mode: 'read', wait: 5000 }));
    await waiting(cluster, a, 'fair', 4); // queued behind the writer, and heard
    await r1.release();
    const w = await w$;
    const wroteAt = performance.now();
    await sleep(50);
    // The readers waited behind the writer.
    const before = await Promise.race([Promise.all(later).then(() => 'in'), sleep(0).then(() => 'waiting')]);
    expect(before).toBe('waiting');
    await w.release();
    const readers = await Promise.all(later);
    const inAt = performance.now();
    expect(inAt - wroteAt).toBeLessThan(1000); // handed over on release, not after a lease or a poll
    // All three hold together, each with a token at least the writer's.
    expect((await b.inspect('fair')).readers).toBe(3);
    for (const r of readers) expect(r.fencingToken).toBeGreaterThanOrEqual(w.fencingToken);
    await Promise.all(readers.map((r) => r.release()));
    const next = await b.acquire('fair', { wait: 2000 });
    for (const r of readers) expect(next.fencingToken).toBeGreaterThan(r.fencingToken);
    await next.release();
  });

  test('a stream of readers does not starve a writer; no writer ever beside a reader or a writer', async () => {
    const history: Held[] = [];
    const until = performance.now() + 2500;
    const engines = [a, b, ...(await Promise.all([0, 1, 2, 3, 4].map(() => cluster.engine())))];
    let writerGrants = 0;
    const loop = async (engine: Redlock, mode: 'read' | 'write') => {
      while (performance.now() < until) {
        await engine
          .using(
            'stream',
            async (lock) => {
              const from = performance.now();
              await sleep(mode === 'read' ? 30 : 5);
              history.push({ mode, token: lock.fencingToken, from, to: performance.now() });
              if (mode === 'write') writerGrants++;
            },
            { mode, wait: 10_000, ttl: 3000 },
          )
          .catch((err: unknown) => {
            if (!(err instanceof LockNotAcquiredError)) throw err;
          });
      }
    };
    // Six readers whose holds overlap all the time (each 30 ms, started apart), one writer.
    const readers = engines.slice(0, 6).map(async (e, i) => {
      await sleep(i * 5);
      await loop(e, 'read');
    });
    await Promise.all([...readers, loop(engines[6]!, 'write')]);
    const writes = history.filter((h) => h.mode === 'write');
    const reads = history.filter((h) => h.mode === 'read');
    console.log(`read-write stream, 2.5 s: ${reads.length} reads, ${writes.length} writes`);
    // Not starved: the writer gets at least half an average reader's grants (about as many here;
    // readers that overtake waiting writers let it in 4-6 times against ~65 per reader).
    expect(writerGrants).toBeGreaterThanOrEqual(reads.length / 6 / 2);
    expect(writerGrants).toBeGreaterThanOrEqual(5);
    expect(reads.length).toBeGreaterThan(writes.length);
    // Exclusion: a write overlaps nothing.
    for (const w of writes) {
      const overlapping = history.filter((h) => h !== w && h.from < w.to && w.from < h.to);
      expect(overlapping).toEqual([]);
    }
    // Readers did overlap each other (shared).
    const shared = reads.some((r) => reads.some((o) => o !== r && o.from < r.to && r.from < o.to));
    expect(shared).toBe(true);
    // Tokens: a read is at least the last write before it and below every write after it.
    for (const r of reads) {
      for (const w of writes) {
        if (w.to <= r.from) expect(r.token).toBeGreaterThanOrEqual(w.token);
        if (r.to <= w.from) expect(r.token).toBeLessThan(w.token);
      }
    }
    const writeTokens = writes.sort((x, y) => x.from - y.from).map((w) => w.token);
    expect(writeTokens).toEqual([...writeTokens].sort((x, y) => x - y));
  });

  test('a read joins a held write or read in one call chain; a write inside a held read is an upgrade error', async () => {
    await a.using(
      'nested',
      async (outer) => {
        const inner = await a.acquire('nested', { mode: 'read' });
        expect(inner.fencingToken).toBe(outer.fencingToken);
        expect(inner.mode).toBe('write'); // the held lock's
      },
      { ttl: 3000 },
    );
    await a.using(
      'nested',
      async (outer) => {
        const inner = await a.acquire('nested', { mode: 'read' });
        expect(inner.fencingToken).toBe(outer.fencingToken);
        const err = await a.acquire('nested').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LockUpgradeError);
        expect(err).toBeInstanceOf(LockUsageError);
        expect((err as Error).message).toMatch(/upgrade would deadlock/);
      },
      { mode: 'read', ttl: 3000 },
    );
  });

  test('typed errors: several resources with mode read; one key as a semaphore and as a read-write lock', async () => {
    await expect(a.acquire(['x', 'y'], { mode: 'read' })).rejects.toThrow(RedlockOptionsError);
    await expect(a.acquire('x', { mode: 'reed' as 'read' })).rejects.toThrow(RedlockOptionsError);
    await expect(a.acquire('x', { mode: 'read', permits: 2 })).rejects.toThrow(RedlockOptionsError);
    // In one engine: no command.
    const sem = await a.acquire('both-uses', { permits: 2 });
    await expect(a.acquire('both-uses', { mode: 'read' })).rejects.toThrow(
      /used as a read-write lock \(mode 'read'\).*already used as a semaphore with permits 2/,
    );
    // In another engine: the reader finds the semaphore's marker on its busy path.
    const other = await cluster.engine();
    await expect(other.acquire('both-uses', { mode: 'read', wait: 500 })).rejects.toThrow(
      /used as a read-write lock \(mode 'read'\).*already used as a semaphore with permits 2/,
    );
    await sem.release();
    // A semaphore's slot search finds the readers' marker.
    const reader = await b.acquire('read-first', { mode: 'read', ttl: 5000 });
    const third = await cluster.engine();
    await expect(third.acquire('read-first', { permits: 2 })).rejects.toThrow(
      /used as a semaphore with permits 2.*already used as a read-write lock/,
    );
    await expect(b.acquire('read-first', { permits: 2 })).rejects.toThrow(LockUsageError);
    await reader.release();
  });

  test('watchdog extends a read lease; a reader granted on a minority gives it back', async () => {
    const lock = await a.using(
      'watched',
      async (held) => {
        await sleep(700); // beyond the ttl: the watchdog extended it
        expect(held.signal.aborted).toBe(false);
        return held;
      },
      { mode: 'read', ttl: 500 },
    );
    expect(lock.signal.aborted).toBe(true); // released
    // A writer holds the key on nodes 1 and 2 only: the reader wins node 0, loses, gives it back.
    await cluster.redis.client(1).set(lockKey('minority'), 'someone', 'PX', 5000);
    await cluster.redis.client(2).set(lockKey('minority'), 'someone', 'PX', 5000);
    expect(await a.tryAcquire('minority', { mode: 'read' })).toBeNull();
    await eventually(async () => (await cluster.redis.client(0).get(lockKey('minority'))) === null);
    expect(await cluster.redis.client(0).hlen(readersKey('minority'))).toBe(0);
  });

  test('a reader has what a lock has: events, holdAtLeast, and holds heal on a voter that lost it', async () => {
    const events: string[] = [];
    const subscription = a.events$.subscribe((e) => {
      if (e.resources[0] === 'kept') events.push(e.type);
    });
    await a.using('kept', () => sleep(5), { mode: 'read', holdAtLeast: 400, ttl: 2000 });
    subscription.unsubscribe();
    expect(events).toEqual(['acquired', 'released']);
    // Released early: the read lease stays until 400 ms after the grant, so a writer waits.
    expect(await b.tryAcquire('kept')).toBeNull();
    const writer = await b.acquire('kept', { wait: 2000 });
    await writer.release();
    // Node 0 loses the reader (flushed; the restart guard is off here): the next extension re-takes it.
    const reader = await a.acquire('healed', { mode: 'read', ttl: 3000 });
    const value = (reader as unknown as { value: string }).value;
    await cluster.redis.client(0).flushall();
    expect(await cluster.redis.client(0).hget(readersKey('healed'), value)).toBeNull();
    await reader.extend(3000);
    await eventually(async () => (await cluster.redis.client(0).hget(readersKey('healed'), value)) !== null);
    expect(await cluster.redis.client(0).get(lockKey('healed'))).toBe('~read');
    await reader.release();
  });

  test('a crashed reader’s lease ends by itself', async () => {
    const r = await a.acquire('crash', { mode: 'read', ttl: 400 });
    const stays = await b.acquire('crash', { mode: 'read', ttl: 5000 });
    void r; // never released, never extended: its lease ends at 400 ms
    await stays.release();
    // The key is not freed by the release while r's lease runs, then frees by itself.
    expect(await b.tryAcquire('crash')).toBeNull();
    const w = await b.acquire('crash', { wait: 2000 });
    expect(w.mode).toBe('write');
    await w.release();
  });
});

describe('read-write locks under minority faults (S27, short)', () => {
  test('one of 5 nodes stopped, another killed: no writer beside a reader or a writer; writers still served', async () => {
    const nodes = await TestCluster.start(5);
    try {
      const engines = await Promise.all([0, 1, 2, 3, 4].map(() => nodes.engine({ nodeTimeout: 50 })));
      const history: Held[] = [];
      const until = performance.now() + 2500;
      const loop = async (engine: Redlock, mode: 'read' | 'write') => {
        while (performance.now() < until) {
          await engine
            .using(
              'faulty',
              async (lock) => {
                const from = performance.now();
                await sleep(mode === 'read' ? 20 : 5);
                history.push({ mode, token: lock.fencingToken, from, to: performance.now() });
              },
              { mode, wait: 10_000, ttl: 2000 },
            )
            .catch((err: unknown) => {
              if (!(err instanceof LockNotAcquiredError)) throw err;
            });
        }
      };
      const running = Promise.all(engines.map((e, i) => loop(e, i < 3 ? 'read' : 'write')));
      await sleep(600);
      nodes.redis.stop(1); // hung: connections open, nothing answers
      await sleep(600);
      await nodes.redis.kill(3);
      await running;
      nodes.redis.resume(1);
      const writes = history.filter((h) => h.mode === 'write');
      const late = history.filter((h) => h.from > until - 1300);
      console.log(
        `read-write under faults: ${history.length} grants (${writes.length} writes), ${late.length} after the kill`,
      );
      for (const w of writes) {
        expect(history.filter((h) => h !== w && h.from < w.to && w.from < h.to)).toEqual([]);
      }
      expect(late.filter((h) => h.mode === 'write').length).toBeGreaterThan(0);
      expect(late.filter((h) => h.mode === 'read').length).toBeGreaterThan(0);
    } finally {
      await nodes.close();
    }
  });
});

describe('read-write locks and the restart guard', () => {
  test('a voter restarted empty does not grant a read over a writer it forgot', async () => {
    const nodes = await TestCluster.start(3);
    try {
      await Promise.all([0, 1, 2].map((i) => nodes.redis.client(i).set('redlock:__restart_guard__', '0')));
      const engine = await nodes.engine({ restartGuard: 2500, ttl: 2000 });
      const other = await nodes.engine({ restartGuard: 2500, ttl: 2000 });
      const writer = await engine.acquire('guarded', { ttl: 2000 });
      await nodes.redis.client(0).flushall(); // node 0 forgets the writer, its counter and its marker
      // Without the guard, node 0 and nothing else would grant; with it node 0 abstains: no read.
      expect(await other.tryAcquire('guarded', { mode: 'read' })).toBeNull();
      // The round decided on the two refusals: node 0's reply may arrive a moment later.
      await eventually(async () => other.status()[0]!.abstainingUntil !== undefined);
      expect(await nodes.redis.client(0).hlen(readersKey('guarded'))).toBe(0);
      expect(other.status()[0]!.abstainingUntil).toBeGreaterThan(Date.now() + 1000);
      // Writer gone: the two others grant the read (node 0 still abstains).
      await writer.release();
      const reader = await other.acquire('guarded', { mode: 'read', wait: 1000 });
      expect(reader.fencingToken).toBeGreaterThanOrEqual(writer.fencingToken);
      expect(await nodes.redis.client(0).hlen(readersKey('guarded'))).toBe(0);
      await reader.release();
    } finally {
      await nodes.close();
    }
  });
});

// Keep the type import used when the tests are filtered.
export type { Lock };
