/**
 * `nest-quorum-lock/postgres`: fencing for data kept in PostgreSQL. Works with node-postgres
 * (`pg`, an optional peer dependency) without importing it: pass your `Pool` or `PoolClient`.
 */
export { FencedTable } from './fenced-table.js';
export type { FencedTableOptions, FencedTableColumns, PgFencedRead, PgFencedWrite } from './fenced-table.js';
export type { PgQueryable } from './queryable.js';
export {
  FencedTableError,
  InvalidFencedValuesError,
  InvalidFencingTokenError,
  InvalidIdentifierError,
} from './errors.js';
export { quoteIdentifier } from './identifiers.js';
