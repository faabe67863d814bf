import { Cluster } from 'ioredis';
import {
  CrossSlotLockError,
  QuorumUnavailableError,
  Redlock,
  RedlockOptionsError,
  type RedlockOptions,
} from '../../../lib/index.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';
import { keySlot, slotMarkerKey } from '../../../lib/core/scripts/keys.js';
import { MemoryLogger } from '../../support/cluster.js';
import { contend } from './history.js';

/*
 * A Redis Cluster as a voter, against real processes: a 3-shard cluster (cluster-enabled
 * redis-servers joined by redis-cli --cluster create) and two plain servers, started here and
 * ended by pid in afterAll. The shard-kill test runs last: it leaves one shard empty.
 */

const PREFIX = 'cq:';
const lockKey = (resource: string) => `${PREFIX}{${resource}}`;

let cluster: RedisClusterNodes;
let plain: RedisNodes;
const engines: Redlock[] = [];
/** One resource name per shard (index = shard index). */
let onShard: string[];

beforeAll(async () => {
  [cluster, plain] = await Promise.all([RedisClusterNodes.start(3), RedisNodes.start(2)]);
  onShard = [];
  for (let n = 0; onShard.filter(Boolean).length < 3; n++) {
    const shard = await cluster.shardOf(lockKey(`r${n}`));
    onShard[shard] ??= `r${n}`;
  }
});

afterAll(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all([cluster?.close(), plain?.close()]);
});

async function engine(
  nodes: RedlockOptions['nodes'],
  options: Partial<RedlockOptions> = {},
): Promise<Redlock> {
  const e = new Redlock({
    nodes,
    keyPrefix: PREFIX,
    restartGuard: false,
    logger: new MemoryLogger(),
    ...options,
  });
  engines.push(e);
  await e.connect();
  return e;
}

const clusterNode = () => ({ cluster: cluster.startupNodes });
const threeVoters = () => [clusterNode(), plain.url(0), plain.url(1)];

