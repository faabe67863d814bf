import { NodeConfigurationError, Redlock, type RedlockOptions } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { ClockFiles, nodeClock } from '../../support/clock-shim.js';
import { MemoryLogger } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/**
 * Issue 40, item 5: the bootstrap starts once a quorum of distinct servers is connected and
 * checked, and the others failed to connect: it does not wait connectTimeout for a node that is
 * down. Nodes that join later get the same checks (duplicate, replica, eviction, clock).
 */
describe('bootstrap with a node down (real redis-server nodes)', () => {
  const CONNECT_TIMEOUT = 5000;
  let nodes: RedisNodes;
  const engines: Redlock[] = [];

  beforeEach(async () => {
    nodes = await RedisNodes.start(3);
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    await nodes?.close();
  });

  function engine(options: Partial<RedlockOptions> = {}): { engine: Redlock; logger: MemoryLogger } {
    const logger = new MemoryLogger();
    const made = new Redlock({
      nodes: nodes.urls,
      restartGuard: false,
      connectTimeout: CONNECT_TIMEOUT,
      logger,
      ...options,
    });
    engines.push(made);
    return { engine: made, logger };
  }

  async function timed(engine: Redlock): Promise<number> {
    const started = performance.now();
    await engine.connect();
    return performance.now() - started;
  }

  test.each(['ioredis', 'node-redis'] as const)(
    '1 of 3 stopped: connect() resolves long before connectTimeout, and locks work (%s)',
    async (client) => {
      await nodes.kill(2);
      const { engine: e, logger } = engine({ client });
      const ms = await timed(e);
      // Before: connectTimeout and more (5.5 s); the bound is the timeout it stands for, halved.
      expect(ms).toBeLessThan(CONNECT_TIMEOUT / 2);
      expect(e.status().map((s) => s.reachable)).toEqual([true, true, false]);
      expect(logger.lines.join('\n')).toMatch(/1 of 3 Redis nodes not connected \(a quorum of 2 is\)/);
      await (await e.acquire('down-one')).release();
      // It joins when it comes back.
      await nodes.revive(2);
      expect(await eventually(async () => e.status()[2]!.reachable, true, 5000)).toBe(true);
    },
  );

  test('every node up: the bootstrap still waits for each check (a duplicate fails it)', async () => {
    const twice = [nodes.url(0), nodes.url(0).replace('127.0.0.1', 'localhost'), nodes.url(1)];
    const { engine: e } = engine({ nodes: twice });
    await expect(e.connect()).rejects.toBeInstanceOf(NodeConfigurationError);
  });

  test('two URLs of one server are one voter: no early start on them', async () => {
    // 127.0.0.1 and localhost of node 0 are one server; node 1 is down: no quorum of distinct
    // servers, so the bootstrap waits (it would have started on the two URLs of node 0).
    await nodes.kill(1);
    const { engine: e } = engine({
      nodes: [nodes.url(0), nodes.url(0).replace('127.0.0.1', 'localhost'), nodes.url(1)],
      preflight: 'warn',
      connectTimeout: 1500,
    });
    const ms = await timed(e);
    expect(ms).toBeGreaterThanOrEqual(1400);
  });

  test('a duplicate that joins late is refused, and says so', async () => {
    const more = await RedisNodes.start(2);
    try {
      await more.kill(1);
      // Five voters, quorum 3: the three running servers start it; the late server is listed twice.
      const late = more.url(1);
      const { engine: e, logger } = engine({
        nodes: [...nodes.urls, late, late.replace('127.0.0.1', 'localhost')],
      });
      expect(await timed(e)).toBeLessThan(CONNECT_TIMEOUT / 2);
      await more.revive(1);
      const joined = async () => e.status().filter((s) => s.reachable).length;
      expect(await eventually(joined, 4, 5000)).toBe(4);
      // One of its two URLs votes, the other is refused (logged loudly: the bootstrap has passed).
      expect(
        await eventually(async () => logger.lines.some((l) => /same Redis server as/.test(l)), true),
      ).toBe(true);
      expect(logger.lines.find((l) => /same Redis server as/.test(l))).toMatch(
        /^error: .*does not vote until/s,
      );
      expect(
        e
          .status()
          .slice(3)
          .filter((s) => s.reachable),
      ).toHaveLength(1);
    } finally {
      await Promise.all(engines.splice(0).map((x) => x.close()));
      await more.close();
    }
  });

  test('a replica that joins late is refused, and says so', async () => {
    const replica = await RedisNodes.start(1, {
      extraArgs: ['--replicaof', '127.0.0.1', String(nodes.port(0))],
    });
    try {
      await nodes.kill(2);
      const { engine: e, logger } = engine({ nodes: [nodes.url(0), nodes.url(1), replica.url(0)] });
      await replica.kill(0);
      // Node 2's place is taken by the replica, down at the bootstrap.
      expect(await timed(e)).toBeLessThan(CONNECT_TIMEOUT / 2);
      await replica.revive(0);
      const said = async () => logger.lines.some((l) => l.includes('is a replica of'));
      expect(await eventually(said, true, 5000)).toBe(true);
      expect(logger.lines.find((l) => l.includes('is a replica of'))).toMatch(
        /^error: .*does not vote until/s,
      );
      expect(e.status()[2]!.reachable).toBe(false);
    } finally {
      await Promise.all(engines.splice(0).map((x) => x.close()));
      await replica.close();
    }
  });

  test('a voter whose clock is offset, down at the bootstrap, is reported when it joins', async () => {
    const clocks = new ClockFiles();
    const shimmed = await RedisNodes.start(3, { env: (i) => clocks.env(nodeClock(i)) });
    try {
      clocks.set(nodeClock(2), 2000);
      await shimmed.kill(2);
      const { engine: e, logger } = engine({ nodes: shimmed.urls, clockGuard: 500 });
      expect(await timed(e)).toBeLessThan(CONNECT_TIMEOUT / 2);
      expect(logger.lines.join('\n')).not.toContain('median');
      await shimmed.revive(2);
      const said = async () => logger.lines.some((l) => l.includes('ahead of the median'));
      expect(await eventually(said, true, 5000)).toBe(true);
      expect(logger.lines.find((l) => l.includes('ahead of the median'))).toMatch(
        new RegExp(
          `^warn: Redis node redis://127\\.0\\.0\\.1:${shimmed.port(2)}: its clock is (19|20)\\d\\d ms ahead`,
        ),
      );
    } finally {
      await Promise.all(engines.splice(0).map((x) => x.close()));
      await shimmed.close();
      clocks.close();
    }
  });
});
