/**
 * A pg pool ended just before its PostgreSQL server is stopped (test/support/postgres-sessions.ts):
 * docs-examples.spec failed in a loaded full run with "Unhandled error. (error: terminating
 * connection due to administrator command" from its admin pool, ended by `await admin.end()` right
 * before `server.close()`. Here the pool's backends are stopped (SIGSTOP) while it ends, standing for
 * a machine too busy to run them, so the race is lost every time rather than once in a while; they
 * are resumed once the server is being stopped.
 */
import pg from 'pg';
import { PostgresServer } from 'nest-quorum-lock/testing';
import { closeAfterSessions } from '../../support/postgres-sessions.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A pool with two connections, idle, whose backends are stopped; and the errors it emits. */
async function pausedPool(
  server: PostgresServer,
): Promise<{ pool: pg.Pool; pids: number[]; errors: Error[] }> {
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  // Recorded to be asserted on, not to hide them: each test says how many it expects.
  const errors: Error[] = [];
  pool.on('error', (err) => errors.push(err));
  const clients = await Promise.all([pool.connect(), pool.connect()]);
  const pids = await Promise.all(
    clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
  );
  for (const c of clients) c.release();
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  return { pool, pids, errors };
}

const resume = (pids: number[]) => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // already gone
    }
  }
};

describe('a pg pool ended right before its server stops', () => {
  test('control: pool.end() resolves while its sessions are open, and the fast shutdown reaches them', async () => {
    const server = await PostgresServer.start();
    const { pool, pids, errors } = await pausedPool(server);
    try {
      await pool.end(); // resolves although neither backend has read its client's goodbye
      const closing = server.close();
      await sleep(200); // the postmaster has told its backends to terminate
      resume(pids);
      await closing;
      await sleep(100);
      expect(errors.length).toBeGreaterThan(0);
      for (const err of errors) {
        expect(err.message).toBe('terminating connection due to administrator command');
        expect((err as { code?: string }).code).toBe('57P01');
      }
    } finally {
      resume(pids);
      await server.close();
    }
  });

  test('closeAfterSessions stops the server once the sessions have ended: nothing reaches the pool', async () => {
    const server = await PostgresServer.start();
    const { pool, pids, errors } = await pausedPool(server);
    try {
      await pool.end();
      const closing = closeAfterSessions(server);
      await sleep(300);
      expect(server.pid).toBeDefined(); // still waiting for the two sessions
      resume(pids);
      await closing;
      expect(server.pid).toBeUndefined();
      await sleep(100);
      expect(errors).toEqual([]);
    } finally {
      resume(pids);
      await server.close();
    }
  });

  test('a pool never ended: the server is stopped all the same, and the leak is named', async () => {
    const server = await PostgresServer.start();
    const leaked = new pg.Pool({ connectionString: server.url, max: 1, application_name: 'leaky-pool' });
    const errors: Error[] = [];
    leaked.on('error', (err) => errors.push(err));
    await leaked.query('SELECT 1');
    const err = await closeAfterSessions(server, 300).catch((e: unknown) => e);
    expect(server.pid).toBeUndefined();
    expect((err as Error).message).toMatch(
      /^1 session\(s\) still open 300 ms after the handles were closed, when the PostgreSQL server was stopped: database postgres \(leaky-pool, idle\)\. A pool, client or ORM was not closed/,
    );
    await sleep(100);
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['57P01']);
    await leaked.end();
  });
});
