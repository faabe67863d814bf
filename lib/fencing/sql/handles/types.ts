/*
 * The handles a FencedTable accepts, as structural types: the few members the library detects
 * them by, declared here instead of imported, so that the type declarations of this package name
 * no ORM or driver and compile (skipLibCheck: false) in an application that has none of them.
 */
export type { PgQueryable } from './node-postgres.js';
import type { PgQueryable } from './node-postgres.js';

/** A mysql2 `Pool`, `Connection` or `PoolConnection`, from `mysql2/promise` or from `mysql2` (callback API). */
export interface Mysql2Handle {
  execute(sql: string, values?: never): unknown;
  query(sql: string, values?: never): unknown;
}

/** A TypeORM (0.3 or 1.x) `DataSource`, `EntityManager` or `QueryRunner` on PostgreSQL, MariaDB or MySQL. */
export interface TypeOrmHandle {
  query(query: string, parameters?: never): Promise<unknown>;
}

/** A Prisma 7 client, or the client its interactive `$transaction` hands over. */
export interface PrismaHandle {
  $queryRawUnsafe(query: string, ...values: never[]): PromiseLike<unknown>;
  $executeRawUnsafe(query: string, ...values: never[]): PromiseLike<unknown>;
}

/** A Drizzle `db` or transaction `tx` (node-postgres or mysql2 driver). */
export interface DrizzleHandle {
  execute(query: never): PromiseLike<unknown>;
  transaction(transaction: never, config?: never): Promise<unknown>;
}

/** A Knex instance or transaction (pg or mysql2 client). */
export interface KnexHandle {
  raw(sql: string, bindings?: never): PromiseLike<unknown>;
}

/** A Kysely instance or transaction (PostgreSQL or MySQL dialect). */
export interface KyselyHandle {
  executeQuery(query: never, queryId?: never): Promise<unknown>;
}

/**
 * Where a {@link FencedTable} runs its statements: the handle the application already has.
 * node-postgres `Pool` / `PoolClient` / `Client`; TypeORM `DataSource` / `EntityManager` /
 * `QueryRunner`; a Prisma client or its interactive-transaction client; a Drizzle `db` / `tx`;
 * Knex or its transaction; Kysely or its transaction; mysql2 `Pool` / `Connection`. A handle that
 * is a transaction makes the fenced statements part of it. Anything else is a `TypeError`.
 */
export type SqlHandle =
  PgQueryable | Mysql2Handle | TypeOrmHandle | PrismaHandle | DrizzleHandle | KnexHandle | KyselyHandle;
