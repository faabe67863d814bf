import { numbered } from '../statement.js';
import { pgRows, sqlRunner, type SqlRunner } from './runner.js';

/**
 * node-postgres's `Pool`, `PoolClient` and `Client` (and anything with the same `query`). Declared
 * here instead of imported from `pg`, so that neither the entry points nor their type declarations
 * load `pg` or need `@types/pg`. A `PoolClient` inside a transaction makes a fenced call part of it.
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** Whether `handle` has node-postgres's `query`. */
export function isPgQueryable(handle: object): handle is PgQueryable {
  return typeof (handle as Partial<PgQueryable>).query === 'function';
}

/** A runner over node-postgres. PostgreSQL's fenced operations are one statement each. */
export function nodePostgresRunner(handle: PgQueryable): SqlRunner {
  return sqlRunner('postgres', async (statement) => {
    const { text, values } = numbered(statement);
    return pgRows(await handle.query(text, values));
  });
}
