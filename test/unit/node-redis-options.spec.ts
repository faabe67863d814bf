import { Redlock, RedlockOptionsError } from '../../lib/index.js';

/*
 * Options the library opens a node-redis client with (`client: 'node-redis'`): ioredis-shaped
 * options (host and port at the top, or a Sentinel-managed primary) are refused when the engine is
 * built, instead of a client that node-redis points at localhost:6379. No Redis needed.
 */

describe("node-redis options (client: 'node-redis')", () => {
  test.each([
    [{ host: '10.0.0.1', port: 6380 }, /host, port \(ioredis options\)/],
    [{ sentinels: [{ host: '10.0.0.1', port: 26379 }], name: 'locks' }, /sentinels \(ioredis options\)/],
  ])('%j is a RedlockOptionsError that says what node-redis takes', (node, problem) => {
    let caught: unknown;
    try {
      new Redlock({ nodes: [node], client: 'node-redis' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RedlockOptionsError);
    expect((caught as Error).message).toMatch(problem);
    expect((caught as Error).message).toMatch(/\{ socket: \{ host, port \} \}/);
  });

  test('createClient options are taken', async () => {
    const engine = new Redlock({ nodes: [{ socket: { host: '127.0.0.1', port: 1 } }], client: 'node-redis' });
    expect(engine.voters[0]!.label).toBe('redis://127.0.0.1:1');
    await engine.close();
  });
});
