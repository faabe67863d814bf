import { Redis } from 'ioredis';
import type { RedisNodes } from '../../../lib/testing/index.js';
import { MINIMAL_ACL } from '../../support/acl.js';
import { commandStats } from '../../support/commandstats.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { Deployment, until } from '../deployments/support.js';

/*
 * Letting go is one-way on the engine's own connections (lib/core/voter/one-way.ts): CLIENT REPLY
 * SKIP and the release script in one write, no reply. These tests count what the servers ran
 * (INFO commandstats), check that every later reply still answers its own command, and that the
 * engine falls back to replies where it must.
 */

const PREFIX = 'redlock:';
const lockKey = (r: string) => `${PREFIX}{${r}}`;

async function resetStats(nodes: RedisNodes): Promise<void> {
  await Promise.all(nodes.urls.map((_, i) => nodes.client(i).call('CONFIG', 'RESETSTAT')));
}

/** Every node answered the engine's one-way probe (CLIENT REPLY ON) since `resetStats`. */
function probed(nodes: RedisNodes): Promise<boolean> {
  return Promise.all(nodes.urls.map((_, i) => commandStats(nodes.client(i), 'client|reply'))).then((stats) =>
    stats.every((s) => s.calls + s.rejected >= 1),
  );
}

describe('one-way release on the engine’s own connections (real nodes)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
  });
  afterAll(() => cluster?.close());

  test('each release is one CLIENT REPLY SKIP + script per node; keys are gone, and every later reply answers its own command', async () => {
    const nodes = cluster.redis;
    await resetStats(nodes);
    const engine = await cluster.engine({ nodeTimeout: 500 });
    await until(() => probed(nodes));
    await resetStats(nodes);

    // UTF-8 names (byte lengths differ from string lengths) and a multi-resource lock.
    const resources = ['résumé-🔒', 'plain'];
    let lastToken = 0;
    const cycles = 40;
    for (let i = 0; i < cycles; i++) {
      const lock = await engine.acquire(resources, { ttl: 5000 });
      expect(lock.fencingToken).toBeGreaterThan(lastToken);
      lastToken = lock.fencingToken;
      await lock.extend(5000); // a reply read after one-way calls on the same connection
      expect((await engine.inspect(resources[0]!)).held).toBe(true);
      await lock.release();
      expect((await engine.inspect(resources[0]!)).held).toBe(false);
    }

    for (let i = 0; i < 5; i++) {
      expect(await commandStats(nodes.client(i), 'client|reply')).toEqual({ calls: cycles, rejected: 0 });
      for (const resource of resources) expect(await nodes.client(i).exists(lockKey(resource))).toBe(0);
    }
  });

  test('once release resolves, a command on another connection comes after it, also for releases batched in one tick', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine();
    await until(() => probed(nodes));
    for (let round = 0; round < 10; round++) {
      const names = Array.from({ length: 8 }, (_, i) => `batched-${round}-${i}`);
      const locks = await Promise.all(names.map((name) => engine.acquire(name)));
      // Eight releases in one tick: corked, they leave together at the end of the tick.
      await Promise.all(locks.map((lock) => lock.release()));
      // Sent in the same tick as the continuation, through the inspection connections.
      const left = await Promise.all(
        nodes.urls.map((_, i) => nodes.client(i).exists(...names.map((name) => lockKey(name)))),
      );
      expect(left).toEqual([0, 0, 0, 0, 0]);
    }
  });

  test('release resolves without waiting for replies: with 3 of 5 nodes stopped it returns at once, and they apply it when resumed', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 1000 });
    await until(() => probed(nodes));
    const lock = await engine.acquire('stopped', { ttl: 10_000 });
    for (const i of [0, 1, 2]) nodes.stop(i);
    try {
      const started = performance.now();
      await lock.release();
      // Waiting for replies, this would take nodeTimeout (1000 ms): no majority can answer.
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      for (const i of [0, 1, 2]) nodes.resume(i);
    }
    await until(async () => {
      const left = await Promise.all(nodes.urls.map((_, i) => nodes.client(i).exists(lockKey('stopped'))));
      return left.every((n) => n === 0);
    });
    // The keys are gone well before their 10 s lease: another engine takes the lock at once.
    const other = await cluster.engine();
    const next = await other.tryAcquire('stopped');
    expect(next).not.toBeNull();
    await next?.release();
  });

  test('confirmRelease: true: releases wait for a majority of replies (3 of 5 nodes stopped: nodeTimeout), no CLIENT REPLY SKIP is sent', async () => {
    const nodes = cluster.redis;
    await resetStats(nodes);
    const engine = await cluster.engine({ nodeTimeout: 1000, confirmRelease: true });
    await until(() => probed(nodes));
    await resetStats(nodes);
    for (let i = 0; i < 10; i++) await (await engine.acquire('confirmed', { ttl: 5000 })).release();
    for (let i = 0; i < 5; i++) {
      // Not even the probe: the connections were probed before the reset.
      expect(await commandStats(nodes.client(i), 'client|reply')).toEqual({ calls: 0, rejected: 0 });
      expect(await nodes.client(i).exists(lockKey('confirmed'))).toBe(0);
    }

    const lock = await engine.acquire('confirmed-stopped', { ttl: 10_000 });
    for (const i of [0, 1, 2]) nodes.stop(i);
    let tookMs: number;
    try {
      const started = performance.now();
      await lock.release();
      tookMs = performance.now() - started;
    } finally {
      for (const i of [0, 1, 2]) nodes.resume(i);
    }
    // No majority can answer: the release waits for the nodes' time-out (one-way took < 200 ms above).
    expect(tookMs).toBeGreaterThanOrEqual(900);
    await until(async () => {
      const left = await Promise.all(
        nodes.urls.map((_, i) => nodes.client(i).exists(lockKey('confirmed-stopped'))),
      );
      return left.every((n) => n === 0);
    });
  });

  test('a flushed script cache: one-way calls that met it are sent again once NOSCRIPT comes back; no key is left, and releases are one-way again', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 200 });
    await until(() => probed(nodes));
    await Promise.all(nodes.urls.map((_, i) => nodes.client(i).call('SCRIPT', 'FLUSH')));
    // Node 4 is paused: the acquire is decided by the other four (NOSCRIPT, then the source), and
    // the release goes to node 4 one-way behind the acquire, before its NOSCRIPT can come back.
    nodes.stop(4);
    try {
      const lock = await engine.acquire('flushed', { ttl: 10_000 });
      await lock.release();
    } finally {
      nodes.resume(4);
    }
    // Node 4 then runs the acquire (NOSCRIPT: the engine sends its source again, and node 4
    // grants it) and the one-way release (NOSCRIPT, unanswered): the release is sent again.
    await until(async () => (await nodes.client(4).exists(lockKey('flushed'))) === 0, 2000); // lease: 10 s
    for (let i = 0; i < 4; i++) expect(await nodes.client(i).exists(lockKey('flushed'))).toBe(0);
    // The scripts are loaded again: releases are one-way again, one CLIENT REPLY SKIP each.
    await sleep(50);
    await resetStats(nodes);
    for (let i = 0; i < 3; i++) await (await engine.acquire('flushed')).release();
    for (let i = 0; i < 5; i++) {
      expect(await commandStats(nodes.client(i), 'client|reply')).toEqual({ calls: 3, rejected: 0 });
    }
  });
});

