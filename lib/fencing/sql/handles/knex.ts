import type { SqlDialect } from '../identifiers.js';
import { positional } from '../statement.js';
import { rowsOf, sqlRunner, type SqlRunner } from './runner.js';

interface KnexLike {
  raw(sql: string, bindings: unknown[]): PromiseLike<unknown>;
  transaction<T>(fn: (trx: KnexLike) => Promise<T>, config?: { isolationLevel?: string }): Promise<T>;
  readonly isTransaction?: boolean;
  readonly client?: { readonly dialect?: unknown; readonly driverName?: unknown };
}

/**
 * A runner when `handle` is a Knex instance or transaction of PostgreSQL or MySQL, what it is of
 * otherwise; undefined when it is not Knex.
 */
export function knexRunner(handle: object): SqlRunner | string | undefined {
  const h = handle as Partial<KnexLike>;
  if (typeof handle !== 'function' || typeof h.raw !== 'function' || typeof h.transaction !== 'function')
    return undefined;
  const dialect = h.client?.dialect;
  if (dialect === 'postgresql' || dialect === 'postgres') return runnerFor(h as KnexLike, 'postgres');
  if (dialect === 'mysql' || dialect === 'mysql2') return runnerFor(h as KnexLike, 'mysql');
  return `a Knex instance for ${String(dialect ?? h.client?.driverName)}`;
}

/**
 * A runner over Knex (pg and mysql2 clients): `raw` with positional bindings. Knex reads every
 * `?` of the text as a binding (and `??` as an identifier), so literal ones in quoted names are
 * escaped (`\?`), which Knex turns back into `?`.
 */
function runnerFor(knex: KnexLike, dialect: SqlDialect): SqlRunner {
  return sqlRunner(
    dialect,
    async (statement) => {
      const escaped = { ...statement, pieces: statement.pieces.map((p) => p.replace(/\?/g, '\\?')) };
      const { text, values } = positional(escaped);
      return rowsOf(dialect, statement, await knex.raw(text, values));
    },
    (fn, self) =>
      knex.isTransaction === true
        ? fn(self)
        : knex.transaction((trx) => fn(runnerFor(trx, dialect)), { isolationLevel: 'read committed' }),
  );
}
