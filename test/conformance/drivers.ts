import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import * as ioredis from 'ioredis';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { Redis as Redis6 } from 'ioredis6';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import type { RedlockNode } from '../../lib/core/options.js';
import { realRuntime } from '../../lib/core/runtime.js';
import { IoredisTransport } from '../../lib/core/transport/ioredis/ioredis.js';
import { createVoter } from '../../lib/core/transport/pick.js';
import { seedSlotMarkers } from '../../lib/core/voter/batches.js';
import type { Voter, VoterContext } from '../../lib/core/voter/voter-api.js';
import { MemoryServer, memoryNode, RedisClusterNodes, RedisNodes } from '../../lib/testing/index.js';
import { DEFAULT_SETTINGS, ManualRuntime, PREFIX, sleep, type VoterDriver } from './harness.js';

/*
 * The table's columns: one line per voter. A new voter (node-redis, GLIDE) joins with one line:
 * a helper below (a standalone Redis server, a Redis Cluster, in-memory) and what a user puts in
 * `nodes` for it (a URL, options or a client), built into a voter the way the engine builds one.
 * Clients passed in are closed here after each row (voters never close them).
 */

/** What a standalone column's line gets: the server's URL and `own` (closes a client after the row). */
type Own = <T extends { disconnect(): void }>(client: T) => T;
type StandaloneFactory = (url: string, context: VoterContext, own: Own) => Voter | Promise<Voter>;

/** The voter the engine builds for a `nodes` entry (and `client` option). */
const voterFor = (node: RedlockNode, context: VoterContext, client?: 'ioredis' | 'node-redis'): Voter =>
  createVoter(node, context, client, 'nodes[0]');

/**
 * A lock user that may not run scripts (EVAL, EVALSHA and their _RO forms, SCRIPT), as on servers
 * and proxies that refuse EVAL: the columns of `scripts: 'functions'` log in as it (the library
 * loaded by the voter itself, FUNCTION LOAD being allowed); the rows' own admin connection is the
 * default user's.
 */
const NO_EVAL_USER = { username: 'no-eval', password: 'no-eval-pw' };
const NO_EVAL_ACL = [
  '--user',
  NO_EVAL_USER.username,
  'on',
  `>${NO_EVAL_USER.password}`,
  '~*',
  '&*',
  '+@all',
  '-eval',
  '-evalsha',
  '-eval_ro',
  '-evalsha_ro',
  '-script',
];

export const DRIVERS: VoterDriver[] = [
  standalone('ioredis 5, RESP2 (URL)', (url, ctx) => voterFor(url, ctx)),
  standalone('ioredis 6, RESP3 (client)', (url, ctx, own) =>
    voterFor(own(new Redis6(url, { protocol: 3 })), ctx),
  ),
  standalone('ioredis 6, RESP3 + resp3 replies (client)', (url, ctx, own) =>
    voterFor(own(new Redis6(url, { protocol: 3, replyMapping: 'resp3' })), ctx),
  ),
  standalone('ioredis 6, RESP2 (client)', (url, ctx, own) =>
    voterFor(own(new Redis6(url, { protocol: 2 })), ctx),
  ),
  standalone('iovalkey 0.4 (client)', (url, ctx, own) => voterFor(own(new Valkey(url)), ctx)),
  standalone('node-redis 6, RESP3 (client)', (url, ctx, own) => voterFor(own(createClient({ url })), ctx)),
  standalone('node-redis 5, RESP2 (client)', (url, ctx, own) => voterFor(own(createClient5({ url })), ctx)),
  standalone("node-redis 6 (URL, client: 'node-redis')", (url, ctx) => voterFor(url, ctx, 'node-redis')),
  standalone('Valkey GLIDE 2 (GlideClient)', async (url, ctx, own) =>
    voterFor(own(glideClient(await glide(url))), ctx),
  ),
  cluster('ioredis 5 Cluster', (startupNodes, ctx) => voterFor({ cluster: startupNodes }, ctx)),
  cluster('iovalkey 0.4 Cluster (client)', (startupNodes, ctx, own) =>
    voterFor(
      own(new ValkeyCluster(startupNodes), (c) => c.disconnect()),
      ctx,
    ),
  ),
  cluster('node-redis 6 Cluster (createCluster)', async (startupNodes, ctx, own) => {
    const rootNodes = startupNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` }));
    const client = own(createCluster({ rootNodes }), (c) => void c.destroy());
    await client.connect();
    return voterFor(client, ctx);
  }),
  cluster('node-redis 5 Cluster, RESP2 (createCluster)', async (startupNodes, ctx, own) => {
    const rootNodes = startupNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` }));
    const client = own(createCluster5({ rootNodes }), (c) => void c.destroy());
    await client.connect();
    return voterFor(client, ctx);
  }),
  cluster('Valkey GLIDE 2 (GlideClusterClient)', async (startupNodes, ctx, own) => {
    const client = await GlideClusterClient.createClient({ addresses: startupNodes, requestTimeout: 500 });
    return voterFor(
      own(client, (c) => c.close()),
      ctx,
    );
  }),
  standalone(
    "ioredis 5, scripts: 'functions', EVAL denied (URL)",
    (url, ctx) => voterFor(asUser(url, NO_EVAL_USER), { ...ctx, scripts: 'functions' }),
    { extraArgs: NO_EVAL_ACL },
  ),
  cluster(
    "ioredis 5 Cluster, scripts: 'functions', EVAL denied",
    (startupNodes, ctx) =>
      voterFor(
        { cluster: startupNodes, options: { redisOptions: { ...NO_EVAL_USER } } },
        { ...ctx, scripts: 'functions' },
      ),
    {},
    { extraArgs: NO_EVAL_ACL },
  ),
  memory('in-memory', (server, ctx) => voterFor(memoryNode(server, { label: 'memory://conformance' }), ctx)),
  memory("in-memory, scripts: 'functions'", (server, ctx) =>
    voterFor(memoryNode(server, { label: 'memory://conformance' }), { ...ctx, scripts: 'functions' }),
  ),
];

