/**
 * `nest-quorum-lock/postgres`: fencing for data kept in PostgreSQL. The same `FencedTable` as
 * `nest-quorum-lock/sql` (which also speaks MariaDB and takes the handles of the common ORMs);
 * this entry point stays for the applications that import it. Works with node-postgres (`pg`, an
 * optional peer dependency) without importing it: pass your `Pool` or `PoolClient`.
 */
import type { FencedRead, FencedWrite } from '../sql/fenced-table.js';

export { FencedTable } from '../sql/fenced-table.js';
export type { FencedTableOptions, FencedTableColumns, FencedRead, FencedWrite } from '../sql/fenced-table.js';
export type { PgQueryable, SqlHandle } from '../sql/handles/types.js';
export {
  FencedTableError,
  InvalidFencedValuesError,
  InvalidFencingTokenError,
  InvalidIdentifierError,
} from '../sql/errors.js';
export { quoteIdentifier } from '../sql/identifiers.js';

/** The outcome of a fenced read. @deprecated Use {@link FencedRead} (the same type). */
export type PgFencedRead<Row> = FencedRead<Row>;
/** The outcome of a fenced write. @deprecated Use {@link FencedWrite} (the same type). */
export type PgFencedWrite = FencedWrite;
