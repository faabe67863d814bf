import type { SqlDialect } from '../identifiers.js';
import type { BoundStatement } from '../statement.js';

/** A row as a driver returns it: column name to value. */
export type SqlRow = Record<string, unknown>;

/**
 * What the fenced table needs from the application's handle, whatever library made it: run one
 * statement, and run several in one transaction. One small adapter per library builds it
 * (handles/*.ts); the dialects (dialects/*.ts) use nothing else.
 */
export interface SqlRunner {
  /** The database behind the handle. */
  readonly dialect: SqlDialect;
  /** Runs one statement; resolves its rows (none for a statement whose `returnsRows` is false). */
  run(statement: BoundStatement): Promise<SqlRow[]>;
  /**
   * Runs `fn` in one transaction: the handle's own when it is a transaction (then the app commits
   * or rolls back), else one opened here, committed when `fn` resolves and rolled back when it throws.
   * One opened here is READ COMMITTED: InnoDB then takes no gap lock for a row that is missing, so
   * two holders creating the same new row wait for each other instead of deadlocking (under
   * REPEATABLE READ both lock the gap, and each one's INSERT waits for the other's).
   */
  transaction<T>(fn: (runner: SqlRunner) => Promise<T>): Promise<T>;
}

/**
 * A runner whose transactions are `open`'s (given the runner itself, for a handle that finds its
 * own transaction already open); without `open`, `fn` runs on the runner: a handle that is a
 * transaction, or one whose dialect needs none.
 */
export function sqlRunner(
  dialect: SqlDialect,
  run: (statement: BoundStatement) => Promise<SqlRow[]>,
  open?: <T>(fn: (runner: SqlRunner) => Promise<T>, self: SqlRunner) => Promise<T>,
): SqlRunner {
  const runner: SqlRunner = { dialect, run, transaction: (fn) => (open ? open(fn, runner) : fn(runner)) };
  return runner;
}

/** `fn` in a transaction just begun: committed when it resolves, rolled back when it (or the commit) throws. */
export async function committed<T>(
  fn: () => Promise<T>,
  commit: () => Promise<void>,
  rollback: () => Promise<void>,
): Promise<T> {
  try {
    const result = await fn();
    await commit();
    return result;
  } catch (err) {
    await rollback().catch(() => undefined); // the first error is the one to report
    throw err;
  }
}

/** The rows of a node-postgres result (`{ rows }`); none for anything else. */
export function pgRows(result: unknown): SqlRow[] {
  const rows = (result as { rows?: unknown } | null | undefined)?.rows;
  return Array.isArray(rows) ? (rows as SqlRow[]) : [];
}

/**
 * The rows of a driver's result, none for a statement without: mysql2 gives `[rows, fields]`
 * (`[ResultSetHeader]` without rows), node-postgres `{ rows }`, postgres.js an array of rows.
 */
export function rowsOf(dialect: SqlDialect, statement: BoundStatement, result: unknown): SqlRow[] {
  if (!statement.returnsRows) return [];
  if (dialect === 'postgres') return Array.isArray(result) ? (result as SqlRow[]) : pgRows(result);
  const first = Array.isArray(result) ? (result[0] as unknown) : undefined;
  return Array.isArray(first) ? (first as SqlRow[]) : [];
}
