import { GlideClusterClient } from '@valkey/valkey-glide';
import { Redlock, type RedlockOptions } from 'nest-quorum-lock';
import { createCluster } from 'redis';
import { RedisClusterNodes, RedisNodes } from 'nest-quorum-lock/testing';
import { medianCost, perCycle, startSlice, type CycleCost, type SliceCost } from './meter.js';
import type { BenchContext, BenchResult, Benchmark, Row } from './report.js';
import { interleave } from './rounds.js';
import { median, now, summarise } from './stats.js';

/*
 * B7: throughput on distinct keys with Redis Cluster voters vs single-process voters, our engine
 * only (the peers take no cluster voter), 3 voters in every setup:
 *   plain     3 single redis-server processes (the usual deployment)
 *   cluster1  3 clusters of 1 shard: what the cluster client path costs (ioredis Cluster routing,
 *             the slot's marker key), with as many server processes as plain
 *   cluster3  3 clusters of 3 shards (9 processes): the shape that scales with cores
 *   cluster3-node-redis, cluster3-glide: the same clusters as node-redis createCluster() clusters
 *             and Valkey GLIDE GlideClusterClients passed in (what each client's path costs)
 * On a machine with fewer cores than server processes, cluster3 cannot show scaling: the figure
 * to project from is the Redis CPU per lock per voter, which a cluster spreads over its shards.
 */

/** One setup: an engine over its voters, and the server processes to meter. */
interface Setup {
  readonly id: string;
  readonly label: string;
  readonly engine: Redlock;
  /** Server processes per voter. */
  readonly shardsPerVoter: number;
  readonly servers: readonly RedisNodes[];
  /** Redis CPU of the setup's servers while no lock is taken (cluster bus, cron), us per ms. */
  idleUsPerMs?: number;
}

interface Round {
  readonly opsPerSecond: number;
  readonly cost: CycleCost;
}

const VOTERS = 3;

