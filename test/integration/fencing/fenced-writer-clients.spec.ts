import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { FencedWriter, type FencedStoreClient } from '../../../lib/index.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';

/*
 * FencedWriter on every client the library's voters take, against real redis-server processes
 * (one server, and a 3-shard Cluster where the client has a cluster kind): the same Lua decides,
 * so the same history must give the same answers, the NOSCRIPT path included (SCRIPT FLUSH on
 * the servers between calls).
 */

interface StoreDriver {
  readonly name: string;
  readonly cluster: boolean;
  open(urls: readonly string[]): Promise<{ client: FencedStoreClient; close(): Promise<void> }>;
}

const hostPort = (url: string) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
};

const DRIVERS: StoreDriver[] = [
  {
    name: 'ioredis Redis',
    cluster: false,
    open: async ([url]) => {
      const client = new Redis(url!);
      return { client, close: async () => void client.disconnect() };
    },
  },
  {
    name: 'ioredis Cluster',
    cluster: true,
    open: async (urls) => {
      const client = new Cluster(urls.map(hostPort));
      return { client, close: async () => void client.disconnect() };
    },
  },
  {
    name: 'node-redis 6, RESP3',
    cluster: false,
    open: async ([url]) => {
      const client = createClient({ url: url!, RESP: 3 });
      await client.connect();
      return { client, close: () => client.close() };
    },
  },
  {
    name: 'node-redis 5, RESP2',
    cluster: false,
    open: async ([url]) => {
      const client = createClient5({ url: url! });
      await client.connect();
      return { client, close: () => client.close() };
    },
  },
  {
    name: 'node-redis 6 cluster',
    cluster: true,
    open: async (urls) => {
      const client = createCluster({ rootNodes: urls.map((url) => ({ url })) });
      await client.connect();
      return { client, close: () => client.close() };
    },
  },
  {
    name: 'Valkey GLIDE 2 client',
    cluster: false,
    open: async ([url]) => {
      const client = await GlideClient.createClient({ addresses: [hostPort(url!)] });
      return { client, close: async () => client.close() };
    },
  },
  {
    name: 'Valkey GLIDE 2 cluster client',
    cluster: true,
    open: async (urls) => {
      const client = await GlideClusterClient.createClient({ addresses: urls.map(hostPort) });
      return { client, close: async () => client.close() };
    },
  },
];

describe('FencedWriter on every supported client', () => {
  let single: RedisNodes;
  let sharded: RedisClusterNodes;

  beforeAll(async () => {
    [single, sharded] = await Promise.all([RedisNodes.start(1), RedisClusterNodes.start(3)]);
  });
  afterAll(async () => {
    await Promise.all([single?.close(), sharded?.close()]);
  });

  const flushScripts = (driver: StoreDriver) =>
    driver.cluster
      ? Promise.all(sharded.nodes.urls.map((_, i) => sharded.nodes.client(i).script('FLUSH')))
      : single.client(0).script('FLUSH');

  test.each(DRIVERS)('$name: newer tokens win, older ones are refused, reads fence too', async (driver) => {
    const { client, close } = await driver.open(driver.cluster ? sharded.nodes.urls : single.urls);
    try {
      const store = new FencedWriter(client);
      // Keys of this client's own (the servers are shared); several, so a cluster client uses more than one shard.
      for (const id of ['1', '2', '3', '{shard}:4']) {
        const key = `${driver.name}:account:${id}`;
        await flushScripts(driver); // the first call of each key goes through NOSCRIPT
        expect(await store.hset(key, { balance: 100 }, 5)).toEqual({ accepted: true, lastToken: 5 });
        expect(await store.hset(key, { balance: 1 }, 4)).toEqual({ accepted: false, lastToken: 5 });
        expect(await store.hgetall(key, 7)).toEqual({
          accepted: true,
          fields: { balance: '100' },
          lastToken: 7,
        });
        // A reader with 7 came: the holder of 6 computed from an older read and is refused.
        expect(await store.hset(key, { balance: 50 }, 6)).toEqual({ accepted: false, lastToken: 7 });
        expect(await store.hgetall(key, 6)).toEqual({
          accepted: false,
          fields: { balance: '100' },
          lastToken: 7,
        });
        expect(await store.hset(key, { balance: 90, note: 'paid' }, 7)).toEqual({
          accepted: true,
          lastToken: 7,
        });
        expect(await store.hgetall(key, 8)).toEqual({
          accepted: true,
          fields: { balance: '90', note: 'paid' },
          lastToken: 8,
        });
        expect(await store.hgetall(`${key}:missing`, 3)).toEqual({
          accepted: true,
          fields: {},
          lastToken: 3,
        });
      }
    } finally {
      await close();
    }
  });

  test('anything that is not a Redis client is a TypeError when the writer is built', () => {
    expect(() => new FencedWriter({} as FencedStoreClient)).toThrow(
      /FencedWriter needs a Redis client: an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster/,
    );
    expect(() => new FencedWriter(null as unknown as FencedStoreClient)).toThrow(/got null/);
  });
});
