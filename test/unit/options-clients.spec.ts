import { Cluster, Redis } from 'ioredis';
import { Cluster as ValkeyCluster, Valkey } from 'iovalkey';
import { createClient, createClientPool, createCluster } from 'redis';
import {
  createClient as createClient5,
  createCluster as createCluster5,
  RESP_TYPES as RESP_TYPES5,
} from 'redis5';
import { Redlock, RedlockOptionsError } from '../../lib/index.js';
import { clientKind } from '../../lib/core/clients/detect.js';
import { chooseClientPackage } from '../../lib/core/clients/load.js';

/*
 * Which client a `nodes` entry is (duck-typed, no import of the client packages), which package
 * URLs and options use (`client`), and the errors at bootstrap: an unsupported object, an unknown
 * `client`, a chosen package that is missing, neither package installed. No Redis needed: no
 * client here connects.
 */

function rejection(build: () => unknown): RedlockOptionsError {
  let caught: unknown;
  try {
    build();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RedlockOptionsError);
  return caught as RedlockOptionsError;
}

describe('client detection (duck-typed)', () => {
  const opened: Array<{ disconnect(): unknown }> = [];
  afterAll(() => {
    for (const client of opened) void client.disconnect();
  });

  test('ioredis Redis and Cluster', () => {
    const redis = new Redis({ lazyConnect: true });
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    opened.push(redis, cluster);
    expect(clientKind(redis)).toBe('ioredis');
    expect(clientKind(cluster)).toBe('ioredis-cluster');
  });

  test('iovalkey Redis (Valkey) and Cluster: the ioredis API, the same kinds', () => {
    const valkey = new Valkey({ lazyConnect: true });
    const cluster = new ValkeyCluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    opened.push(valkey, cluster);
    expect(clientKind(valkey)).toBe('ioredis');
    expect(clientKind(cluster)).toBe('ioredis-cluster');
  });

  test('node-redis 6 and 5 clients and clusters, RESP2 and RESP3', () => {
    expect(clientKind(createClient())).toBe('node-redis');
    expect(clientKind(createClient({ RESP: 2 }))).toBe('node-redis');
    expect(clientKind(createClient5())).toBe('node-redis');
    expect(clientKind(createClient5({ RESP: 3 }))).toBe('node-redis');
    expect(clientKind(createClient5().withTypeMapping({ [RESP_TYPES5.BLOB_STRING]: Buffer }))).toBe(
      'node-redis',
    );
    expect(clientKind(createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }))).toBe(
      'node-redis-cluster',
    );
    expect(clientKind(createCluster5({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }))).toBe(
      'node-redis-cluster',
    );
  });

  test('a Valkey GLIDE client (by its members)', () => {
    // GLIDE connects when it creates a client: its shape is enough here (the real ones are in
    // the GLIDE voter specs).
    const glide = { customCommand: async () => 'OK', invokeScript: async () => 1, close: () => undefined };
    expect(clientKind(glide)).toBe('glide');
    expect(clientKind({ ...glide, invokeScriptWithRoute: async () => 1 })).toBe('glide-cluster');
  });

  test('options, pools and other objects are no client', () => {
    expect(clientKind({ host: 'localhost', port: 6379 })).toBeUndefined();
    expect(clientKind({ url: 'redis://localhost:6379' })).toBeUndefined();
    expect(clientKind(createClientPool())).toBeUndefined();
    expect(clientKind(new Map())).toBeUndefined();
  });
});

describe('nodes that are neither a supported client nor options', () => {
  test.each([
    ['a Map', () => new Map(), /class Map/],
    ['a Date', () => new Date(), /class Date/],
    ['an instance of some class', () => new (class FakeClient {})(), /class FakeClient/],
    ['a node-redis client pool', () => createClientPool(), /client pool.*createClient\(\)/],
  ])('%s is a RedlockOptionsError naming it', (_, node, message) => {
    const err = rejection(() => new Redlock({ nodes: ['redis://127.0.0.1:1', node() as object] }));
    expect(err.option).toBe('nodes[1]');
    expect(err.message).toMatch(/neither a supported Redis client nor an options object/);
    expect(err.message).toMatch(message);
  });
});

describe('the client option', () => {
  test.each([['node_redis'], ['redis'], [1], [null]])('%p is a RedlockOptionsError', (client) => {
    const err = rejection(
      () => new Redlock({ nodes: ['redis://127.0.0.1:1'], client: client as unknown as 'ioredis' }),
    );
    expect(err.option).toBe('client');
    expect(err.message).toMatch(/'ioredis' or 'node-redis'/);
  });

  test('URLs and options use ioredis when it can be loaded, else node-redis', () => {
    expect(chooseClientPackage(undefined, () => true)).toBe('ioredis');
    expect(chooseClientPackage(undefined, (pkg) => pkg === 'node-redis')).toBe('node-redis');
    expect(chooseClientPackage('node-redis', () => true)).toBe('node-redis');
    expect(chooseClientPackage('ioredis', (pkg) => pkg === 'ioredis')).toBe('ioredis');
  });

  test('with neither package installed the error names both, with their install commands', () => {
    const err = rejection(() => chooseClientPackage(undefined, () => false));
    expect(err.option).toBe('nodes');
    expect(err.message).toMatch(/"ioredis"/);
    expect(err.message).toMatch(/"redis" \(node-redis\)/);
    expect(err.message).toMatch(/npm install ioredis/);
    expect(err.message).toMatch(/npm install redis/);
  });

  test('a chosen package that cannot be loaded is named with its install command', () => {
    const err = rejection(() => chooseClientPackage('node-redis', (pkg) => pkg === 'ioredis'));
    expect(err.option).toBe('client');
    expect(err.message).toMatch(/"redis" cannot be loaded.*npm install redis/);
  });

  test('an engine whose nodes are all clients passed in needs no client package', () => {
    const a = new Redis({ lazyConnect: true });
    const b = new Redis({ lazyConnect: true });
    const c = new Redis({ lazyConnect: true });
    const engine = new Redlock({ nodes: [a, b, c], preflight: 'off' });
    try {
      expect(engine.options.client).toBeUndefined();
    } finally {
      for (const client of [a, b, c]) client.disconnect();
    }
  });

  test('the chosen package is resolved when URLs need one', () => {
    const engine = new Redlock({ nodes: ['redis://127.0.0.1:1'], connectTimeout: 0 });
    expect(engine.options.client).toBe('ioredis');
    return engine.close();
  });
});