/** `url` logged in as `user`. */
function asUser(url: string, user: { username: string; password: string }): string {
  const withUser = new URL(url);
  withUser.username = user.username;
  withUser.password = user.password;
  return withUser.toString();
}

/** A GLIDE client to `url` (GLIDE connects when it creates a client). */
function glide(url: string): Promise<GlideClient> {
  const { hostname, port } = new URL(url);
  return GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port) }],
    requestTimeout: 500,
  });
}

/** A GLIDE client as `own` takes one (closed after the row: GLIDE's close() is disconnect()). */
function glideClient(client: GlideClient): GlideClient & { disconnect(): void } {
  return Object.assign(client, { disconnect: () => client.close() });
}

/** A column on one standalone redis-server (started per test file), real time. */
export function standalone(
  name: string,
  factory: StandaloneFactory,
  server: { extraArgs?: string[] } = {},
): VoterDriver {
  let nodes: RedisNodes | undefined;
  const clients: Array<{ disconnect(): void }> = [];
  const admin = () => nodes!.client(0);
  const own: Own = (client) => {
    clients.push(client);
    (client as unknown as { on?: (event: string, listener: () => void) => void }).on?.(
      'error',
      () => undefined,
    );
    return client;
  };
  return {
    name,
    clock: 'real',
    slack: 100,
    cannot: {},
    async start() {
      // AOF: a restart keeps the data (changeServer); FLUSHALL still loses it (loseData).
      nodes = await RedisNodes.start(1, { persistence: 'aof-everysec', extraArgs: server.extraArgs });
    },
    async createVoter(context) {
      return factory(nodes!.url(0), context, own);
    },
    async reset() {
      // A node-redis client passed in unconnected was connected, and so closed, by its voter
      // (node-redis 5 throws on a second close).
      for (const client of clients.splice(0)) {
        if ((client as { isOpen?: boolean }).isOpen !== false) client.disconnect();
      }
      await admin().flushall();
      // A server in service, as a guard-off client leaves it (its restart-guard marker says the
      // guard has passed): a row's voter votes from its first connection, so that an abstention
      // it shows is the row's own (a loss of data, a change of server), not a new server's guard
      // counted from the voter's boot, which a row could mistake for its own.
      await admin().set(DEFAULT_SETTINGS.guardKey, '0');
    },
    advance: sleep,
    now: () => performance.now(),
    async serverTimeUs() {
      const [s, us] = (await admin().time()) as [string | number, string | number];
      return Number(s) * 1_000_000 + Number(us);
    },
    async loseData() {
      await admin().flushall();
    },
    async changeServer() {
      // A restart that keeps the data (AOF everysec): another server process (run_id) on the same
      // port, with the marker and identity record of the one before (as after a failover).
      await nodes!.restart(0);
      for (let i = 0; ; i++) {
        try {
          await admin().ping();
          return;
        } catch (err) {
          if (i === 100) throw err;
          await sleep(20);
        }
      }
    },
    async stop() {
      await nodes?.close();
    },
  };
}

