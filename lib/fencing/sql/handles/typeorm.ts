import type { SqlDialect } from '../identifiers.js';
import { placeholders } from '../statement.js';
import { committed, sqlRunner, type SqlRow, type SqlRunner } from './runner.js';

/**
 * What the runner uses of TypeORM's `DataSource`, `EntityManager` and `QueryRunner` (0.3 and 1.x):
 * each has `query`, and the members of its own kind.
 */
interface TypeOrmLike {
  query(query: string, parameters?: unknown[]): Promise<unknown>;
  /** DataSource and EntityManager. */
  transaction<T>(isolation: 'READ COMMITTED', run: (manager: TypeOrmLike) => Promise<T>): Promise<T>;
  /** DataSource. */
  readonly options?: { readonly type?: unknown };
  /** EntityManager and QueryRunner: 1.x `dataSource`, 0.3 `connection`. */
  readonly dataSource?: { readonly options?: { readonly type?: unknown } };
  readonly connection?: { readonly options?: { readonly type?: unknown } };
  /** EntityManager. */
  readonly queryRunner?: { readonly isTransactionActive?: boolean };
  /** QueryRunner. */
  readonly isTransactionActive: boolean;
  startTransaction(isolation?: 'READ COMMITTED'): Promise<void>;
  commitTransaction(): Promise<void>;
  rollbackTransaction(): Promise<void>;
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

/**
 * A runner over TypeORM, for PostgreSQL or MariaDB / MySQL as the data source's `type` option says.
 * Statements go through the handle's `query` (for an EntityManager given to `transaction()`'s
 * callback, or a QueryRunner, that is the transaction's connection). Note that
 * `DataSource.query()` runs outside any transaction the application opened: hand over the
 * transaction's EntityManager to make a fenced call part of it.
 */
export function typeOrmRunner(handle: object, kind: Kind): SqlRunner | string {
  const h = handle as TypeOrmLike;
  const type = (kind === 'data-source' ? h.options : (h.dataSource ?? h.connection)?.options)?.type;
  if (type === 'postgres' || type === 'aurora-postgres' || type === 'cockroachdb')
    return runnerFor(h, kind, 'postgres');
  if (type === 'mysql' || type === 'mariadb' || type === 'aurora-mysql') return runnerFor(h, kind, 'mysql');
  return `a TypeORM ${kind} of another database (type ${String(type)})`;
}

function runnerFor(handle: TypeOrmLike, kind: Kind, dialect: SqlDialect): SqlRunner {
  return sqlRunner(
    dialect,
    async (statement) => {
      const { text, values } = placeholders(statement, dialect);
      const result = await handle.query(text, values);
      return statement.returnsRows && Array.isArray(result) ? (result as SqlRow[]) : [];
    },
    async (fn, self) => {
      if (kind === 'query-runner') {
        if (handle.isTransactionActive) return fn(self);
        await handle.startTransaction('READ COMMITTED');
        return committed(
          () => fn(self),
          () => handle.commitTransaction(),
          () => handle.rollbackTransaction(),
        );
      }
      if (kind === 'entity-manager' && handle.queryRunner?.isTransactionActive) return fn(self);
      return handle.transaction('READ COMMITTED', (manager) =>
        fn(runnerFor(manager, 'entity-manager', dialect)),
      );
    },
  );
}
