import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { FencedWriter } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { readConfig } from '../../../sample-app/src/config.js';

describe('sample app: account withdrawals under a distributed lock (real nodes)', () => {
  let locks: RedisNodes;
  let store: RedisNodes;
  let app: INestApplication;

  beforeAll(async () => {
    locks = await RedisNodes.start(5);
    store = await RedisNodes.start(1);
    const config = {
      ...readConfig({}),
      lockNodes: locks.urls,
      storeUrl: store.url(0),
      instance: 'test',
      paymentDelayMs: 10,
      settlementIntervalMs: 60_000,
    };
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule.forRoot(config, { restartGuard: false })],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([locks?.close(), store?.close()]);
  });

  test('withdraw, then read the account', async () => {
    const server = app.getHttpServer();
    await request(server).put('/accounts/alice').send({ balance: 1000 }).expect(200);
    const res = await request(server).post('/accounts/alice/withdraw').send({ amount: 300 }).expect(200);
    expect(res.body).toMatchObject({ accountId: 'alice', amount: 300, balance: 700 });
    const account = await request(server).get('/accounts/alice').expect(200);
    expect(account.body).toMatchObject({ balance: 700, fence: res.body.token });
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

  test('the same withdrawals without the lock would overdraw (the control)', async () => {
    const server = app.getHttpServer();
    await request(server).put('/accounts/carol').send({ balance: 1000 }).expect(200);
    // The handler's read-pay-write without the lock: every request reads before anyone writes.
    const writer = new FencedWriter(storeClient());
    const balance = 1000;
    let token = Date.now() * 1000;
    const writes = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const read = balance; // every request read 1000 before anyone wrote
        await new Promise((r) => setTimeout(r, 5));
        return writer.hset('account:carol', { balance: read - 100 }, ++token);
      }),
    );
    expect(writes.filter((w) => w.accepted).length).toBe(20); // 20 payments of 100 from 1000
    const account = await request(server).get('/accounts/carol').expect(200);
    expect(account.body.balance).toBe(900); // but the balance says only one happened
  });

  test('the status endpoint shows each lock node and the quorum', async () => {
    const res = await request(app.getHttpServer()).get('/status').expect(200);
    expect(res.body.quorum).toBe(3);
    expect(res.body.quorumReachable).toBe(true);
    expect(res.body.nodes).toHaveLength(5);
    locks.stop(4); // connected but hung: only a probe can tell
    locks.stop(3);
    try {
      const after = await request(app.getHttpServer()).get('/status').expect(200);
      const down = after.body.nodes.filter((n: { reachable: boolean }) => !n.reachable);
      expect(down).toHaveLength(2);
      expect(after.body.quorumReachable).toBe(true);
      locks.stop(2);
      const lost = await request(app.getHttpServer()).get('/status').expect(200);
      expect(lost.body.quorumReachable).toBe(false);
    } finally {
      for (const i of [2, 3, 4]) locks.resume(i);
    }
  });

  test('a stale token can neither write nor read once a newer holder has read the account', async () => {
    const server = app.getHttpServer();
    await request(server).put('/accounts/dave').send({ balance: 500 }).expect(200);
    const res = await request(server).post('/accounts/dave/withdraw').send({ amount: 100 }).expect(200);
    const writer = new FencedWriter(storeClient());
    const stale = await writer.hset('account:dave', { balance: 999_999 }, res.body.token - 1);
    expect(stale).toEqual({ accepted: false, lastToken: res.body.token });
    const staleRead = await writer.hgetall('account:dave', res.body.token - 1);
    expect(staleRead.accepted).toBe(false);
    // A newer holder reads first: from then on the previous token cannot write.
    const newer = await writer.hgetall('account:dave', res.body.token + 10);
    expect(newer).toMatchObject({ accepted: true, fields: { balance: '400' } });
    expect((await writer.hset('account:dave', { balance: 1 }, res.body.token)).accepted).toBe(false);
    const account = await request(server).get('/accounts/dave').expect(200);
    expect(account.body.balance).toBe(400);
  });

  function storeClient() {
    return store.client(0);
  }
});
