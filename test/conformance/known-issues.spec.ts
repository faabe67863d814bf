import * as ioredis from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { realRuntime } from '../../lib/core/runtime.js';
import { IoredisTransport } from '../../lib/core/transport/ioredis/ioredis.js';
import { createVoter } from '../../lib/core/transport/pick.js';
import { checkServer, readServerFacts } from '../../lib/core/voter/server.js';
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
test('a voter adopts a ready ioredis 6 client (not only instances of its own ioredis copy)', async () => {
  const client = new Redis6(nodes.url(0), { protocol: 3 });
  const voter = createVoter(client, voterContext(DEFAULT_SETTINGS), undefined, 'nodes[0]');
  try {
    expect(voter.label).toBe(`redis://127.0.0.1:${nodes.port(0)}`);
    expect(await voter.waitReady(2000)).toBe(true);
    const vote = await voter.acquire(['ki:{adopted}'], 'v1', 5000, '');
    expect(vote.kind).toBe('granted');
    // Through the client passed in: the key is on the server the client talks to.
    expect(await client.get('ki:{adopted}')).toBe('v1');
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
    const facts = await factsThrough(client);
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
    const facts = await factsThrough(client);
    expect(facts.maxmemoryPolicy).toBe('allkeys-lru');
    expect(checkServer(facts).map((f) => f.problem)).toEqual([expect.stringContaining('maxmemory-policy')]);
  } finally {
    client.disconnect();
  }
});

/** The server facts preflight reads, through the ioredis transport over `client`. */
async function factsThrough(client: Redis6) {
  const spec = { client: client as unknown as ioredis.Redis, label: 'facts', owned: false };
  const transport = new IoredisTransport(spec, realRuntime, 2000);
  try {
    return await readServerFacts(
      realRuntime,
      (command) => transport.send(undefined, command),
      undefined,
      2000,
    );
  } finally {
    await transport.close(500);
  }
}
