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

/** The rows of a node-postgres result (`{ rows }`); none for anything else. */
export function pgRows(result: unknown): SqlRow[] {
  const rows = (result as { rows?: unknown } | null | undefined)?.rows;
  return Array.isArray(rows) ? (rows as SqlRow[]) : [];
}

/** The rows of a mysql2 result (`[rows, fields]`; `[ResultSetHeader]` for a statement without rows). */
export function mysqlRows(result: unknown): SqlRow[] {
  const first = Array.isArray(result) ? (result[0] as unknown) : undefined;
  return Array.isArray(first) ? (first as SqlRow[]) : [];
}