describe('a Redis Cluster as one voter', () => {
  it('locks resources on every shard; tokens strictly increase per resource', async () => {
    // Two engines, two connections: a release is one-way by default, so the other engine's next
    // acquire could reach a master before it (Redis serves its readable sockets in fd order). The
    // hand-over from one process to another after `await release()` is what confirmRelease promises.
    const confirmed = { confirmRelease: true };
    const [a, b] = [await engine([clusterNode()], confirmed), await engine([clusterNode()], confirmed)];
    expect(a.voters[0]!.label).toBe(
      `cluster://${cluster.startupNodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    );
    for (const resource of onShard) {
      const tokens: number[] = [];
      for (const e of [a, b, a, b]) {
        const lock = await e.acquire(resource, { ttl: 2000 });
        await expect(e.tryAcquire(resource)).resolves.toBeNull(); // held: nobody else gets it
        tokens.push(lock.fencingToken);
        await lock.release();
      }
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(tokens.length);
      await expect(a.inspect(resource)).resolves.toMatchObject({ held: false, fencingToken: tokens[3] });
    }
    // Each lock key went to its own shard, and the marker of its slot beside it.
    const direct = cluster.client();
    try {
      // Every slot's marker was seeded on connecting ('0': these engines run with the guard off).
      for (const slot of [0, 5000, 16383, keySlot(lockKey(onShard[2]!))]) {
        await expect(direct.get(slotMarkerKey(`${PREFIX}__restart_guard__`, slot))).resolves.toBe('0');
      }
      const fence = await direct.get(`${lockKey(onShard[2]!)}:fence`);
      expect(Number(fence)).toBeGreaterThan(0);
    } finally {
      direct.disconnect();
    }
  });

  it('refuses a multi-resource lock across slots before sending anything; a common hash tag works', async () => {
    const a = await engine([clusterNode()]);
    const err = await a.acquire(['order:1', 'order:2'], { wait: 1000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CrossSlotLockError);
    expect((err as Error).message).toMatch(/common hash tag/);
    // Nothing was taken: each resource alone is free.
    await (await a.acquire('order:1')).release();
    // `{order:9}:items` and `{order:9}:payment` hash only `{order:9`: one slot.
    expect(keySlot(lockKey('{order:9}:items'))).toBe(keySlot(lockKey('{order:9}:payment')));
    const lock = await a.acquire(['{order:9}:items', '{order:9}:payment']);
    expect(Object.keys(lock.fencingTokens).sort()).toEqual(['{order:9}:items', '{order:9}:payment']);
    await expect(a.tryAcquire('{order:9}:payment')).resolves.toBeNull();
    await lock.release();
    // A plain-node-only engine has no such limit.
    const p = await engine([plain.url(0)]);
    await (await p.acquire(['order:1', 'order:2'])).release();
  });

  it('hands a released lock to a waiter through cluster-wide pub/sub, on every shard', async () => {
    const [holder, waiter] = [await engine([clusterNode()]), await engine([clusterNode()])];
    for (const resource of onShard) {
      const held = await holder.acquire(resource, { ttl: 5000 });
      const started = performance.now();
      const waiting = waiter.acquire(resource, { ttl: 2000, wait: 4000 });
      await new Promise((r) => setTimeout(r, 100));
      await held.release();
      const lock = await waiting;
      // Woken by the release (a few ms), not by the 5 s lease running out or a 1 s re-check.
      expect(performance.now() - started).toBeLessThan(900);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await lock.release();
    }
  });

  it('S0 (short): engines contending over cluster voters never overlap, tokens in order', async () => {
    const contenders = await Promise.all([0, 1, 2].map(() => engine(threeVoters())));
    const resources = ['s0-a', 's0-b', 's0-c'];
    const report = await contend(contenders, resources, { rounds: 12 });
    expect(report.grants).toBeGreaterThan(20);
    expect(report).toMatchObject({ overlaps: 0, tokenOrderViolations: 0, duplicateTokens: 0 });
    // Everything was released: no voter keeps a key for a lease (a hand-over to a waiter that had
    // already left may stay for one short turn). This failed while the cluster client could run
    // a late acquire after its own release (see ClusterVoter.letGo).
    for (const resource of resources) {
      for (const voter of contenders[0]!.voters) {
        const view = await voter.inspect(lockKey(resource));
        expect(view.holder === null || view.ttlMs! <= 500).toBe(true);
      }
    }
  });

  it('validates cluster entries and the prefix', () => {
    expect(() => new Redlock({ nodes: [{ cluster: [] }] })).toThrow(RedlockOptionsError);
    expect(() => new Redlock({ nodes: [{ cluster: [{ host: 'h', port: 1.5 }] }] })).toThrow(
      /nodes\[0\]\.cluster\[0\]/,
    );
    expect(() => new Redlock({ nodes: [{ cluster: [7000] }], keyPrefix: '{app}:' })).toThrow(/brace/);
  });

  it('adopts a Cluster client passed in, and leaves it open', async () => {
    const client = new Cluster(cluster.startupNodes);
    try {
      const e = await engine([client]);
      await (await e.acquire(onShard[0]!)).release();
      await e.close();
      expect(client.status).toBe('ready');
    } finally {
      client.disconnect();
    }
  });

  it('a shard down: that voter fails for its slots only, the quorum decides; back empty, its slots abstain', async () => {
    const alone = await engine([clusterNode()], { nodeTimeout: 200 });
    const three = await engine(threeVoters(), { nodeTimeout: 200 });
    const dead = 1;
    await cluster.nodes.kill(dead);
    const otherShard = onShard[(dead + 1) % 3]!;
    // The cluster alone: its dead shard's resources are unavailable, the others are not.
    const err = await alone.acquire(onShard[dead]!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    await (await alone.acquire(otherShard)).release();
    // With two more voters, the dead shard's resources still get a majority (2 of 3).
    await (await three.acquire(onShard[dead]!)).release();
    await (await three.acquire(otherShard)).release();

    // The shard comes back without its data (no persistence), still owning its slots: its
    // per-slot markers are gone, so a guarded engine sees it abstain there, and only there.
    await cluster.nodes.revive(dead);
    await cluster.waitHealthy();
    const guarded = await engine([clusterNode()], { restartGuard: 1500, ttl: 1000, nodeTimeout: 200 });
    const abstaining = await guarded.acquire(onShard[dead]!).catch((e: unknown) => e);
    expect(abstaining).toBeInstanceOf(QuorumUnavailableError);
    expect((abstaining as QuorumUnavailableError).message).toMatch(/abstaining/);
    await (await guarded.acquire(otherShard)).release(); // its marker is intact: it votes
    await new Promise((r) => setTimeout(r, 1600));
    await (await guarded.acquire(onShard[dead]!)).release();
  });
});