/** Closes `client` with `close` after the row (voters never close a client passed in). */
type OwnCluster = <T>(client: T, close: (client: T) => void) => T;
type ClusterFactory = (
  startupNodes: Array<{ host: string; port: number }>,
  context: VoterContext,
  own: OwnCluster,
) => Voter | Promise<Voter>;

/**
 * A column on a 3-shard Redis Cluster (started per test file), real time. `cannot`: the rows it
 * cannot have.
 */
export function cluster(
  name: string,
  factory: ClusterFactory,
  cannot: Partial<Record<string, string>> = {},
  server: { extraArgs?: string[] } = {},
): VoterDriver {
  let shards: RedisClusterNodes | undefined;
  const closers: Array<() => void> = [];
  const own: OwnCluster = (client, close) => {
    (client as { on?: (event: string, listener: () => void) => void }).on?.('error', () => undefined);
    closers.push(() => close(client));
    return client;
  };
  const masters = () => shards!.nodes.ports.map((_, i) => shards!.nodes.client(i));
  /**
   * Every slot's restart-guard marker says the guard has passed (a cluster in service), as a first
   * voter with the guard off seeds them: at the start, so that no row's voter spends its row
   * seeding 16,384 of them, and after every row, so that a row that lost the data (FLUSHALL) or
   * changed the servers leaves none abstaining for the next row's voter from its boot.
   */
  const settleMarkers = async () => {
    const client = shards!.client();
    await new Promise((resolve) => client.once('ready', resolve));
    const transport = new IoredisTransport(
      { client: client as unknown as ioredis.Cluster, label: 'settle', owned: false },
      realRuntime,
      2000,
    );
    try {
      await seedSlotMarkers(transport, DEFAULT_SETTINGS.guardKey, 0, () => false);
    } finally {
      await transport.close(1000);
      client.disconnect();
    }
  };
  return {
    name,
    clock: 'real',
    // A Cluster client has more moving parts (slot map, a connection per shard): more jitter.
    slack: 200,
    cannot,
    async start() {
      // AOF: a restarted master keeps its data and its slots (changeServer).
      shards = await RedisClusterNodes.start(3, { persistence: 'aof-everysec', extraArgs: server.extraArgs });
      await settleMarkers();
    },
    async createVoter(context) {
      return factory(shards!.startupNodes, context, own);
    },
    async reset() {
      for (const close of closers.splice(0)) close();
      // Only the rows' keys: the slots' restart-guard markers stay, settled again.
      await Promise.all(
        masters().map(async (client) => {
          const keys = (await client.keys(`${PREFIX}{*`)) as string[];
          await Promise.all(keys.map((key) => client.del(key)));
        }),
      );
      await settleMarkers();
    },
    advance: sleep,
    now: () => performance.now(),
    async serverTimeUs() {
      const [s, us] = (await masters()[0]!.time()) as [string | number, string | number];
      return Number(s) * 1_000_000 + Number(us);
    },
    async loseData() {
      await Promise.all(masters().map((client) => client.flushall()));
    },
    async changeServer() {
      // Every master restarts with its data (AOF everysec): another server process (run_id) behind
      // each shard, with the markers and identity records of the one before.
      const { ports } = shards!.nodes;
      await Promise.all(ports.map((_, i) => shards!.nodes.restart(i)));
      await shards!.waitHealthy();
      return ports.length;
    },
    shardOf: (key) => shards!.shardOf(key),
    async changeOneServer(index) {
      // One master restarts with its data (AOF everysec); the others keep their server process.
      await shards!.nodes.restart(index);
      await shards!.waitHealthy();
    },
    async stop() {
      await shards?.nodes.close();
    },
  };
}

/**
 * A column on a {@link MemoryServer} with an injected clock (its voters' runtime and the server's
 * wall clock): time moves only when a row says so. A change of server is a restart that keeps the
 * data (another run_id).
 */
export function memory(
  name: string,
  factory: (server: MemoryServer, context: VoterContext) => Voter,
): VoterDriver {
  const runtime = new ManualRuntime();
  let server = new MemoryServer({ runtime });
  return {
    name,
    runtime,
    clock: 'injected',
    slack: 0,
    cannot: {},
    async start() {},
    async createVoter(context) {
      return factory(server, context);
    },
    async reset() {
      runtime.reset();
      server = new MemoryServer({ runtime });
      server.set(DEFAULT_SETTINGS.guardKey, '0'); // a server in service (see standalone's reset)
    },
    advance: (ms) => runtime.advance(ms),
    now: () => runtime.now(),
    async serverTimeUs() {
      return server.timeUs();
    },
    async loseData() {
      server.flushAll();
    },
    async changeServer() {
      server.restart({ keepData: true });
    },
    async stop() {},
  };
}
