/**
 * A holder paused inside an open transaction (issue 38, item 6). Holder A (token 1) writes its row
 * through FencedTable inside a transaction and is then paused (GC, a stopped VM) before it
 * commits: its transaction keeps the row lock past the lease. Its successor B (token 2) reaches
 * the same row. What happens, on a real PostgreSQL and a real MariaDB:
 *
 *  - without a timeout, B's fenced write waits for A's transaction as long as A stays paused, then
 *    is accepted (fencing keeps the order; the pause costs B its latency, not its safety);
 *  - a lock wait timeout on B's session (PostgreSQL `lock_timeout`, MariaDB
 *    `innodb_lock_wait_timeout`) turns the wait into an error after that time;
 *  - an idle-in-transaction timeout on A's session (PostgreSQL
 *    `idle_in_transaction_session_timeout`, MariaDB `idle_transaction_timeout`) ends the paused
 *    transaction on the server: its write is rolled back, B goes on, and A's commit fails.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { FencedTable } from 'nest-quorum-lock/sql';
import { MariaDbServer, PostgresServer } from 'nest-quorum-lock/testing';

/** How long holder A stays paused in the cases where nothing ends its transaction. */
const PAUSE_MS = 1500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const accounts = new FencedTable<{ balance: string | number }>({ table: 'accounts' });

/** The two sessions of a case: A's (paused in its transaction) and B's. */
interface Sessions {
  a: { begin(): Promise<void>; commit(): Promise<void>; handle: Parameters<typeof accounts.write>[0] };
  b: { handle: Parameters<typeof accounts.write>[0] };
  close(): Promise<void>;
}

/** Runs A's transaction up to its pause, then B's write; resolves B's outcome and how long it took. */
async function successorAfterPause(s: Sessions, id: string) {
  await s.a.begin();
  expect((await accounts.write(s.a.handle, id, 1, { balance: 100 })).accepted).toBe(true);
  // A is paused here, its transaction open; its lease runs out and B holds the lock with token 2.
  const started = performance.now();
  const outcome = await accounts.write(s.b.handle, id, 2, { balance: 200 }).then(
    (write) => ({ write, error: undefined }),
    (error: unknown) => ({ write: undefined, error: error as Error & { code?: string } }),
  );
  return { ...outcome, waitedMs: performance.now() - started };
}

describe('PostgreSQL: a holder paused inside an open transaction', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await accounts.ensureTable(admin, { columns: { balance: 'bigint' } });
    await admin.end();
  }, 60_000);
  afterAll(() => server?.close());

  async function sessions(settingsA: string[] = [], settingsB: string[] = []): Promise<Sessions> {
    const a = new pg.Client({ connectionString: server.url });
    const b = new pg.Client({ connectionString: server.url });
    a.on('error', () => undefined); // the server may end A's session (idle timeout)
    await Promise.all([a.connect(), b.connect()]);
    for (const s of settingsA) await a.query(s);
    for (const s of settingsB) await b.query(s);
    return {
      a: {
        begin: async () => void (await a.query('BEGIN')),
        commit: async () => void (await a.query('COMMIT')),
        handle: a,
      },
      b: { handle: b },
      close: async () => {
        await a.end().catch(() => undefined);
        await b.end();
      },
    };
  }

  test('no timeout: the successor waits as long as the pause, then its write is accepted', async () => {
    const s = await sessions();
    try {
      const resumeA = sleep(PAUSE_MS).then(() => s.a.commit()); // A resumes and commits
      const b = await successorAfterPause(s, 'wait');
      await resumeA;
      expect(b.write).toEqual({ accepted: true, lastToken: 2 });
      expect(b.waitedMs).toBeGreaterThanOrEqual(PAUSE_MS * 0.9);
    } finally {
      await s.close();
    }
  });

  test("lock_timeout on the successor's session: its write fails after that time instead", async () => {
    const s = await sessions([], [`SET lock_timeout = '200ms'`]);
    try {
      const b = await successorAfterPause(s, 'lock-timeout');
      expect(b.error?.code).toBe('55P03'); // lock_not_available
      expect(b.waitedMs).toBeLessThan(PAUSE_MS);
      await s.a.commit();
    } finally {
      await s.close();
    }
  });

  test("idle_in_transaction_session_timeout on the holder's session: the server ends the paused transaction", async () => {
    const s = await sessions([`SET idle_in_transaction_session_timeout = '300ms'`]);
    try {
      const b = await successorAfterPause(s, 'idle');
      expect(b.write).toEqual({ accepted: true, lastToken: 2 });
      expect(b.waitedMs).toBeLessThan(PAUSE_MS);
      await expect(s.a.commit()).rejects.toThrow(); // A's session is gone, its write rolled back
    } finally {
      await s.close();
    }
  });
});

describe('MariaDB: a holder paused inside an open transaction', () => {
  let server: MariaDbServer;
  beforeAll(async () => {
    server = await MariaDbServer.start();
    const admin = await mysql.createConnection(server.url);
    await accounts.ensureTable(admin, { columns: { balance: 'bigint' } });
    await admin.end();
  }, 60_000);
  afterAll(() => server?.close());

  async function sessions(settingsA: string[] = [], settingsB: string[] = []): Promise<Sessions> {
    const a = await mysql.createConnection(server.url);
    const b = await mysql.createConnection(server.url);
    a.on('error', () => undefined);
    for (const s of settingsA) await a.query(s);
    for (const s of settingsB) await b.query(s);
    return {
      a: { begin: () => a.beginTransaction(), commit: () => a.commit(), handle: a },
      b: { handle: b },
      close: async () => {
        await a.end().catch(() => undefined);
        await b.end();
      },
    };
  }

  test('no timeout: the successor waits as long as the pause, then its write is accepted', async () => {
    const s = await sessions();
    try {
      const resumeA = sleep(PAUSE_MS).then(() => s.a.commit());
      const b = await successorAfterPause(s, 'wait');
      await resumeA;
      expect(b.write).toEqual({ accepted: true, lastToken: 2 });
      expect(b.waitedMs).toBeGreaterThanOrEqual(PAUSE_MS * 0.9);
    } finally {
      await s.close();
    }
  });

  test("innodb_lock_wait_timeout on the successor's session: its write fails after that time instead", async () => {
    const s = await sessions([], ['SET SESSION innodb_lock_wait_timeout = 1']); // seconds, at least 1
    try {
      const resumeA = sleep(PAUSE_MS).then(() => s.a.commit());
      const b = await successorAfterPause(s, 'lock-timeout');
      expect(b.error?.code).toBe('ER_LOCK_WAIT_TIMEOUT'); // 1205
      expect(b.waitedMs).toBeLessThan(PAUSE_MS);
      await resumeA;
    } finally {
      await s.close();
    }
  });

  test("idle_transaction_timeout on the holder's session: the server ends the paused transaction", async () => {
    const s = await sessions(['SET SESSION idle_transaction_timeout = 1']); // seconds
    try {
      const b = await successorAfterPause(s, 'idle');
      expect(b.write).toEqual({ accepted: true, lastToken: 2 });
      expect(b.waitedMs).toBeLessThan(2500);
      await expect(s.a.commit()).rejects.toThrow(); // A's connection was closed, its write rolled back
    } finally {
      await s.close();
    }
  });
});
