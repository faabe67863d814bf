import { GlideClusterClient } from '@valkey/valkey-glide';
import { createCluster } from 'redis';
import { createCluster as createCluster5 } from 'redis5';
import {
  CrossSlotLockError,
  NodeConfigurationError,
  QuorumUnavailableError,
  Redlock,
  type RedlockNode,
  type RedlockOptions,
} from '../../../lib/index.js';
import { RedisClusterNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, settleSlotMarkers } from '../../support/cluster.js';
import { until } from '../deployments/support.js';

/*
 * Redis Clusters as voters on node-redis (createCluster, 5 and 6) and Valkey GLIDE
 * (GlideClusterClient), against real processes: three 3-shard clusters (cluster-enabled
 * redis-servers joined by redis-cli --cluster create), started here and ended by pid in afterAll.
 * A quorum of three clusters per client: grant, busy, release, tokens, waiters woken from every
 * shard, a subscriber on every master, CrossSlotLockError, the per-slot restart guard, and no
 * command waiting past nodeTimeout (a paused shard, a killed one). Then one engine over an
 * ioredis, a node-redis and a GLIDE cluster.
 */

const PREFIX = 'redlock:';
const lockKey = (resource: string) => `${PREFIX}{${resource}}`;
const MARKER = `${PREFIX}__restart_guard__`;

let clusters: RedisClusterNodes[] = [];

beforeAll(async () => {
  clusters = await Promise.all([0, 1, 2].map(() => RedisClusterNodes.start(3)));
}, 60_000);

afterAll(async () => {
  await Promise.all(clusters.map((c) => c.close()));
});

/** Markers of every slot in place with the guard off (as for clusters just created). */
function seedMarkers(cluster: RedisClusterNodes): Promise<void> {
  return settleSlotMarkers(cluster, MARKER);
}

/** Whether `cluster` holds `key` (on the shard that serves it). */
async function holds(cluster: RedisClusterNodes, key: string): Promise<boolean> {
  return (await cluster.nodes.client(await cluster.shardOf(key)).exists(key)) === 1;
}

/**
 * Waits until `cluster` holds `key`. A round decides on the first majority: the third cluster's
 * vote may still be on its way when acquire resolves (under load, well after the check).
 */
function heldOn(cluster: RedisClusterNodes, key: string): Promise<void> {
  return until(() => holds(cluster, key), 2000);
}

/** A resource per shard of `cluster` (index = shard). */
async function resourcesPerShard(cluster: RedisClusterNodes, tag: string): Promise<string[]> {
  const found: string[] = [];
  for (let n = 0; found.filter(Boolean).length < 3; n++) {
    found[await cluster.shardOf(lockKey(`${tag}${n}`))] ??= `${tag}${n}`;
  }
  return found;
}

type Opened = { node: RedlockNode; close: () => Promise<void> };

async function nodeRedisCluster(cluster: RedisClusterNodes, make: typeof createCluster): Promise<Opened> {
  const client = make({
    rootNodes: cluster.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
  });
  client.on('error', () => undefined);
  await client.connect();
  return { node: client as RedlockNode, close: async () => void client.destroy() };
}

async function glideCluster(cluster: RedisClusterNodes): Promise<Opened> {
  const client = await GlideClusterClient.createClient({
    addresses: cluster.startupNodes,
    requestTimeout: 500,
  });
  return { node: client as RedlockNode, close: async () => client.close() };
}

interface Driver {
  readonly name: string;
  open(cluster: RedisClusterNodes): Promise<Opened>;
}

const DRIVERS: Driver[] = [
  { name: 'node-redis 6 clusters (createCluster)', open: (c) => nodeRedisCluster(c, createCluster) },
  {
    name: 'node-redis 5 clusters (createCluster, RESP2)',
    open: (c) => nodeRedisCluster(c, createCluster5 as unknown as typeof createCluster),
  },
  { name: 'Valkey GLIDE 2 GlideClusterClients', open: glideCluster },
];

