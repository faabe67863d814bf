import { createClient, createCluster } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { Redlock, type RedlockNode } from '../../../lib/index.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * A busy tick right after acquire() costs no vote: the process stalls (a long synchronous task, a
 * garbage collection) before a client wrote the votes to its sockets. node-redis writes a tick's
 * commands in an immediate, and a command's bound on the time it may wait in the client's queue
 * (a client passed in queues commands while disconnected) must not run out before that write: a
 * vote dropped so would never reach a healthy server. Called from an immediate, the worst case: the
 * client's write then waits for the next turn of the event loop, after its timers.
 */

const NODE_TIMEOUT = 100;
const STALL_MS = 3 * NODE_TIMEOUT;
const lockKey = (resource: string) => `redlock:{${resource}}`;

let servers: RedisNodes;
let cluster: RedisClusterNodes;

beforeAll(async () => {
  [servers, cluster] = await Promise.all([RedisNodes.start(3), RedisClusterNodes.start(3)]);
}, 60_000);

afterAll(async () => {
  await Promise.all([servers?.close(), cluster?.close()]);
});

/** Blocks this process for `ms`. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** `engine.acquire(resource)` called from an immediate, the process stalled right after the call. */
function acquireThenStall(engine: Redlock, resource: string) {
  return new Promise<ReturnType<Redlock['acquire']>>((resolve) =>
    setImmediate(() => {
      const acquiring = engine.acquire(resource, { ttl: 5000, wait: 0 });
      stall(STALL_MS);
      resolve(acquiring);
    }),
  );
}

type Client = { connect(): Promise<unknown>; on(event: 'error', f: () => void): unknown };

const SETUPS: Array<{
  name: string;
  clients: () => Client[];
  holders: () => Array<(key: string) => Promise<number>>;
}> = [
  {
    name: 'node-redis 6 clients passed in (offline queue on)',
    clients: () => servers.urls.map((url) => createClient({ url })),
    holders: () => servers.urls.map((_, i) => (key) => servers.client(i).exists(key)),
  },
  {
    name: 'node-redis 5 clients passed in (offline queue on)',
    clients: () => servers.urls.map((url) => createClient5({ url })),
    holders: () => servers.urls.map((_, i) => (key) => servers.client(i).exists(key)),
  },
  {
    name: 'a node-redis 6 cluster beside two node-redis 6 clients',
    clients: () => [
      createCluster({ rootNodes: cluster.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) }),
      ...servers.urls.slice(1).map((url) => createClient({ url })),
    ],
    holders: () => [
      async (key) => cluster.nodes.client(await cluster.shardOf(key)).exists(key),
      ...servers.urls.slice(1).map((_, i) => (key: string) => servers.client(i + 1).exists(key)),
    ],
  },
];

describe.each(SETUPS)('a busy tick right after acquire(): $name', ({ clients, holders }) => {
  test('every vote reaches its server: the lock is granted and held on every voter', async () => {
    const given = clients();
    for (const client of given) client.on('error', () => undefined);
    await Promise.all(given.map((client) => client.connect()));
    const engine = new Redlock({
      nodes: given as RedlockNode[],
      restartGuard: false,
      nodeTimeout: NODE_TIMEOUT,
      logger: new MemoryLogger(),
    });
    try {
      await engine.connect();
      await (await engine.acquire('warm-up')).release();
      for (let i = 0; i < 3; i++) {
        const lock = await acquireThenStall(engine, `stalled-${i}`);
        const held = () => Promise.all(holders().map((holds) => holds(lockKey(`stalled-${i}`))));
        expect(await eventually(held, [1, 1, 1])).toEqual([1, 1, 1]);
        await lock.release();
      }
    } finally {
      await engine.close();
      await Promise.all(given.map((client) => (client as unknown as { destroy(): void }).destroy?.()));
    }
  });
});
