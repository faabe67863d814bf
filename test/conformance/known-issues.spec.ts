import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { RedisVoter } from '../../lib/core/voter/ioredis/redis-voter.js';
import { checkServer, readServerFacts } from '../../lib/core/voter/ioredis/preflight.js';
import { RedisNodes } from '../../lib/testing/index.js';
import { DEFAULT_SETTINGS, voterContext } from './harness.js';

/*
 * What the conformance table found and lib did not do: each a `test.failing`, so that it is
 * listed on every run and turns red once fixed (then made a plain test, kept as a regression test).
 * Both below were fixed by issue 27 (clients told by duck-typing; CONFIG GET read in every shape).
 */

let nodes: RedisNodes;
beforeAll(async () => {
  nodes = await RedisNodes.start(1, { extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
});
afterAll(() => nodes?.close());

/**
 * `RedisVoter.from` (and so `nodes: [client]`) recognises a ready client with `instanceof Redis`
 * against the ioredis copy the library resolves. An ioredis 6 client beside the library's ioredis 5
 * (or any second copy of ioredis in an app) is taken for an options object: the voter opens its
 * own connection to localhost:6379, silently, and the client passed in is never used.
 * Fixed (issue 27): clients are told by duck-typing (lib/core/clients/detect.ts).
 */
test('RedisVoter.from adopts a ready ioredis 6 client (not only instances of its own ioredis copy)', async () => {
  const client = new Redis6(nodes.url(0), { protocol: 3 });
  const voter = RedisVoter.from(client as unknown as Redis5, voterContext(DEFAULT_SETTINGS));
  try {
    expect(voter.client).toBe(client);
    expect(voter.label).toBe(`redis://127.0.0.1:${nodes.port(0)}`);
  } finally {
    await voter.close(500);
    client.disconnect();
  }
});

/**
 * Found by the table and fixed: preflight read `CONFIG GET` replies only as `[name, value]` arrays.
 * An ioredis 6 client created with `replyMapping: 'resp3'` gets RESP3 maps as objects
 * (`{ 'maxmemory-policy': 'allkeys-lru' }`), so every CONFIG fact read as unknown: a node that
 * evicts lock keys passed preflight silently.
 */
test("preflight sees maxmemory-policy through an ioredis 6 client with replyMapping 'resp3'", async () => {
  const client = new Redis6(nodes.url(0), { protocol: 3, replyMapping: 'resp3' });
  try {
    await new Promise((resolve) => client.once('ready', resolve));
    const facts = await readServerFacts(client as unknown as Redis5, 2000);
    expect(facts.maxmemoryPolicy).toBe('allkeys-lru');
    expect(checkServer(facts).map((f) => f.problem)).toEqual([expect.stringContaining('maxmemory-policy')]);
  } finally {
    client.disconnect();
  }
});

test('control: the same check through an ioredis 6 client with the default (legacy) replies', async () => {
  const client = new Redis6(nodes.url(0), { protocol: 3 });
  try {
    await new Promise((resolve) => client.once('ready', resolve));
    const facts = await readServerFacts(client as unknown as Redis5, 2000);
    expect(facts.maxmemoryPolicy).toBe('allkeys-lru');
    expect(checkServer(facts).map((f) => f.problem)).toEqual([expect.stringContaining('maxmemory-policy')]);
  } finally {
    client.disconnect();
  }
});
