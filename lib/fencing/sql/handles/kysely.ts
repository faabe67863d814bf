import type { SqlDialect } from '../identifiers.js';
import { placeholders } from '../statement.js';
import { importOptional } from './lazy-import.js';
import { sqlRunner, type SqlRow, type SqlRunner } from './runner.js';

interface KyselyLike {
  executeQuery(query: unknown): Promise<{ rows: unknown[] }>;
  transaction(): {
    setIsolationLevel(level: 'read committed'): {
      execute<T>(fn: (trx: KyselyLike) => Promise<T>): Promise<T>;
    };
  };
  readonly isTransaction?: boolean;
}
/** The part of kysely the runner uses: a compiled query from text and parameters, and `sql` to learn the placeholders. */
interface KyselyModule {
  CompiledQuery: { raw(sql: string, parameters?: unknown[]): unknown };
  sql: (strings: TemplateStringsArray, ...values: unknown[]) => { compile(db: unknown): { sql: string } };
}

/** Whether `handle` is a Kysely instance or transaction. */
export function isKysely(handle: object): boolean {
  const h = handle as Record<string, unknown>;
  return typeof h.executeQuery === 'function' && typeof h.selectFrom === 'function';
}

/**
 * A runner over Kysely: `executeQuery` of a `CompiledQuery.raw` (the application's own kysely,
 * imported when first used). The dialect is learnt from how the instance compiles a parameter:
 * `$1` (PostgreSQL) or `?` (MySQL).
 */
export async function kyselyRunner(handle: object): Promise<SqlRunner | string> {
  const kysely = await importOptional<KyselyModule>('kysely', 'A Kysely handle');
  const mark = kysely.sql`${0}`.compile(handle).sql;
  const dialect: SqlDialect | undefined = mark === '$1' ? 'postgres' : mark === '?' ? 'mysql' : undefined;
  if (!dialect) return `a Kysely instance whose parameters look like ${JSON.stringify(mark)}`;
  return runnerFor(handle as KyselyLike, dialect, kysely);
}

function runnerFor(db: KyselyLike, dialect: SqlDialect, kysely: KyselyModule): SqlRunner {
  return sqlRunner(
    dialect,
    async (statement) => {
      const { text, values } = placeholders(statement, dialect);
      const { rows } = await db.executeQuery(kysely.CompiledQuery.raw(text, values));
      return statement.returnsRows ? (rows as SqlRow[]) : [];
    },
    (fn, self) =>
      db.isTransaction === true
        ? fn(self)
        : db
            .transaction()
            .setIsolationLevel('read committed')
            .execute((trx) => fn(runnerFor(trx, dialect, kysely))),
  );
}
