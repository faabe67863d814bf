/**
 * `nest-quorum-lock/postgres`: fencing for data kept in PostgreSQL. The same `FencedTable` as
 * `nest-quorum-lock/sql` (which also speaks MariaDB and takes the handles of the common ORMs);
 * this entry point stays for the applications that import it. Works with node-postgres (`pg`, an
 * optional peer dependency) without importing it: pass your `Pool` or `PoolClient`.
 */
export { FencedTable } from '../sql/fenced-table.js';
export type { FencedTableOptions, FencedTableColumns, FencedRead, FencedWrite } from '../sql/fenced-table.js';
export type { PgFencedRead, PgFencedWrite } from './aliases.js';
export type { PgQueryable, SqlHandle } from '../sql/handles/types.js';
export {
  FencedTableError,
  InvalidFencedValuesError,
  InvalidFencingTokenError,
  InvalidIdentifierError,
} from '../sql/errors.js';
export { quoteIdentifier } from '../sql/identifiers.js';
