/**
 * Stopping a test's PostgreSQL server once the handles it gave out have really let go.
 *
 * pg-pool's `end()` resolves once it has asked its idle clients to end, not once they have
 * (brianc/node-postgres#2328), and so do the closes built on it (TypeORM's `destroy()`, Kysely's,
 * Prisma's adapter). A server stopped right after (fast shutdown) tells a backend that has not read
 * its client's goodbye yet, which on a loaded machine takes a while, "terminating connection due to
 * administrator command" (57P01); that client's pool re-emits it as its 'error', and a pool nobody
 * listens to throws it as "Unhandled error." in whatever test runs then.
 */
import pg from 'pg';
import type { PostgresServer } from 'nest-quorum-lock/testing';

/** A session still open on the server: which database, which program, doing what. */
export interface OpenSession {
  readonly pid: number;
  readonly datname: string;
  readonly application_name: string;
  readonly state: string | null;
  readonly query: string;
}

/**
 * The client sessions on the server at `url` (other than this probe's) once there are none, or
 * those still open after `within` ms.
 */
export async function sessionsLeft(url: string, within = 10_000): Promise<OpenSession[]> {
  const probe = new pg.Client({ connectionString: url, application_name: 'sessions-probe' });
  await probe.connect();
  try {
    const deadline = performance.now() + within;
    for (;;) {
      const { rows } = await probe.query<OpenSession>(
        `SELECT pid, datname, application_name, state, query FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      if (rows.length === 0 || performance.now() >= deadline) return rows;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await probe.end(); // resolves once the socket is closed: this session is gone too
  }
}

/**
 * Stops `server` (when there is one: its beforeAll may have failed) once every client session on
 * it has ended, then throws naming the sessions that were still open after `within` ms: a handle
 * that was never closed. Call it after closing the handles, instead of `server.close()`.
 */
export async function closeAfterSessions(server: PostgresServer | undefined, within = 10_000): Promise<void> {
  if (!server) return;
  let open: OpenSession[];
  try {
    open = await sessionsLeft(server.url, within);
  } finally {
    await server.close();
  }
  if (open.length > 0) {
    const list = open.map((s) => `database ${s.datname} (${s.application_name || 'no name'}, ${s.state})`);
    throw new Error(
      `${open.length} session(s) still open ${within} ms after the handles were closed, when the ` +
        `PostgreSQL server was stopped: ${list.join('; ')}. A pool, client or ORM was not closed, or ` +
        'its close was not awaited.',
    );
  }
}
