import { GlideClient } from '@valkey/valkey-glide';
import { createClient } from 'redis';
import { createClient as createClient5 } from 'redis5';
import {
  QuorumUnavailableError,
  Redlock,
  type LockEvent,
  type RedlockNode,
  type RedlockOptions,
} from '../../../lib/index.js';
import { RedisNodes, type Persistence } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';
import { until } from '../deployments/support.js';

/*
 * Voters on node-redis (5 and 6, RESP2 and RESP3, clients passed in and connections the engine
 * opens) and on Valkey GLIDE, against real redis-server processes: grant, busy, release, a waiter
 * woken by the release (pub/sub), the restart guard, the identity guard on a reconnection, and
 * no command waiting past nodeTimeout (a SIGSTOPped node; a killed one, whose commands a client
 * passed in would queue). Mixed voters (node-redis and GLIDE in one engine) at the end.
 */

const MARKER = 'redlock:__restart_guard__';
const key = (r: string) => `redlock:{${r}}`;
const GUARD = 1500;

/** Closes what a driver opened (clients passed in are the test's to close). */
type Closer = () => Promise<void>;

interface Driver {
  readonly name: string;
  /** The `nodes` entries for these URLs, and how to close what was opened for them. */
  nodes(
    urls: readonly string[],
  ): Promise<{ nodes: RedlockNode[]; close: Closer; options?: Partial<RedlockOptions> }>;
}

async function nodeRedisClients(
  urls: readonly string[],
  make: (url: string) => ReturnType<typeof createClient> | ReturnType<typeof createClient5>,
) {
  const clients = urls.map(make);
  for (const client of clients) client.on('error', () => undefined);
  await Promise.all(clients.map((client) => client.connect()));
  return {
    nodes: clients as RedlockNode[],
    close: async () => {
      await Promise.all(clients.map((client) => (client.isOpen ? client.close() : undefined)));
    },
  };
}

async function glideClients(urls: readonly string[]) {
  const clients = await Promise.all(
    urls.map((url) => {
      const { hostname, port } = new URL(url);
      return GlideClient.createClient({
        addresses: [{ host: hostname, port: Number(port) }],
        requestTimeout: 500,
      });
    }),
  );
  return {
    nodes: clients as RedlockNode[],
    close: async () => {
      for (const client of clients) client.close();
    },
  };
}

const DRIVERS: Driver[] = [
  {
    name: 'node-redis 6 (RESP3), clients passed in',
    nodes: (urls) => nodeRedisClients(urls, (url) => createClient({ url })),
  },
  {
    name: 'node-redis 5 (RESP2), clients passed in',
    nodes: (urls) => nodeRedisClients(urls, (url) => createClient5({ url })),
  },
  {
    name: "node-redis 6 (RESP3), URLs opened by the engine (client: 'node-redis')",
    nodes: async (urls) => ({
      nodes: [...urls],
      close: async () => undefined,
      options: { client: 'node-redis' },
    }),
  },
  { name: 'Valkey GLIDE 2, GlideClients passed in', nodes: glideClients },
];