describe.each(DRIVERS)('a quorum of three $name', (driver) => {
  const closers: Array<() => Promise<void>> = [];
  const engines: Redlock[] = [];

  async function engine(options: Partial<RedlockOptions> = {}): Promise<Redlock> {
    const opened = await Promise.all(clusters.map((c) => driver.open(c)));
    closers.push(...opened.map((o) => o.close));
    const e = new Redlock({
      nodes: opened.map((o) => o.node),
      restartGuard: false,
      nodeTimeout: 100,
      connectTimeout: 3000,
      logger: new MemoryLogger(),
      ...options,
    });
    engines.push(e);
    await e.connect();
    return e;
  }

  beforeEach(() => Promise.all(clusters.map(seedMarkers)));

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    for (const close of closers.splice(0)) await close();
  });

  test('grant, busy, release on every shard; tokens increase; waiters woken from every shard', async () => {
    const [a, b] = [await engine(), await engine()];
    expect(a.status().every((s) => s.reachable)).toBe(true);
    expect(a.voters[0]!.label).toMatch(/^cluster:\/\/127\.0\.0\.1:\d+/);
    for (const resource of await resourcesPerShard(clusters[0]!, 'q')) {
      const first = await a.acquire(resource, { ttl: 10_000 });
      for (const cluster of clusters) await heldOn(cluster, lockKey(resource));
      await expect(b.tryAcquire(resource)).resolves.toBeNull();
      const waiting = b.acquire(resource, { ttl: 10_000, wait: 5000 });
      await new Promise((r) => setTimeout(r, 100));
      const releasedAt = performance.now();
      await first.release();
      const second = await waiting;
      // Woken by the release's message, far before the 10 s lease would have run out.
      expect(performance.now() - releasedAt).toBeLessThan(1000);
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.extend(5000);
      await second.release();
      await until(async () => {
        const held = await Promise.all(clusters.map((c) => holds(c, lockKey(resource))));
        return held.every((h) => !h);
      }, 2000);
    }
    // The waiting engine listens on every master of every cluster: a hand-over's PUBLISH counts only
    // the subscribers of its own shard.
    for (const cluster of clusters) {
      for (let shard = 0; shard < 3; shard++) {
        const channels = (await cluster.nodes
          .client(shard)
          .call('PUBSUB', 'CHANNELS', '__redlock_wake__:*')) as string[];
        expect(channels.length).toBeGreaterThanOrEqual(1);
      }
    }
    // Resources of different slots cannot be locked together on a cluster voter.
    await expect(a.acquire(['x1', 'x2'])).rejects.toBeInstanceOf(CrossSlotLockError);
    const both = await a.acquire(['{t}:1', '{t}:2']);
    await both.release();
  });

  test('preflight reviews every master: a shard that may evict lock keys, named, keeps its cluster out', async () => {
    const shard = clusters[1]!.nodes;
    await shard.client(2).config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const refused = engine({ preflight: 'error' });
      await expect(refused).rejects.toBeInstanceOf(NodeConfigurationError);
      // The finding names its shard: `Redis node cluster://... (shard 127.0.0.1:port): ...`.
      await expect(refused).rejects.toThrow(
        `(shard 127.0.0.1:${shard.ports[2]}): maxmemory-policy is allkeys-lru`,
      );
      // Under 'warn' it is logged and the cluster votes.
      const warned = await engine({ preflight: 'warn' });
      const lock = await warned.acquire('preflight', { ttl: 2000 });
      await heldOn(clusters[1]!, lockKey('preflight'));
      await lock.release();
    } finally {
      await shard.client(2).config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  test('messages keep coming when the master whose subscriber delivered them is paused', async () => {
    const e = await engine();
    const voter = e.voters[0]!; // cluster 0
    const got: string[] = [];
    await voter.subscribe('__redlock_wake__:probe', (message) => got.push(message));
    // Every subscriber gets every message; one of them delivers. Pausing each master in turn
    // pauses the delivering one once: another must take over within a round of checks.
    for (let paused = 0; paused < 3; paused++) {
      clusters[0]!.nodes.stop(paused);
      try {
        await new Promise((r) => setTimeout(r, 2500)); // a round or two of the subscribers' checks
        const message = `m${paused}`;
        await clusters[0]!.nodes.client((paused + 1) % 3).publish('__redlock_wake__:probe', message);
        await until(() => got.includes(message), 1500);
      } finally {
        clusters[0]!.nodes.resume(paused);
      }
      await clusters[0]!.waitHealthy();
    }
  });

  test('restart guard: a shard that lost its data makes its cluster abstain for its slots', async () => {
    const a = await engine({ restartGuard: 1500, ttl: 1000 });
    const [lost, kept] = await resourcesPerShard(clusters[0]!, 'g');
    await clusters[0]!.nodes.client(0).flushall(); // shard 0 of cluster 0 forgets everything
    const lock = await a.acquire(lost!);
    expect(await holds(clusters[0]!, lockKey(lost!))).toBe(false); // abstained
    expect(await holds(clusters[1]!, lockKey(lost!))).toBe(true);
    await lock.release();
    // The other shards of that cluster vote as before.
    const other = await a.acquire(kept!);
    await heldOn(clusters[0]!, lockKey(kept!));
    await other.release();
  });

  test('no command waits past nodeTimeout: a paused shard, a killed one', async () => {
    const a = await engine({ nodeTimeout: 100 });
    const [onPaused] = await resourcesPerShard(clusters[0]!, 'p');
    const second = await clusters[1]!.shardOf(lockKey(onPaused!));
    clusters[0]!.nodes.stop(0);
    try {
      const started = performance.now();
      const lock = await a.acquire(onPaused!, { ttl: 2000 });
      expect(performance.now() - started).toBeLessThan(400);
      await lock.release();
      // Its shard on a second cluster paused too: no quorum for it, within the bound.
      clusters[1]!.nodes.stop(second);
      const failedAt = performance.now();
      await expect(a.acquire(onPaused!, { ttl: 2000 })).rejects.toBeInstanceOf(QuorumUnavailableError);
      expect(performance.now() - failedAt).toBeLessThan(400);
    } finally {
      clusters[0]!.nodes.resume(0);
      clusters[1]!.nodes.resume(second);
    }
    // A killed shard: a client's node connection queues commands while it reconnects; none may wait.
    const [onKilled] = await resourcesPerShard(clusters[2]!, 'k');
    await clusters[2]!.nodes.kill(0);
    try {
      const started = performance.now();
      const lock = await a.acquire(onKilled!, { ttl: 2000 });
      expect(performance.now() - started).toBeLessThan(400);
      await lock.release();
    } finally {
      await clusters[2]!.nodes.revive(0);
    }
    await clusters[2]!.waitHealthy();
    await new Promise((r) => setTimeout(r, 300));
    // Nothing queued during the outage ran late on the revived shard.
    expect(await holds(clusters[2]!, lockKey(onKilled!))).toBe(false);
    // And the revived shard votes again (the clients found it back in their slot maps).
    await until(async () => {
      const lock = await a.acquire(onKilled!, { ttl: 2000 });
      const back = await holds(clusters[2]!, lockKey(onKilled!));
      await lock.release();
      return back;
    }, 10_000);
  });
});

