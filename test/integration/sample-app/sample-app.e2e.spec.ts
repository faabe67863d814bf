import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import pg from 'pg';
import { FencedWriter } from 'nest-quorum-lock';
import { FencedTable } from 'nest-quorum-lock/postgres';
import { PostgresServer, RedisNodes } from 'nest-quorum-lock/testing';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { closeAfterSessions } from '../../support/postgres-sessions.js';
import { readConfig, type StoreKind } from '../../../sample-app/src/config.js';

/** Fenced access to the app's accounts behind its back, with the store's own helper. */
interface FencedAccounts {
  write(id: string, balance: number, token: number): Promise<{ accepted: boolean; lastToken: number }>;
  read(id: string, token: number): Promise<{ accepted: boolean; balance: number }>;
  close(): Promise<void>;
}

/** The accounts' database for one run: a real PostgreSQL or redis-server, started here. */
async function startStore(kind: StoreKind): Promise<{ env: Record<string, string>; fenced: FencedAccounts }> {
  if (kind === 'postgres') {
    const server = await PostgresServer.start();
    const pool = new pg.Pool({ connectionString: server.url });
    const accounts = new FencedTable<{ balance: string }>({ table: 'accounts' });
    return {
      env: { DATABASE_URL: server.url },
      fenced: {
        write: (id, balance, token) => accounts.write(pool, id, token, { balance: String(balance) }),
        read: async (id, token) => {
          const { accepted, row } = await accounts.read(pool, id, token);
          return { accepted, balance: Number(row?.balance) };
        },
        close: async () => {
          await pool.end();
          await closeAfterSessions(server); // pool.end() does not wait for its connections to close
        },
      },
    };
  }
  const nodes = await RedisNodes.start(1);
  const writer = new FencedWriter(nodes.client(0));
  return {
    env: { STORE: 'redis', STORE_URL: nodes.url(0) },
    fenced: {
      write: (id, balance, token) => writer.hset(`account:${id}`, { balance }, token),
      read: async (id, token) => {
        const { accepted, fields } = await writer.hgetall(`account:${id}`, token);
        return { accepted, balance: Number(fields.balance) };
      },
      close: () => nodes.close(),
    },
  };
}

describe.each<StoreKind>(['postgres', 'redis'])('sample app with accounts in %s (real servers)', (kind) => {
  let locks: RedisNodes;
  let fenced: FencedAccounts;
  let app: INestApplication;

  beforeAll(async () => {
    locks = await RedisNodes.start(5);
    const store = await startStore(kind);
    fenced = store.fenced;
    const config = {
      ...readConfig(store.env),
      lockNodes: locks.urls,
      instance: 'test',
      paymentDelayMs: 10,
      settlementIntervalMs: 60_000,
    };
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule.forRoot(config)],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([locks?.close(), fenced?.close()]);
  });

  test('boots on fresh nodes with the restart guard on and locks at once: 200, no node abstaining', async () => {
    // RedisNodes records its nodes fresh for their run_id: no `restartGuard: false` in the app.
    const server = app.getHttpServer();
    await request(server).put('/accounts/dora').send({ balance: 10 }).expect(200);
    await request(server).post('/accounts/dora/withdraw').send({ amount: 1 }).expect(200);
    const status = await request(server).get('/status').expect(200);
    expect(status.body.nodes).toHaveLength(5);
    for (const node of status.body.nodes) expect(node.abstainingUntil).toBeUndefined();
  });

  test('withdraw, then read the account', async () => {
    const server = app.getHttpServer();
    await request(server).put('/accounts/alice').send({ balance: 1000 }).expect(200);
    const res = await request(server).post('/accounts/alice/withdraw').send({ amount: 300 }).expect(200);
    expect(res.body).toMatchObject({ accountId: 'alice', amount: 300, balance: 700 });
    const account = await request(server).get('/accounts/alice').expect(200);
    expect(account.body).toMatchObject({ balance: 700, fence: res.body.token });
  });

  test('a withdrawal from an account never opened is a 404, and opens nothing', async () => {
    const server = app.getHttpServer();
    await request(server).post('/accounts/nobody/withdraw').send({ amount: 1 }).expect(404);
    await request(server).get('/accounts/nobody').expect(404);
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
    const balance = 1000;
    let token = Date.now() * 1000;
    const reads = Array.from({ length: 20 }, () => balance); // every request read 1000 first
    const writes = [];
    // Then each writes, one after another, with a fresh (higher) token, as unlocked requests would
    // (one at a time, so that PostgreSQL's pool cannot reorder the tokens).
    for (const read of reads) writes.push(await fenced.write('carol', read - 100, ++token));
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
    const stale = await fenced.write('dave', 999_999, res.body.token - 1);
    expect(stale).toEqual({ accepted: false, lastToken: res.body.token });
    const staleRead = await fenced.read('dave', res.body.token - 1);
    expect(staleRead.accepted).toBe(false);
    // A newer holder reads first: from then on the previous token cannot write.
    const newer = await fenced.read('dave', res.body.token + 10);
    expect(newer).toEqual({ accepted: true, balance: 400 });
    expect((await fenced.write('dave', 1, res.body.token)).accepted).toBe(false);
    const account = await request(server).get('/accounts/dave').expect(200);
    expect(account.body.balance).toBe(400);
  });
});