describe.each(DRIVERS)('$name', (driver) => {
  let redis: RedisNodes;
  const closers: Closer[] = [];
  const engines: Redlock[] = [];

  async function start(persistence: Persistence = 'none'): Promise<void> {
    redis = await RedisNodes.start(3, { persistence });
  }

  async function engine(
    options: Partial<RedlockOptions> = {},
  ): Promise<{ engine: Redlock; logger: MemoryLogger }> {
    const made = await driver.nodes(redis.urls);
    closers.push(made.close);
    const logger = new MemoryLogger();
    const e = new Redlock({
      nodes: made.nodes,
      restartGuard: false,
      nodeTimeout: 100,
      connectTimeout: 2000,
      logger,
      ...made.options,
      ...options,
    });
    engines.push(e);
    await e.connect();
    return { engine: e, logger };
  }

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    for (const close of closers.splice(0)) await close();
    await redis?.close();
  });

  test('grant, busy, release; tokens increase; waiters are woken by the release', async () => {
    await start();
    const { engine: a } = await engine();
    const { engine: b } = await engine();
    const first = await a.acquire('r', { ttl: 10_000 });
    // (A round decides on the first majority: the third vote may still be on its way.)
    const held = () => Promise.all([0, 1, 2].map((i) => redis.client(i).exists(key('r'))));
    expect(await eventually(held, [1, 1, 1])).toEqual([1, 1, 1]);
    await expect(b.tryAcquire('r')).resolves.toBeNull();
    const waiting = b.acquire('r', { ttl: 10_000, wait: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    const releasedAt = performance.now();
    await first.release();
    const second = await waiting;
    // Woken by the release's message, far before the 10 s lease would have run out.
    expect(performance.now() - releasedAt).toBeLessThan(1000);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.extend(5000);
    await second.release();
    const left = await eventually(
      () => Promise.all([0, 1, 2].map((i) => redis.client(i).exists(key('r')))),
      [0, 0, 0],
    );
    expect(left).toEqual([0, 0, 0]);
  });

  test('restart guard: a node restarted empty abstains; the others grant', async () => {
    await start();
    await Promise.all([0, 1, 2].map((i) => redis.client(i).set(MARKER, '0')));
    const { engine: a } = await engine({ restartGuard: GUARD, ttl: 1000 });
    await redis.restart(0);
    // The first acquire after the restart finds the node without its marker (GLIDE may first
    // report a failure, while it reconnects): the node abstains from then on.
    let attempt = 0;
    await until(async () => {
      const lock = await a.acquire(`probe-${attempt++}`);
      await lock.release();
      return a.status()[0]!.abstainingUntil !== undefined;
    }, 5000);
    expect(a.status()[0]!.abstainingUntil).toBeGreaterThan(Date.now());
    const lock = await a.acquire('guarded');
    expect(await redis.client(0).exists(key('guarded'))).toBe(0);
    expect(await redis.client(1).exists(key('guarded'))).toBe(1);
    await lock.release();
  });

  test('identity guard: a restart with AOF everysec is seen on the reconnection, and the node abstains', async () => {
    await start('aof-everysec');
    await Promise.all([0, 1, 2].map((i) => redis.client(i).set(MARKER, '0')));
    const { engine: a, logger } = await engine({ restartGuard: GUARD, ttl: 1000 });
    const events: LockEvent[] = [];
    const sub = a.events$.subscribe((e) => events.push(e));
    const before = await a.acquire('before');
    await before.release();
    await redis.kill(0);
    await redis.revive(0);
    await until(() => a.status()[0]!.abstainingUntil !== undefined, 5000);
    sub.unsubscribe();
    // (the engine logs abstentions in batches, a moment later)
    await until(() =>
      logger.lines.some((l) => l.includes('not the one that wrote its restart-guard marker')),
    );
    expect(events).toContainEqual(expect.objectContaining({ type: 'node-abstaining' }));
    const lock = await a.acquire('after');
    expect(await redis.client(0).exists(key('after'))).toBe(0);
    await lock.release();
  });

  test('no command waits past nodeTimeout: a paused node, a killed one', async () => {
    await start();
    const { engine: a } = await engine({ nodeTimeout: 100 });
    redis.stop(0);
    try {
      const started = performance.now();
      const lock = await a.acquire('paused', { ttl: 2000 });
      expect(performance.now() - started).toBeLessThan(400);
      await lock.release();
      redis.stop(1); // a majority paused: the attempt fails within the bound
      const failedAt = performance.now();
      await expect(a.acquire('paused-2', { ttl: 2000 })).rejects.toBeInstanceOf(QuorumUnavailableError);
      expect(performance.now() - failedAt).toBeLessThan(400);
    } finally {
      redis.resume(0);
      redis.resume(1);
    }
    // A killed node: a client passed in queues commands while it reconnects; none may wait.
    await redis.kill(2);
    const started = performance.now();
    const lock = await a.acquire('killed', { ttl: 2000 });
    expect(performance.now() - started).toBeLessThan(400);
    await lock.release();
    await redis.revive(2);
    await until(() => a.status()[2]!.reachable, 5000);
    await new Promise((r) => setTimeout(r, 200));
    // Nothing queued during the outage ran late on the revived node.
    expect(await redis.client(2).exists(key('killed'))).toBe(0);
  });
});

