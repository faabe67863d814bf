import { createClient } from 'redis';
import { NodeConfigurationError, Redlock } from '../../../lib/index.js';
import { RedisClusterNodes, redisServerVersion } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';
import { serverLabel } from '../../support/servers.js';
import { Deployment, rejection } from './support.js';

/**
 * Which server answers, by name and version, as the library reads it from INFO: `status()` of
 * standalone nodes (ioredis and node-redis) and of a Cluster voter, and preflight's words for one
 * server listed twice. Run on whatever server the launchers start (REDIS_SERVER_BIN: `npm run
 * test:servers` runs this file on Valkey 8.0.1 and Redis 7.4.1 too), and checked against what that
 * binary says of itself (`--version`): Valkey 8 reports `redis_version:7.2.4` in INFO, which a
 * reader of redis_version alone would take for Redis 7.2.4.
 */
describe('the server software, by name and version', () => {
  const deployment = new Deployment();
  afterEach(() => deployment.close());
  const expected = serverLabel(redisServerVersion());

  test("status() names each node's server (ioredis URL and node-redis client)", async () => {
    const nodes = await deployment.nodes(3);
    const client = createClient({ url: nodes.url(2) });
    client.on('error', () => undefined);
    await client.connect();
    const { engine } = deployment.engine([nodes.url(0), nodes.url(1), client]);
    try {
      await engine.connect();
      expect(engine.status().map((s) => s.server)).toEqual([expected, expected, expected]);
      expect((await engine.probe()).map((s) => s.server)).toEqual([expected, expected, expected]);
    } finally {
      await engine.close();
      client.destroy();
    }
  });

  test("a Cluster voter names its masters' server", async () => {
    const cluster = await RedisClusterNodes.start(3);
    const nodes = await deployment.nodes(2);
    const engine = new Redlock({
      nodes: [{ cluster: cluster.startupNodes }, ...nodes.urls],
      logger: new MemoryLogger(),
      restartGuard: false,
    });
    try {
      await engine.connect();
      expect(engine.status().map((s) => s.server)).toEqual([expected, expected, expected]);
    } finally {
      await engine.close();
      await cluster.close();
    }
  });

  test('one server listed twice is named as the server it is', async () => {
    const nodes = await deployment.nodes(2);
    const { engine } = deployment.engine([
      nodes.url(0),
      { host: 'localhost', port: nodes.port(0), family: 4 },
      nodes.url(1),
    ]);
    const err = await rejection(engine.connect());
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.message).toContain(`same ${expected.split(' ')[0]} server as`);
  });

  test("with preflight 'off' the server is still named: the identity guard reads INFO server anyway", async () => {
    const nodes = await deployment.nodes(3);
    const { engine } = deployment.engine(nodes.urls, { preflight: 'off' });
    await engine.connect();
    expect(engine.status().map((s) => s.server)).toEqual([expected, expected, expected]);
  });
});
