import { positional, type BoundStatement } from '../statement.js';
import { committed, rowsOf, sqlRunner, type SqlRow, type SqlRunner } from './runner.js';

/** The part of mysql2's promise API the runner uses (`mysql2/promise` pools and connections). */
interface PromiseConnection {
  execute(sql: string, values?: unknown[]): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  beginTransaction(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}
interface PromisePool {
  execute(sql: string, values?: unknown[]): Promise<unknown>;
  getConnection(): Promise<PromiseConnection & { release(): void }>;
}

/** The server-status bit of an OK packet that says a transaction is open on the connection. */
const SERVER_STATUS_IN_TRANS = 1;

/** Whether `handle` is a mysql2 pool or connection (promise API, or callback API with `.promise()`). */
export function isMysql2(handle: object): boolean {
  const h = handle as Record<string, unknown>;
  return (
    typeof h.execute === 'function' &&
    typeof h.query === 'function' &&
    (typeof h.getConnection === 'function' ||
      typeof h.beginTransaction === 'function' ||
      typeof h.promise === 'function')
  );
}

/**
 * A runner over mysql2. Statements go through `execute` (prepared on the server: values are never
 * formatted into the text). A pool gives each transaction one of its connections; a connection
 * runs the fenced statements in the transaction the application has open on it, or in one of its
 * own when it has none (asked of the server: the status flags of a `DO 0`).
 */
export function mysql2Runner(handle: object): SqlRunner {
  const api = (
    typeof (handle as { promise?: unknown }).promise === 'function'
      ? (handle as { promise(): unknown }).promise()
      : handle
  ) as PromisePool | PromiseConnection;
  if ('getConnection' in api && typeof api.getConnection === 'function') {
    const pool = api;
    return sqlRunner('mysql', execute(pool), async (fn) => {
      const connection = await pool.getConnection();
      try {
        return await ownTransaction(connection, fn);
      } finally {
        connection.release();
      }
    });
  }
  const connection = api as PromiseConnection;
  return sqlRunner('mysql', execute(connection), async (fn, self) => {
    const [status] = (await connection.query('DO 0')) as [{ serverStatus?: number }];
    if (((status?.serverStatus ?? 0) & SERVER_STATUS_IN_TRANS) !== 0) return fn(self);
    return ownTransaction(connection, fn);
  });
}

/** Runs statements with `target`'s `execute`. */
function execute(
  target: Pick<PromiseConnection, 'execute'>,
): (statement: BoundStatement) => Promise<SqlRow[]> {
  return async (statement) => {
    const { text, values } = positional(statement);
    return rowsOf('mysql', statement, await target.execute(text, values));
  };
}

/** `fn` in a transaction opened, committed (or rolled back) here, on `connection`. */
async function ownTransaction<T>(
  connection: PromiseConnection,
  fn: (runner: SqlRunner) => Promise<T>,
): Promise<T> {
  await connection.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED'); // the next transaction only
  await connection.beginTransaction();
  return committed(
    () => fn(sqlRunner('mysql', execute(connection))),
    () => connection.commit(),
    () => connection.rollback(),
  );
}