async function openSetups(ctx: BenchContext): Promise<{ setups: Setup[]; close: () => Promise<void> }> {
  const clusters: RedisClusterNodes[] = [];
  const engines: Redlock[] = [];
  /** Clients passed in (closed after the engines, which never close them). */
  const clients: Array<() => void> = [];
  const close = async () => {
    await Promise.all(engines.map((e) => e.close()));
    for (const closeClient of clients) closeClient();
    await Promise.all(clusters.map((c) => c.close()));
  };
  const engine = async (nodes: RedlockOptions['nodes']) => {
    const e = new Redlock({
      nodes,
      ttl: ctx.config.ttl,
      nodeTimeout: ctx.config.nodeTimeout,
      restartGuard: false,
      preflight: 'off',
      logger: { log: () => undefined, warn: ctx.log, error: ctx.log },
    });
    engines.push(e);
    await e.connect();
    return e;
  };
  try {
    const setups: Setup[] = [];
    // The bench's own nodes, 3 of its 5: metered through a RedisNodes of their own ports.
    setups.push({
      id: 'plain',
      label: `${VOTERS} single redis-server voters`,
      engine: await engine(ctx.urls.slice(0, VOTERS)),
      shardsPerVoter: 1,
      servers: [ctx.nodes],
    });
    for (const shards of [1, 3]) {
      const set: RedisClusterNodes[] = [];
      for (let v = 0; v < VOTERS; v++) {
        const cluster = await RedisClusterNodes.start(shards);
        clusters.push(cluster);
        set.push(cluster);
      }
      setups.push({
        id: `cluster${shards}`,
        label: `${VOTERS} Cluster voters of ${shards} shard(s)`,
        engine: await engine(set.map((c) => ({ cluster: c.startupNodes }))),
        shardsPerVoter: shards,
        servers: set.map((c) => c.nodes),
      });
      if (shards === 3) {
        // The same clusters through clients that pipeline (ioredis enableAutoPipelining): the
        // Cluster client has no equivalent of the single-node voter's corked writes.
        setups.push({
          id: 'cluster3-autopipe',
          label: `${VOTERS} Cluster voters of 3 shards, enableAutoPipelining`,
          engine: await engine(
            set.map((c) => ({ cluster: c.startupNodes, options: { enableAutoPipelining: true } })),
          ),
          shardsPerVoter: shards,
          servers: set.map((c) => c.nodes),
        });
        const nodeRedis = await Promise.all(
          set.map(async (c) => {
            const rootNodes = c.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` }));
            const client = createCluster({ rootNodes });
            client.on('error', () => undefined);
            clients.push(() => void client.destroy());
            await client.connect();
            return client;
          }),
        );
        setups.push({
          id: 'cluster3-node-redis',
          label: `${VOTERS} node-redis 6 createCluster() voters of 3 shards`,
          engine: await engine(nodeRedis),
          shardsPerVoter: shards,
          servers: set.map((c) => c.nodes),
        });
        const glide = await Promise.all(
          set.map(async (c) => {
            const client = await GlideClusterClient.createClient({
              addresses: c.startupNodes,
              requestTimeout: 500,
            });
            clients.push(() => client.close());
            return client;
          }),
        );
        setups.push({
          id: 'cluster3-glide',
          label: `${VOTERS} Valkey GLIDE GlideClusterClient voters of 3 shards`,
          engine: await engine(glide),
          shardsPerVoter: shards,
          servers: set.map((c) => c.nodes),
        });
      }
    }
    return { setups, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Meters every server set of a setup over one slice. */
async function startMeter(servers: readonly RedisNodes[]): Promise<() => Promise<SliceCost>> {
  const stops = await Promise.all(servers.map((s) => startSlice(s)));
  return async () => {
    const costs = await Promise.all(stops.map((stop) => stop()));
    return {
      nodeCpuUs: costs[0]!.nodeCpuUs,
      redisCpuUs: costs.reduce((sum, c) => sum + c.redisCpuUs, 0),
      commands: costs.reduce((sum, c) => sum + c.commands, 0),
      wallMs: costs[0]!.wallMs,
    };
  };
}

export const b7: Benchmark = {
  id: 'B7',
  title: 'throughput on distinct keys: Redis Cluster voters vs single-process voters (ours)',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { loops, seconds, warmupSeconds } = ctx.config.b2;
    const rounds = ctx.config.rounds;
    ctx.log(`B7: starting ${VOTERS} clusters of 1 shard and ${VOTERS} of 3 shards`);
    const { setups, close } = await openSetups(ctx);
    const tallies = new Map<string, { rounds: Round[]; latencies: number[]; errors: number }>();
    try {
      const drive = async (s: Setup, ms: number) => {
        const tally = tallies.get(s.id) ?? { rounds: [], latencies: [], errors: 0 };
        tallies.set(s.id, tally);
        let ops = 0;
        const latencies: number[] = [];
        const end = now() + ms;
        const start = now();
        await Promise.all(
          Array.from({ length: loops }, async (_, loop) => {
            const key = `bench:b7:${s.id}:${loop}`;
            while (now() < end) {
              const t0 = now();
              try {
                await (await s.engine.acquire(key)).release();
                ops++;
                latencies.push(now() - t0);
              } catch {
                tally.errors++;
              }
            }
          }),
        );
        return { ops, latencies, elapsedMs: now() - start };
      };
      ctx.log(`B7: ${loops} loops, ${seconds} s per setup in ${rounds} interleaved rounds`);
      for (const s of setups) await drive(s, warmupSeconds * 1000);
      tallies.clear();
      for (const s of setups) {
        const stop = await startMeter(s.servers);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const idle = await stop();
        s.idleUsPerMs = idle.redisCpuUs / idle.wallMs;
      }
      await interleave(setups, rounds, async (s) => {
        const stop = await startMeter(s.servers);
        const driven = await drive(s, (seconds * 1000) / rounds);
        const measured = await stop();
        // What the servers burn anyway (cluster bus, cron) is not the locks' cost: taken off.
        const cost = {
          ...measured,
          redisCpuUs: measured.redisCpuUs - (s.idleUsPerMs ?? 0) * measured.wallMs,
        };
        const tally = tallies.get(s.id)!;
        tally.latencies.push(...driven.latencies);
        tally.rounds.push({
          opsPerSecond: (driven.ops / driven.elapsedMs) * 1000,
          cost: perCycle(cost, driven.ops),
        });
      });
    } finally {
      await close();
    }

    const rows: Row[] = [];
    const figures: Record<string, unknown> = {};
    const notes: string[] = [];
    for (const s of setups) {
      const t = tallies.get(s.id)!;
      const opsPerSecond = median(t.rounds.map((r) => r.opsPerSecond));
      const cost = medianCost(t.rounds.map((r) => r.cost));
      // The plain setup is metered over all 5 bench nodes; only 3 take part (the others idle).
      const perVoter = cost.redisCpuUs / VOTERS;
      const perShard = perVoter / s.shardsPerVoter;
      const p99 = summarise(t.latencies).p99;
      rows.push(
        {
          metric: `${s.id}: ops/s`,
          unit: 'ops/s',
          better: 'higher',
          digits: 0,
          cells: { ours: opsPerSecond },
        },
        { metric: `${s.id}: op p99`, unit: 'ms', better: 'lower', cells: { ours: p99 } },
        {
          metric: `${s.id}: Node CPU per op`,
          unit: 'us',
          better: 'lower',
          digits: 0,
          cells: { ours: cost.nodeCpuUs },
        },
        {
          metric: `${s.id}: Redis CPU per op per voter`,
          unit: 'us',
          better: 'lower',
          digits: 1,
          cells: { ours: perVoter },
        },
      );
      const servers = s.servers.reduce((n, r) => n + r.count, 0);
      const idlePerServer = ((s.idleUsPerMs ?? 0) * 1000) / servers;
      figures[s.id] = {
        label: s.label,
        opsPerSecond,
        p99,
        cost,
        redisCpuPerOpPerVoterUs: perVoter,
        idleRedisCpuPerServerUsPerSecond: idlePerServer,
        errors: t.errors,
      };
      if (t.errors > 0) notes.push(`${s.id}: ${t.errors} failed operations`);
      notes.push(
        `${s.id} (${s.label}): each voter spends ${perVoter.toFixed(1)} us of Redis CPU per lock ` +
          `(acquire + release), ${perShard.toFixed(1)} us per shard when spread over ${s.shardsPerVoter}: ` +
          `one voter saturates near ${Math.round(1e6 / perVoter)} locks/s per core it gets` +
          (s.shardsPerVoter > 1
            ? `, i.e. ~${Math.round((1e6 / perVoter) * s.shardsPerVoter)} with a core per shard`
            : '') +
          `; the bench process spends ${cost.nodeCpuUs.toFixed(0)} us per lock, its own ceiling near ` +
          `${Math.round(1e6 / cost.nodeCpuUs)} locks/s per core. Idle, each server process burns ` +
          `${(idlePerServer / 1000).toFixed(1)} ms of CPU per second (taken off the per-lock figures).`,
      );
    }
    return {
      id: 'B7',
      title: this.title,
      rows,
      targets: [],
      notes,
      details: { loops, seconds, rounds, voters: VOTERS, setups: figures },
    };
  },
};
