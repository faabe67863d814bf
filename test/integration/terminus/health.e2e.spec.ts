import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { HealthIndicatorService } from '@nestjs/terminus';
import request from 'supertest';
import {
  LockService,
  QuorumUnavailableError,
  RedlockModule,
  type RedlockOptions,
} from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { RedlockHealthIndicator } from '../../../lib/terminus/index.js';
import { HealthModule } from '../../../docs/examples/health.js';
import { sleep } from '../../support/cluster.js';
import { serverLabel } from '../../support/servers.js';

/**
 * RedlockHealthIndicator behind a real `/health` route (the README's HealthModule, served over
 * HTTP) against 3 real redis-server nodes: every state of the quorum as an operator's probe sees
 * it. The nodes have a password: it must never appear in the response.
 */

const PASSWORD = 's3cret-health-pw';
// A PING on a loaded 2-core machine took over 100 ms once (a 503 with every node up): room for that.
const NODE_TIMEOUT = 300;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The log-safe label the engine gives node `i`: the URL with the password masked. */
const label = (redis: RedisNodes, i: number) => `redis://:***@127.0.0.1:${redis.port(i)}`;

const up = (redis: RedisNodes, i: number) => ({
  node: label(redis, i),
  state: 'up',
  latencyMs: expect.any(Number),
  server: serverLabel(redis.server), // 'Redis 7.0.15', 'Valkey 8.0.1': what INFO said at preflight
});
const down = (redis: RedisNodes, i: number) => ({
  node: label(redis, i),
  state: 'down',
  error: `no reply to PING within ${NODE_TIMEOUT} ms`,
  server: serverLabel(redis.server),
});
const abstaining = (redis: RedisNodes, i: number) => ({
  node: label(redis, i),
  state: 'abstaining',
  latencyMs: expect.any(Number),
  abstainingUntil: expect.stringMatching(ISO),
  server: serverLabel(redis.server),
});

async function startApp(redis: RedisNodes, options: Partial<RedlockOptions>): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes: redis.urls, nodeTimeout: NODE_TIMEOUT, ...options }),
      HealthModule,
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** GET /health, with the invariants every answer keeps: no password, `details` = info + error. */
async function health(app: INestApplication) {
  const res = await request(app.getHttpServer()).get('/health');
  expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
  expect(res.body.details).toEqual({ ...res.body.info, ...res.body.error });
  return res;
}

describe('RedlockHealthIndicator on /health (3 real redis-server nodes)', () => {
  let redis: RedisNodes;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await RedisNodes.start(3, { password: PASSWORD });
    app = await startApp(redis, { restartGuard: false });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  test('all nodes up: 200, status ok, every node up with its PING latency', async () => {
    const res = await health(app);
    expect(res.status).toBe(200);
    const redlock = {
      status: 'up',
      quorum: 2,
      voting: 3,
      nodes: [up(redis, 0), up(redis, 1), up(redis, 2)],
    };
    expect(res.body).toEqual({ status: 'ok', info: { redlock }, error: {}, details: { redlock } });
    // Not bounded by nodeTimeout: the time is taken when the reply is handled, after any event-loop lag.
    for (const node of res.body.details.redlock.nodes) expect(node.latencyMs).toBeGreaterThanOrEqual(0);
  });

  test('1 of 3 stopped (SIGSTOP): 200, degraded, the stopped node down with why', async () => {
    redis.stop(2);
    try {
      const res = await health(app);
      expect(res.status).toBe(200);
      const redlock = {
        status: 'degraded',
        quorum: 2,
        voting: 2,
        nodes: [up(redis, 0), up(redis, 1), down(redis, 2)],
      };
      expect(res.body).toEqual({ status: 'degraded', info: { redlock }, error: {}, details: { redlock } });
      // Degraded still serves: a lock is granted on the two nodes left.
      const lock = await app.get(LockService).acquire('health-degraded');
      await lock.release();
    } finally {
      redis.resume(2);
    }
  });

  test('2 of 3 stopped: 503, status error, the indicator down with every node named', async () => {
    redis.stop(1);
    redis.stop(2);
    try {
      const res = await health(app);
      expect(res.status).toBe(503);
      const redlock = {
        status: 'down',
        quorum: 2,
        voting: 1,
        nodes: [up(redis, 0), down(redis, 1), down(redis, 2)],
      };
      expect(res.body).toEqual({ status: 'error', info: {}, error: { redlock }, details: { redlock } });
    } finally {
      redis.resume(1);
      redis.resume(2);
    }
  });

  test('resumed nodes: up again', async () => {
    const res = await health(app);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.details.redlock.nodes.map((n: { state: string }) => n.state)).toEqual(['up', 'up', 'up']);
  });

  test('a custom key names the indicator in the result', async () => {
    const result = await app.get(RedlockHealthIndicator).isHealthy('locks');
    expect(result).toEqual({
      locks: { status: 'up', quorum: 2, voting: 3, nodes: [up(redis, 0), up(redis, 1), up(redis, 2)] },
    });
  });

  test("Terminus 11 (no 'degraded' status): up, with degraded: true in the details", async () => {
    // Terminus 11's HealthIndicatorSession: the same session without its `degraded` method.
    const terminus11 = {
      check: (key: string) => {
        const session = new HealthIndicatorService().check(key);
        return { up: session.up.bind(session), down: session.down.bind(session) };
      },
    } as unknown as HealthIndicatorService;
    const indicator = new RedlockHealthIndicator(terminus11, app.get(LockService));
    redis.stop(2);
    try {
      expect(await indicator.isHealthy()).toEqual({
        redlock: {
          status: 'up',
          degraded: true,
          quorum: 2,
          voting: 2,
          nodes: [up(redis, 0), up(redis, 1), down(redis, 2)],
        },
      });
    } finally {
      redis.resume(2);
    }
  });
});

