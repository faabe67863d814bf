import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RedisNodes } from 'nest-quorum-lock/testing';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { readConfig } from '../../../sample-app/src/config.js';

/*
 * The sample app on each Redis client, chosen by one environment variable (REDIS_CLIENT): the
 * lock's nodes reached with node-redis or Valkey GLIDE instead of ioredis; accounts in Redis.
 */
describe.each(['node-redis', 'glide'])('sample app with REDIS_CLIENT=%s (real servers)', (client) => {
  let locks: RedisNodes;
  let store: RedisNodes;
  let app: INestApplication;

  beforeAll(async () => {
    [locks, store] = await Promise.all([RedisNodes.start(3), RedisNodes.start(1)]);
    const config = {
      ...readConfig({ STORE: 'redis', STORE_URL: store.url(0), REDIS_CLIENT: client }),
      lockNodes: locks.urls,
      instance: 'test',
      paymentDelayMs: 10,
      settlementIntervalMs: 60_000,
    };
    expect(config.redisClient).toBe(client);
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule.forRoot(config)],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([locks?.close(), store?.close()]);
  });

  test('20 concurrent withdrawals of 100 from 1000: exactly 10 succeed, no overdraft', async () => {
    const server = app.getHttpServer();
    await request(server).put('/accounts/bob').send({ balance: 1000 }).expect(200);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => request(server).post('/accounts/bob/withdraw').send({ amount: 100 })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 422)).toHaveLength(10);
    const account = await request(server).get('/accounts/bob').expect(200);
    expect(account.body.balance).toBe(0);
  });

  test('an unknown REDIS_CLIENT is refused with the choices', () => {
    expect(() => readConfig({ REDIS_CLIENT: 'redis' })).toThrow(/"ioredis", "node-redis" or "glide"/);
  });
});
