import { Redis } from 'ioredis';
import { Redlock } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';
import { until } from '../deployments/support.js';

/*
 * Write batching on ioredis (lib/core/transport/ioredis/ioredis.ts, `WriteBatcher`): the commands the engine
 * sends a node in one tick leave in one or two socket writes (the tick's first may go alone), and a
 * release resolves once they have left. Counted on clients passed in, by the writes their sockets
 * hand to the system (Node's `_write` and `_writev`: one each per flushed write).
 */

const LOCKS = 16;
const key = (r: string) => `redlock:{${r}}`;

/** Counts the socket writes of `client` from now on. */
function countWrites(client: Redis): { readonly count: number } {
  const stream = client.stream as unknown as {
    _write: (...args: unknown[]) => void;
    _writev?: (...args: unknown[]) => void;
  };
  const counter = { count: 0 };
  for (const name of ['_write', '_writev'] as const) {
    const original = stream[name];
    if (!original) continue;
    stream[name] = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return original.apply(this, args);
    };
  }
  return counter;
}

describe('write batching on ioredis (real nodes)', () => {
  let nodes: RedisNodes;
  let clients: Redis[];
  let engine: Redlock;

  beforeAll(async () => {
    nodes = await RedisNodes.start(3);
    clients = nodes.urls.map((url) => new Redis(url));
    engine = new Redlock({ nodes: clients, restartGuard: false, logger: new MemoryLogger() });
    await engine.connect();
    await engine.probe(); // behind the scripts each connection loads once checked
  });
  afterAll(async () => {
    await engine?.close();
    await Promise.all((clients ?? []).map((client) => client.quit()));
    await nodes?.close();
  });

  test(`${LOCKS} locks taken in one tick and released in one: at most two writes per node each time`, async () => {
    const names = Array.from({ length: LOCKS }, (_, i) => `batched-${i}`);
    const acquiring = clients.map(countWrites);
    const locks = await Promise.all(names.map((name) => engine.acquire(name, { ttl: 10_000 })));
    expect(acquiring.map((c) => c.count <= 2)).toEqual([true, true, true]);

    const releasing = clients.map(countWrites);
    await Promise.all(locks.map((lock) => lock.release()));
    // Resolved: every release has left (in the writes counted), none is still held back.
    expect(releasing.map((c) => c.count >= 1 && c.count <= 2)).toEqual([true, true, true]);
    await until(async () => {
      const left = await Promise.all(nodes.urls.map((_, i) => nodes.client(i).exists(...names.map(key))));
      return left.every((n) => n === 0);
    }, 2000);
  });

  test('a lone caller’s command is written at once, not at the end of the tick', async () => {
    await (await engine.acquire('lone', { ttl: 10_000 })).release(); // a release alone in its tick
    await new Promise((r) => setTimeout(r, 20));
    const writes = clients.map(countWrites);
    // This test runs in a promise continuation: a process.nextTick callback queued now runs once the
    // continuations (acquire() sending its votes) are done, before any the engine queues after it
    // (the end of its batching window).
    const beforeTickEnd = new Promise<number[]>((resolve) =>
      process.nextTick(() => resolve(writes.map((c) => c.count))),
    );
    const acquiring = engine.acquire('lone', { ttl: 10_000 });
    expect(await beforeTickEnd).toEqual([1, 1, 1]);
    await (await acquiring).release();
  });
});
