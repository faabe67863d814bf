import type { SqlDialect } from '../identifiers.js';
import type { BoundStatement } from '../statement.js';
import { importOptional } from './lazy-import.js';
import { rowsOf, sqlRunner, type SqlRunner } from './runner.js';

/** The part of drizzle-orm's `sql` the runner uses: raw text and parameters, joined. */
interface DrizzleSql {
  raw(text: string): unknown;
  param(value: unknown): unknown;
  join(chunks: unknown[]): unknown;
}
interface DrizzleDb {
  execute(query: unknown): PromiseLike<unknown>;
  transaction<T>(fn: (tx: DrizzleDb) => Promise<T>, config?: { isolationLevel?: string }): Promise<T>;
}

/** Drizzle marks each class with its kind under this symbol; `is()` walks the same chain. */
const ENTITY_KIND = Symbol.for('drizzle:entityKind');

/** The entity kinds of `handle`'s class and its ancestors (e.g. NodePgDatabase, PgDatabase). */
function entityKinds(handle: object): string[] {
  const kinds: string[] = [];
  for (let cls = (handle as { constructor?: unknown }).constructor; typeof cls === 'function';) {
    const kind = (cls as unknown as Record<symbol, unknown>)[ENTITY_KIND];
    if (typeof kind === 'string' && !kinds.includes(kind)) kinds.push(kind);
    cls = Object.getPrototypeOf(cls);
  }
  return kinds;
}

/**
 * A runner when `handle` is a Drizzle database or transaction of PostgreSQL or MySQL, what it is
 * otherwise; undefined when it is not Drizzle.
 */
export function drizzleRunner(handle: object): SqlRunner | string | undefined {
  const kinds = entityKinds(handle);
  if (kinds.length === 0) return undefined;
  const transaction = kinds.includes('PgTransaction') || kinds.includes('MySqlTransaction');
  if (kinds.includes('PgDatabase')) return runnerFor(handle as DrizzleDb, 'postgres', transaction);
  if (kinds.includes('MySqlDatabase')) return runnerFor(handle as DrizzleDb, 'mysql', transaction);
  return `a Drizzle ${kinds[0]}`;
}

/**
 * A runner over a Drizzle `db` or `tx` (node-postgres and mysql2 drivers): `execute` with an `sql`
 * object of the application's own drizzle-orm, built from raw text and `sql.param` values, so
 * Drizzle writes the placeholders and binds the values.
 */
function runnerFor(db: DrizzleDb, dialect: SqlDialect, inTransaction: boolean): SqlRunner {
  return sqlRunner(
    dialect,
    async (statement) => {
      const { sql } = await importOptional<{ sql: DrizzleSql }>('drizzle-orm', 'A Drizzle handle');
      return rowsOf(dialect, statement, await db.execute(build(sql, statement)));
    },
    (fn, self) =>
      inTransaction
        ? fn(self)
        : db.transaction((tx) => fn(runnerFor(tx, dialect, true)), { isolationLevel: 'read committed' }),
  );
}

function build(sql: DrizzleSql, s: BoundStatement): unknown {
  const chunks: unknown[] = [sql.raw(s.pieces[0]!)];
  s.args.forEach((arg, i) => chunks.push(sql.param(s.values[arg]), sql.raw(s.pieces[i + 1]!)));
  return sql.join(chunks);
}