describe('mixed voters in one engine: two node-redis, three GLIDE', () => {
  let redis: RedisNodes;
  afterAll(() => redis?.close());

  test('locks, queues and releases across both clients', async () => {
    redis = await RedisNodes.start(5);
    const nodeRedis = await nodeRedisClients(redis.urls.slice(0, 2), (url) => createClient({ url }));
    const glide = await glideClients(redis.urls.slice(2));
    const logger = new MemoryLogger();
    const make = () =>
      new Redlock({
        nodes: [...nodeRedis.nodes, ...glide.nodes],
        restartGuard: false,
        nodeTimeout: 100,
        logger,
      });
    const [a, b] = [make(), make()];
    try {
      await Promise.all([a.connect(), b.connect()]);
      const tokens: number[] = [];
      for (let i = 0; i < 5; i++) {
        const lock = await (i % 2 ? b : a).acquire('mixed', { ttl: 5000 });
        tokens.push(lock.fencingToken);
        const waiter = (i % 2 ? a : b).acquire('mixed', { ttl: 5000, wait: 3000 });
        await new Promise((r) => setTimeout(r, 30));
        await lock.release();
        const next = await waiter;
        tokens.push(next.fencingToken);
        await next.release();
      }
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(tokens.length);
      const none = [0, 0, 0, 0, 0];
      const left = await eventually(
        () => Promise.all(none.map((_, i) => redis.client(i).exists(key('mixed')))),
        none,
      );
      expect(left).toEqual(none);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await nodeRedis.close();
      await glide.close();
    }
  });
});

describe('GLIDE: a release while a paused node counts as down', () => {
  let redis: RedisNodes;
  afterAll(() => redis?.close());

  test('reaches the node behind the acquire it undoes: no late grant holds the key for its lease', async () => {
    redis = await RedisNodes.start(3);
    const glide = await glideClients(redis.urls);
    const a = new Redlock({
      nodes: glide.nodes,
      restartGuard: false,
      nodeTimeout: 100,
      logger: new MemoryLogger(),
    });
    try {
      await a.connect();
      redis.stop(0);
      let resumed = false;
      try {
        // Granted by nodes 1 and 2; the acquire to node 0 is written to its connection and waits
        // there, and runs when the node resumes.
        const lock = await a.acquire('late', { ttl: 10_000 });
        // GLIDE says nothing of a paused node: the voter's probe finds it not answering (about 1 s).
        await until(() => !a.status()[0]!.reachable, 5000);
        expect(a.status()[0]!.reachable).toBe(false);
        await lock.release(); // the release to node 0 goes behind its acquire (it was held back before)
        redis.resume(0);
        resumed = true;
      } finally {
        if (!resumed) redis.resume(0);
      }
      // The late acquire ran on node 0 (its fence counter is there), and the release after it: the
      // key is free long before its 10 s lease (held back, the release never ran: held for the lease).
      const admin = redis.client(0);
      await new Promise((r) => setTimeout(r, 300)); // what node 0 had waiting has run
      expect(await eventually(async () => (await admin.keys(`${key('late')}*`)).length > 0, true)).toBe(true);
      expect(await eventually(() => admin.exists(key('late')), 0, 3000)).toBe(0);
    } finally {
      await a.close();
      await glide.close();
    }
  });
});
