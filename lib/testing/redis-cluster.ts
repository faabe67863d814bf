import { spawnSync } from 'node:child_process';
import { Cluster, Redis } from 'ioredis';
import { RedisNodes } from '../../lib/testing/index.js';
import { keySlot } from '../../lib/core/voter/cluster-slots.js';

/**
 * A local Redis Cluster of real `redis-server` processes (one master per shard, no replicas),
 * for the tests: started on free ports, joined with `redis-cli --cluster create`, and ended by pid
 * in {@link close} (RedisNodes owns the processes and their data directories).
 *
 * `cluster-require-full-coverage no`: a shard that is down makes only its own slots fail, which
 * is how a cluster voter should be deployed (see the README's deployment guide); the short
 * node timeout lets the cluster notice a dead shard within the test's time.
 */
export class RedisClusterNodes {
  private constructor(readonly nodes: RedisNodes) {}

  static async start(shards = 3): Promise<RedisClusterNodes> {
    const nodes = await RedisNodes.start(shards, {
      extraArgs: [
        '--cluster-enabled',
        'yes',
        '--cluster-node-timeout',
        '1000',
        '--cluster-require-full-coverage',
        'no',
      ],
    });
    const cluster = new RedisClusterNodes(nodes);
    try {
      const create = spawnSync(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.ports.map((p) => `127.0.0.1:${p}`),
          '--cluster-replicas',
          '0',
          '--cluster-yes',
        ],
        { encoding: 'utf8', timeout: 20_000 },
      );
      if (create.status !== 0)
        throw new Error(`redis-cli --cluster create failed:\n${create.stdout}${create.stderr}`);
      await cluster.waitHealthy();
    } catch (err) {
      await nodes.close();
      throw err;
    }
    return cluster;
  }

  /** The startup nodes, as a `{ cluster }` voter takes them. */
  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.ports.map((port) => ({ host: '127.0.0.1', port }));
  }

  /** The index (in {@link nodes}) of the shard that serves `key`. */
  async shardOf(key: string): Promise<number> {
    const slot = keySlot(key);
    const slots = (await this.nodes.client(0).call('CLUSTER', 'SLOTS')) as Array<
      [number, number, [string, number]]
    >;
    const range = slots.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no shard serves slot ${slot}`);
    return this.nodes.ports.indexOf(range[2][1]);
  }

  /** A client of the whole cluster, for inspecting data (the caller disconnects it). */
  client(): Cluster {
    const client = new Cluster(this.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    client.on('error', () => undefined);
    return client;
  }

  /** Waits until every live master reports `cluster_state:ok` and knows all slots. */
  async waitHealthy(ms = 10_000): Promise<void> {
    const end = performance.now() + ms;
    for (;;) {
      const states = await Promise.all(
        this.nodes.ports.map(async (_, i) => {
          if (this.nodes.pid(i) === undefined) return true;
          const probe = new Redis(this.nodes.url(i), { maxRetriesPerRequest: 0, lazyConnect: true });
          probe.on('error', () => undefined);
          try {
            await probe.connect();
            const info = String(await probe.call('CLUSTER', 'INFO'));
            return info.includes('cluster_state:ok') && info.includes('cluster_slots_assigned:16384');
          } catch {
            return false;
          } finally {
            probe.disconnect();
          }
        }),
      );
      if (states.every(Boolean)) return;
      if (performance.now() > end) throw new Error(`cluster not healthy within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Ends every server by pid and removes their directories. */
  close(): Promise<void> {
    return this.nodes.close();
  }
}