describe('releases wait for replies where one-way is not safe (real nodes)', () => {
  const deployment = new Deployment();
  afterAll(() => deployment.close());

  test('an ACL user without +client|reply: the probe is refused, releases are answered, the engine works', async () => {
    const acl = MINIMAL_ACL.filter((rule) => rule !== '+client|reply');
    const nodes = await deployment.nodes(3, { extraArgs: ['--user', 'locker', ...acl] });
    const urls = nodes.ports.map((port) => `redis://locker:lock-secret@127.0.0.1:${port}`);
    const { engine, logger } = deployment.engine(urls);
    await engine.connect();
    await until(() => probed(nodes));
    await resetStats(nodes);
    for (let i = 0; i < 5; i++) await (await engine.acquire('acl-fallback')).release();
    for (let i = 0; i < 3; i++) {
      expect(await commandStats(nodes.client(i), 'client|reply')).toEqual({ calls: 0, rejected: 0 });
      expect(await nodes.client(i).exists(lockKey('acl-fallback'))).toBe(0);
    }
    expect(logger.lines.filter((l) => /NOPERM|error:/.test(l))).toEqual([]);
  });

  test('clients passed in (the application may use them too): no CLIENT REPLY, releases are answered', async () => {
    const nodes = await deployment.nodes(3);
    const clients = nodes.urls.map((url) => new Redis(url));
    try {
      const { engine } = deployment.engine(clients);
      await engine.connect();
      await sleep(100);
      await resetStats(nodes);
      for (let i = 0; i < 5; i++) await (await engine.acquire('passed-in')).release();
      for (let i = 0; i < 3; i++) {
        expect(await commandStats(nodes.client(i), 'client|reply')).toEqual({ calls: 0, rejected: 0 });
        expect(await nodes.client(i).exists(lockKey('passed-in'))).toBe(0);
      }
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});
