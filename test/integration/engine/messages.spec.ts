import {
  NodeConfigurationError,
  QuorumUnavailableError,
  Redlock,
  type RedlockOptions,
} from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/**
 * Issue 40, item 7, on real servers: what the engine logs and throws when a node dies, abstains or
 * is listed twice (the parts without Redis: test/unit/messages.spec.ts).
 */
describe('engine messages (3 real redis-server nodes)', () => {
  let nodes: RedisNodes;
  const engines: Redlock[] = [];

  beforeEach(async () => {
    nodes = await RedisNodes.start(3);
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    await nodes?.close();
  });

  function engine(options: Partial<RedlockOptions>): { engine: Redlock; logger: MemoryLogger } {
    const logger = new MemoryLogger();
    const made = new Redlock({ nodes: nodes.urls, restartGuard: false, logger, ...options });
    engines.push(made);
    return { engine: made, logger };
  }

  test.each(['ioredis', 'node-redis'] as const)(
    'one node killed: one "is unavailable" line (%s)',
    async (client) => {
      const { engine: e, logger } = engine({ client });
      await e.connect();
      await nodes.kill(0);
      expect(await eventually(async () => e.status()[0]!.reachable, false)).toBe(false);
      // Long enough for the dropped socket's error and then several refused reconnections.
      await sleep(1200);
      await (await e.acquire('after-the-kill')).release();
      const unavailable = logger.lines.filter((l) => l.includes('is unavailable'));
      expect(unavailable).toEqual([
        expect.stringMatching(/^warn: Redis node redis:\/\/127\.0\.0\.1:\d+ is unavailable: /),
      ]);
    },
  );

  test('nodes abstaining under the restart guard: the retry hint is whole ms', async () => {
    // RedisNodes records its nodes fresh for the default prefix only: under another one they have no
    // restart-guard marker, so every one abstains for the guard.
    const { engine: e } = engine({ restartGuard: 60_000, keyPrefix: 'unrecorded:' });
    await e.connect();
    const err = (await e
      .acquire('abstained', { wait: 0 })
      .catch((x: unknown) => x)) as QuorumUnavailableError;
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(Number.isInteger(err.retryAfterMs)).toBe(true);
    expect(err.retryAfterMs).toBeGreaterThan(50_000);
    expect(err.message).not.toMatch(/\d\.\d+ (more )?ms/);
  });

  test('one server listed twice: the connect summary gives the reason, not the node again', async () => {
    const twice = [nodes.url(0), nodes.url(0).replace('127.0.0.1', 'localhost'), nodes.url(1)];
    const { engine: e, logger } = engine({ nodes: twice, preflight: 'warn' });
    await e.connect();
    const { engine: strict, logger: strictLog } = engine({ nodes: twice });
    const err = (await strict.connect().catch((x: unknown) => x)) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    const summary = strictLog.lines.find((l) => l.includes('not connected'));
    expect(summary).toMatch(/\(refused by preflight: it is the same Redis server as redis:\/\/\S+\)\.$/);
    expect(summary).not.toContain('(Redis node');
    expect(logger.lines.join('\n')).toContain('same Redis server as');
  });

  test('the same URL twice says so, rather than naming the node as its own twin', async () => {
    const { engine: e } = engine({ nodes: [nodes.url(0), nodes.url(0), nodes.url(1)] });
    const err = (await e.connect().catch((x: unknown) => x)) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.message).toContain(`Redis node ${nodes.url(0)}: it is listed twice in nodes (run_id `);
    expect(err.message).not.toContain(`same Redis server as ${nodes.url(0)}`);
  });
});
