import { GlideClusterClient } from '@valkey/valkey-glide';
import { createCluster } from 'redis';
import { createCluster as createCluster5 } from 'redis5';
import { QuorumUnavailableError, Redlock, type LockEvent, type RedlockNode } from '../../../lib/index.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, settleSlotMarkers } from '../../support/cluster.js';
import { until } from '../deployments/support.js';

/*
 * The identity guard per master on node-redis (createCluster) and Valkey GLIDE
 * (GlideClusterClient) cluster voters, on a real failover: a 3-shard cluster, one more
 * cluster-enabled redis-server made the replica of the shard that serves the lock's key, then
 * `CLUSTER FAILOVER` on that replica (it takes over with the master's data, and another run_id).
 * The promoted replica abstains for restartGuard on its slots only: the other shards grant.
 */

const PREFIX = 'redlock:';
const lockKey = (resource: string) => `${PREFIX}{${resource}}`;
const GUARD = 1500;

type Opened = { node: RedlockNode; close: () => Promise<void> };

const DRIVERS: Array<{ name: string; open(cluster: RedisClusterNodes): Promise<Opened> }> = [
  {
    name: 'node-redis 6 (createCluster)',
    open: async (cluster) => {
      const client = createCluster({
        rootNodes: cluster.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
      });
      client.on('error', () => undefined);
      await client.connect();
      return { node: client as RedlockNode, close: async () => void client.destroy() };
    },
  },
  {
    name: 'node-redis 5, RESP2 (createCluster)',
    open: async (cluster) => {
      const client = createCluster5({
        rootNodes: cluster.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
      });
      client.on('error', () => undefined);
      await client.connect();
      return { node: client as RedlockNode, close: async () => void client.destroy() };
    },
  },
  {
    name: 'Valkey GLIDE 2 (GlideClusterClient)',
    open: async (cluster) => {
      const client = await GlideClusterClient.createClient({
        addresses: cluster.startupNodes,
        requestTimeout: 500,
      });
      return { node: client as RedlockNode, close: async () => client.close() };
    },
  },
];

describe.each(DRIVERS)('$name: a replica promoted by CLUSTER FAILOVER', (driver) => {
  let cluster: RedisClusterNodes | undefined;
  let replica: RedisNodes | undefined;

  afterEach(async () => {
    await replica?.close();
    await cluster?.close();
  });

  test('abstains for restartGuard on its own slots; the other shards grant; then it grants, tokens higher', async () => {
    cluster = await RedisClusterNodes.start(3, { persistence: 'none' });
    // Markers of every slot in place (a cluster in service), so only the failover makes a shard abstain.
    await settleSlotMarkers(cluster, `${PREFIX}__restart_guard__`);
    // A resource on another shard than 'fo' (for the "other shards" check).
    const shard = await cluster.shardOf(lockKey('fo'));
    let other = 'x0';
    for (let n = 0; (await cluster.shardOf(lockKey(other))) === shard; n++) other = `x${n + 1}`;

    const opened = await driver.open(cluster);
    const events: LockEvent[] = [];
    const logger = new MemoryLogger();
    const engine = new Redlock({
      nodes: [opened.node],
      restartGuard: GUARD,
      ttl: 1000,
      nodeTimeout: 200,
      connectTimeout: 3000,
      logger,
    });
    engine.events$.subscribe((e) => events.push(e));
    try {
      await engine.connect();
      const before = await engine.acquire('fo');
      const oldToken = before.fencingToken;
      await before.release();

      // The replica: one more cluster node, replicating the master that serves 'fo'.
      replica = await RedisNodes.start(1, {
        extraArgs: [
          '--cluster-enabled',
          'yes',
          '--cluster-node-timeout',
          '1000',
          '--cluster-announce-ip',
          '127.0.0.1',
        ],
      });
      const master = cluster.nodes.client(shard);
      const masterId = String(await master.call('CLUSTER', 'MYID'));
      const r = replica.client(0);
      await r.call('CLUSTER', 'MEET', '127.0.0.1', String(cluster.nodes.ports[shard]));
      await until(async () => String(await r.call('CLUSTER', 'NODES')).includes(masterId), 10_000);
      await r.call('CLUSTER', 'REPLICATE', masterId);
      await until(async () => String(await r.info('replication')).includes('master_link_status:up'), 10_000);
      const replicaRunId = /run_id:(\w+)/.exec(String(await r.info('server')))![1];

      // The failover: the replica takes over, with the master's data and its own run_id.
      await r.call('CLUSTER', 'FAILOVER');
      await until(async () => String(await r.info('replication')).includes('role:master'), 10_000);
      const promotedAt = performance.now();
      await until(async () => {
        // Until the voter's slot map routes 'fo' to the promoted replica and it is checked.
        try {
          await (await engine.acquire('fo')).release();
          return false;
        } catch (err) {
          return err instanceof QuorumUnavailableError && /abstaining/.test(err.message);
        }
      }, 5000);
      // Abstaining: 'fo' is refused while the guard runs; a key of another shard is granted.
      await expect(engine.acquire('fo')).rejects.toThrow(/abstaining under the restart guard/);
      const elsewhere = await engine.acquire(other);
      await elsewhere.release();
      const reported = events.filter((e) => e.type === 'node-abstaining' && e.cause === 'identity');
      expect(reported.length).toBeGreaterThanOrEqual(1);
      expect(reported[0]!.reason).toContain(replicaRunId!.slice(0, 8));
      expect(reported[0]!.reason).toMatch(/promoted by a failover/);
      // After the guard: granted by the promoted replica, tokens above the old ones.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, GUARD + 100 - (performance.now() - promotedAt))),
      );
      const after = await engine.acquire('fo', { wait: 2000 });
      expect(after.fencingToken).toBeGreaterThan(oldToken);
      await after.release();
    } finally {
      await engine.close();
      await opened.close();
    }
  }, 60_000);
});