describe('RedlockHealthIndicator and the restart guard (3 brand-new nodes)', () => {
  const GUARD = 1500;
  let redis: RedisNodes;
  let app: INestApplication;

  let booting = 0;
  let booted = 0;

  beforeAll(async () => {
    redis = await RedisNodes.start(3, { password: PASSWORD, freshFor: [] });
    booting = Date.now();
    app = await startApp(redis, { restartGuard: GUARD, ttl: 1000 });
    booted = Date.now();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  test('from boot, before any acquire, the new nodes abstain: 503, each node with until when', async () => {
    // The guard is checked when a voter connects (its identity check writes the marker): the
    // abstention is known at boot, and counts from it.
    const res = await health(app);
    expect(res.status).toBe(503);
    const redlock = {
      status: 'down',
      quorum: 2,
      voting: 0,
      nodes: [abstaining(redis, 0), abstaining(redis, 1), abstaining(redis, 2)],
    };
    expect(res.body).toEqual({ status: 'error', info: {}, error: { redlock }, details: { redlock } });
    for (const node of res.body.details.redlock.nodes) {
      const until = Date.parse(node.abstainingUntil);
      expect(until).toBeGreaterThanOrEqual(booting + GUARD - 10);
      // The server's clock (ms, rounded) sets the end; ours is read around the call: a few ms of slack.
      expect(until).toBeLessThanOrEqual(booted + GUARD + 10);
    }
  });

  test('an acquire meanwhile fails with the time until a quorum votes', async () => {
    const err = await app
      .get(LockService)
      .tryAcquire('first-run')
      .catch((x: unknown) => x);
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect((err as QuorumUnavailableError).retryAfterMs).toBeGreaterThan(0);
    expect((err as QuorumUnavailableError).retryAfterMs).toBeLessThanOrEqual(GUARD);
  });

  test('after the guard the nodes vote; a node restarted empty abstains: 200, degraded, until when', async () => {
    const locks = app.get(LockService);
    await sleep(GUARD + 100);
    const lock = await locks.tryAcquire('after-guard');
    expect(lock).not.toBeNull();
    await lock!.release();
    expect((await health(app)).body.status).toBe('ok');

    await redis.restart(2); // no persistence: comes back empty, without its guard marker
    const deadline = Date.now() + 5000;
    while (!locks.status().nodes[2]!.reachable) {
      if (Date.now() > deadline) throw new Error('node 2 did not reconnect');
      await sleep(20);
    }
    // Node 0 paused: the round has to hear node 2's answer (it abstains), so the engine learns of
    // it. With 0 and 1 both granting, the round could decide before node 2 replies.
    const before = Date.now();
    redis.stop(0);
    try {
      await expect(locks.tryAcquire('after-restart')).rejects.toBeInstanceOf(QuorumUnavailableError);
    } finally {
      redis.resume(0);
    }

    const res = await health(app);
    expect(res.status).toBe(200);
    const redlock = {
      status: 'degraded',
      quorum: 2,
      voting: 2,
      nodes: [up(redis, 0), up(redis, 1), abstaining(redis, 2)],
    };
    expect(res.body).toEqual({ status: 'degraded', info: { redlock }, error: {}, details: { redlock } });
    const until = Date.parse(res.body.details.redlock.nodes[2].abstainingUntil);
    expect(until).toBeGreaterThan(before);
    expect(until).toBeLessThanOrEqual(Date.now() + GUARD);
  });
});
