import type { SqlDialect } from '../identifiers.js';
import { numbered, positional, type BoundStatement } from '../statement.js';
import type { SqlRow, SqlRunner } from './runner.js';

/** What the runner uses of TypeORM's `DataSource`, `EntityManager` and `QueryRunner` (0.3 and 1.x). */
interface Queries {
  query(query: string, parameters?: unknown[]): Promise<unknown>;
}
interface Options {
  readonly options?: { readonly type?: unknown };
}
interface DataSource extends Queries, Options {
  transaction<T>(isolation: 'READ COMMITTED', run: (manager: EntityManager) => Promise<T>): Promise<T>;
  createQueryRunner(): unknown;
}
interface EntityManager extends Queries {
  transaction<T>(isolation: 'READ COMMITTED', run: (manager: EntityManager) => Promise<T>): Promise<T>;
  getRepository(target: unknown): unknown;
  readonly queryRunner?: { readonly isTransactionActive?: boolean };
  /** 1.x */
  readonly dataSource?: Options;
  /** 0.3 */
  readonly connection?: Options;
}
interface QueryRunner extends Queries {
  readonly isTransactionActive: boolean;
  startTransaction(isolation?: 'READ COMMITTED'): Promise<void>;
  commitTransaction(): Promise<void>;
  rollbackTransaction(): Promise<void>;
  readonly dataSource?: Options;
  readonly connection?: Options;
}

type Kind = 'data-source' | 'entity-manager' | 'query-runner';

/** Which TypeORM object `handle` is, if it is one. */
export function typeOrmKind(handle: object): Kind | undefined {
  const h = handle as Record<string, unknown>;
  if (typeof h.query !== 'function') return undefined;
  if (typeof h.isTransactionActive === 'boolean' && typeof h.startTransaction === 'function')
    return 'query-runner';
  if (typeof h.getRepository === 'function' && typeof h.transaction === 'function') {
    if (typeof h.createQueryRunner === 'function' && typeof h.options === 'object') return 'data-source';
    return 'entity-manager';
  }
  return undefined;
}

/** PostgreSQL or MariaDB / MySQL, from the data source's `type` option; undefined for other databases. */
function dialectOf(handle: DataSource | EntityManager | QueryRunner, kind: Kind): SqlDialect | undefined {
  const options =
    kind === 'data-source'
      ? (handle as DataSource).options
      : ((handle as EntityManager).dataSource ?? (handle as EntityManager).connection)?.options;
  const type = options?.type;
  if (type === 'postgres' || type === 'aurora-postgres' || type === 'cockroachdb') return 'postgres';
  if (type === 'mysql' || type === 'mariadb' || type === 'aurora-mysql') return 'mysql';
  return undefined;
}

/**
 * A runner over TypeORM. Statements go through the handle's `query` (for an EntityManager given to
 * `transaction()`'s callback, or a QueryRunner, that is the transaction's connection). Note that
 * `DataSource.query()` runs outside any transaction the application opened: hand over the
 * transaction's EntityManager to make a fenced call part of it.
 */
export function typeOrmRunner(handle: object, kind: Kind): SqlRunner | string {
  const dialect = dialectOf(handle as DataSource, kind);
  if (!dialect) return `a TypeORM ${kind} of another database (type ${String(typeOrmType(handle, kind))})`;
  return runnerFor(handle as Queries, kind, dialect);
}

function typeOrmType(handle: object, kind: Kind): unknown {
  const h = handle as EntityManager & Options;
  return (kind === 'data-source' ? h.options : (h.dataSource ?? h.connection)?.options)?.type;
}

function runnerFor(handle: Queries, kind: Kind, dialect: SqlDialect): SqlRunner {
  const runner: SqlRunner = {
    dialect,
    run: (statement) => query(handle, dialect, statement),
    async transaction(fn) {
      if (kind === 'query-runner') {
        const qr = handle as QueryRunner;
        if (qr.isTransactionActive) return fn(runner);
        await qr.startTransaction('READ COMMITTED');
        try {
          const result = await fn(runner);
          await qr.commitTransaction();
          return result;
        } catch (err) {
          await qr.rollbackTransaction().catch(() => undefined);
          throw err;
        }
      }
      if (kind === 'entity-manager' && (handle as EntityManager).queryRunner?.isTransactionActive)
        return fn(runner);
      return (handle as EntityManager | DataSource).transaction('READ COMMITTED', (manager) =>
        fn(runnerFor(manager, 'entity-manager', dialect)),
      );
    },
  };
  return runner;
}

async function query(handle: Queries, dialect: SqlDialect, statement: BoundStatement): Promise<SqlRow[]> {
  const { text, values } = dialect === 'postgres' ? numbered(statement) : positional(statement);
  const result = await handle.query(text, values);
  return statement.returnsRows && Array.isArray(result) ? (result as SqlRow[]) : [];
}