describe.each([
  ['node-redis 6', createCluster],
  ['node-redis 5', createCluster5 as unknown as typeof createCluster],
])('%s clusters passed in unconnected', (_name, make) => {
  test('are connected, and closed, by the library; one whose masters are all down at boot joins when they are back', async () => {
    await Promise.all(clusters.map(seedMarkers));
    const down = clusters[0]!.nodes;
    await Promise.all([0, 1, 2].map((i) => down.kill(i))); // its connect() rejects at once
    const given = clusters.map((c) =>
      make({ rootNodes: c.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) }),
    );
    for (const client of given) client.on('error', () => undefined);
    const e = new Redlock({
      nodes: given as RedlockNode[],
      restartGuard: false,
      nodeTimeout: 100,
      connectTimeout: 1000,
      logger: new MemoryLogger(),
    });
    try {
      await e.connect();
      expect(e.status().map((s) => s.reachable)).toEqual([false, true, true]);
      await (await e.acquire('unconnected')).release();
      await Promise.all([0, 1, 2].map((i) => down.revive(i)));
      await clusters[0]!.waitHealthy();
      // The library connects it again (every second) until it finds its masters.
      await until(() => e.status()[0]!.reachable, 10_000);
      const lock = await e.acquire('unconnected');
      await heldOn(clusters[0]!, lockKey('unconnected'));
      await lock.release();
    } finally {
      await e.close();
      await Promise.all([0, 1, 2].map((i) => (down.pid(i) === undefined ? down.revive(i) : undefined)));
    }
    expect(given.map((c) => c.isOpen)).toEqual([false, false, false]);
  });
});

describe('mixed cluster voters in one engine: ioredis, node-redis and GLIDE', () => {
  test('locks, queues and releases across the three clients', async () => {
    await Promise.all(clusters.map(seedMarkers));
    const opened: Opened[] = [];
    const make = async () => {
      const nodeRedis = await nodeRedisCluster(clusters[1]!, createCluster);
      const glide = await glideCluster(clusters[2]!);
      opened.push(nodeRedis, glide);
      return new Redlock({
        nodes: [{ cluster: clusters[0]!.startupNodes }, nodeRedis.node, glide.node],
        restartGuard: false,
        nodeTimeout: 100,
        logger: new MemoryLogger(),
      });
    };
    const [a, b] = [await make(), await make()];
    try {
      await Promise.all([a.connect(), b.connect()]);
      const tokens: number[] = [];
      for (let i = 0; i < 6; i++) {
        const lock = await (i % 2 ? b : a).acquire(`mixed${i % 3}`, { ttl: 5000 });
        tokens.push(lock.fencingToken);
        const waiter = (i % 2 ? a : b).acquire(`mixed${i % 3}`, { ttl: 5000, wait: 3000 });
        await new Promise((r) => setTimeout(r, 30));
        const releasedAt = performance.now();
        await lock.release();
        const next = await waiter;
        expect(performance.now() - releasedAt).toBeLessThan(1000);
        expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
        await next.release();
      }
      expect(new Set(tokens).size).toBe(tokens.length);
      await until(async () => {
        const held = await Promise.all(clusters.map((c) => holds(c, lockKey('mixed0'))));
        return held.every((h) => !h);
      }, 2000);
    } finally {
      await Promise.all([a.close(), b.close()]);
      for (const o of opened) await o.close();
    }
  });
});
