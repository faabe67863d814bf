import { spawnSync } from 'node:child_process';
import { ioredis, testClient } from './ioredis-module.js';
import { until } from './child-processes.js';
import type { IoRedisClusterTestClient } from './test-clients.js';
import { keySlot } from '../core/scripts/keys.js';
import { RedisNodes, type RedisNodesOptions } from './redis-nodes.js';
import { cliBeside } from './redis-server-binary.js';

/**
 * A local Redis Cluster of real `redis-server` (or `valkey-server`) processes (one master per shard, no replicas), for
 * integration tests and benchmarks of code that locks over a cluster voter: started on free
 * ports, joined with `redis-cli --cluster create`, and ended by pid in {@link close} (a
 * {@link RedisNodes} set owns the processes and their data directories; kill, revive and friends
 * work on `nodes`).
 *
 * ```ts
 * const cluster = await RedisClusterNodes.start(3);
 * const engine = new Redlock({ nodes: [{ cluster: cluster.startupNodes }, ...] });
 * ```
 *
 * `cluster-require-full-coverage no`: a shard that is down makes only its own slots fail, which
 * is how a cluster voter should be deployed (see the README's deployment guide); the short
 * node timeout lets the cluster notice a dead shard within the test's time.
 */
export class RedisClusterNodes {
  private constructor(readonly nodes: RedisNodes) {}

  /**
   * Starts `shards` masters (default 3) and joins them into one cluster that serves every slot.
   * `persistence` as for {@link RedisNodes} (default `none`); with `aof-everysec` or `aof-always` a
   * master restarted with `nodes.restart(i)` comes back with its data and its place in the cluster.
   * `env` as for {@link RedisNodes}: extra environment variables of master `index`'s process (e.g.
   * a clock shim that steps its wall clock). `extraArgs`: more server arguments for every master
   * (e.g. `--user` lines of an ACL). `serverBinary` as for {@link RedisNodes} (default:
   * `REDIS_SERVER_BIN`, else `redis-server`); the cluster is joined with the cli beside it
   * (`valkey-cli` next to `valkey-server`), else `redis-cli` on PATH.
   */
  static async start(
    shards = 3,
    options: Pick<RedisNodesOptions, 'persistence' | 'env' | 'serverBinary' | 'extraArgs'> = {},
  ): Promise<RedisClusterNodes> {
    const extraArgs = ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000'];
    extraArgs.push('--cluster-require-full-coverage', 'no');
    // A node that never met another one does not know its own address (CLUSTER SLOTS would say "").
    extraArgs.push('--cluster-announce-ip', '127.0.0.1', ...(options.extraArgs ?? []));
    const nodes = await RedisNodes.start(shards, {
      freshFor: [], // a Cluster's markers are per slot: a new cluster abstains once
      serverBinary: options.serverBinary,
      persistence: options.persistence,
      env: options.env,
      extraArgs,
    });
    const cluster = new RedisClusterNodes(nodes);
    try {
      if (shards >= 3) {
        const cli = cliBeside(nodes.server.binary);
        const masters = nodes.ports.map((p) => `127.0.0.1:${p}`);
        const args = ['--cluster', 'create', ...masters, '--cluster-replicas', '0', '--cluster-yes'];
        const create = spawnSync(cli, args, { encoding: 'utf8', timeout: 20_000 });
        if (create.status !== 0)
          throw new Error(`${cli} --cluster create failed:\n${create.stdout}${create.stderr}`);
      } else {
        // redis-cli wants 3 masters at least: join and split the slots by hand.
        const first = nodes.client(0);
        for (const port of nodes.ports.slice(1))
          await first.call('CLUSTER', 'MEET', '127.0.0.1', String(port));
        const per = Math.ceil(16384 / shards);
        for (let i = 0; i < shards; i++) {
          const to = Math.min(16383, (i + 1) * per - 1);
          await nodes.client(i).call('CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(to));
        }
      }
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
  client(): IoRedisClusterTestClient {
    const { Cluster } = ioredis();
    const client = new Cluster(this.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    client.on('error', () => undefined);
    return client as unknown as IoRedisClusterTestClient;
  }

  /** Waits until every live master reports `cluster_state:ok` and knows all slots. */
  async waitHealthy(ms = 10_000): Promise<void> {
    const healthy = async (i: number) => {
      if (this.nodes.pid(i) === undefined) return true;
      const probe = testClient(this.nodes.url(i), { maxRetriesPerRequest: 0, lazyConnect: true });
      try {
        await probe.connect();
        const info = String(await probe.call('CLUSTER', 'INFO'));
        return info.includes('cluster_state:ok') && info.includes('cluster_slots_assigned:16384');
      } finally {
        probe.disconnect();
      }
    };
    const all = async () => (await Promise.all(this.nodes.ports.map((_, i) => healthy(i)))).every(Boolean);
    await until(all, ms, 'cluster not healthy');
  }

  /** Ends every server by pid and removes their directories. */
  close(): Promise<void> {
    return this.nodes.close();
  }
}
