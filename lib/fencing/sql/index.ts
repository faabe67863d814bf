/**
 * `nest-quorum-lock/sql`: fencing for rows kept in PostgreSQL or MariaDB (MySQL 8: same dialect
 * family, untested), through the handle the application already has (node-postgres, mysql2,
 * TypeORM, Prisma, Drizzle, Knex, Kysely). Imports none of them: handles are recognised by their
 * members, and Drizzle's and Kysely's own packages are imported only when one of their handles is
 * used.
 */
export { FencedTable } from './fenced-table.js';
export type { FencedTableOptions, FencedTableColumns, FencedRead, FencedWrite } from './fenced-table.js';
export type { SqlDialect } from './identifiers.js';
export type {
  SqlHandle,
  PgQueryable,
  Mysql2Handle,
  TypeOrmHandle,
  PrismaHandle,
  DrizzleHandle,
  KnexHandle,
  KyselyHandle,
} from './handles/types.js';
export {
  FencedTableError,
  InvalidFencedValuesError,
  InvalidFencingTokenError,
  InvalidIdentifierError,
} from './errors.js';
export { quoteIdentifier, quoteMysqlIdentifier } from './identifiers.js';
