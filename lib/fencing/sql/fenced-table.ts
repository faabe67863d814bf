import { isFencingToken } from '../fencing-token.js';
import { addTokenColumnSql, type DialectTable } from './dialects/dialect.js';
import { MysqlTable } from './dialects/mysql.js';
import { PostgresTable } from './dialects/postgres.js';
import { InvalidFencedValuesError, InvalidFencingTokenError } from './errors.js';
import { runnerOf } from './handles/detect.js';
import type { SqlHandle } from './handles/types.js';
import { checkIdentifier, quoterOf, type SqlDialect } from './identifiers.js';
import { ddl } from './statement.js';

/** Where a {@link FencedTable} keeps its rows. Names are used exactly as given (quoted). */
export interface FencedTableOptions {
  /** Table name, case-sensitive (`'accounts'`, not `'Accounts'`, for an unquoted `CREATE TABLE accounts`). */
  readonly table: string;
  /** Schema (MariaDB: database); default: the connection's `search_path` (MariaDB: its current database). */
  readonly schema?: string;
  /** Primary-key (or unique) column that identifies a row; default `'id'`. */
  readonly keyColumn?: string;
  /** `bigint NOT NULL DEFAULT 0` column that keeps the highest token seen; default `'fence_token'`. */
  readonly tokenColumn?: string;
  /**
   * The database's SQL: `'postgres'`, or `'mysql'` for MariaDB 10.11+ (tested) and MySQL 8
   * (untested). Default: learnt from the handle of each call.
   */
  readonly dialect?: SqlDialect;
}

/**
 * Outcome of {@link FencedTable.read}: accepted with the row, or refused without one (a holder
 * whose lock has passed on must not act on what it would read).
 */
export type FencedRead<Row> =
  | {
      /** This holder's token is the row's newest: go on and write. */
      readonly accepted: true;
      /**
       * The row after the read, without the token column, as the driver returns it. A row that did
       * not exist has just been created holding only its key: its other columns hold their defaults.
       */
      readonly row: Row;
      /** The row's token after the call: ours. */
      readonly lastToken: number;
    }
  | {
      /** A higher token has already read or written the row: this holder is stale. */
      readonly accepted: false;
      /** No row for a refused read. */
      readonly row?: undefined;
      /** The higher token that has read or written the row. */
      readonly lastToken: number;
    };

/** Outcome of {@link FencedTable.write}. */
export interface FencedWrite {
  /** True when the row was written (or created); false when a higher token had read or written it. */
  readonly accepted: boolean;
  /**
   * The row's token after the call: ours when accepted; when refused, the higher token read just
   * afterwards (0 if the row has been deleted since).
   */
  readonly lastToken: number;
}

/** Column definitions for {@link FencedTable.ensureTable}: name to SQL type, e.g. `'bigint NOT NULL DEFAULT 0'`. */
export interface FencedTableColumns {
  /** SQL type of the key column; default `'text'` (PostgreSQL), `'varchar(255)'` (MariaDB). */
  readonly keyType?: string;
  /** The other columns, name to SQL type (trusted SQL from your code, never from your users). */
  readonly columns?: Readonly<Record<string, string>>;
}

/**
 * The protected-resource side of fencing for rows in PostgreSQL or MariaDB, the counterpart of the
 * Redis `FencedWriter`. Each row keeps, in its token column, the highest fencing token that has
 * read or written it; a read or write whose token is lower is refused and changes nothing. A holder
 * that was paused past its lease (GC, swap, a stopped VM) can therefore neither overwrite its
 * successor's work nor write back a value it computed before its successor read the row.
 *
 * The exact rule, per row: a read or write with token T is accepted iff T >= the row's token
 * (or the row does not exist yet), and then sets the row's token to T. Equal tokens are the same
 * lock grant (tokens are unique per grant), which is what lets a holder read, then write, then
 * write again. On PostgreSQL one statement per call; on MariaDB one transaction per call (the
 * handle's own when it is a transaction).
 *
 * Each call takes the handle the application already has (see {@link SqlHandle}): a pool or a
 * client, an ORM's data source or manager, or a transaction of any of them, whose transaction the
 * fenced statements then join.
 *
 * ```ts
 * import { FencedTable } from 'nest-quorum-lock/sql';
 * const accounts = new FencedTable<{ balance: string }>({ table: 'accounts' });
 *
 * await locks.using(`account:${id}`, async (lock) => {
 *   const read = await accounts.read(dataSource, id, lock.fencingToken);
 *   if (!read.accepted) throw new Error('a newer holder has read this account');
 *   const { accepted } = await accounts.write(dataSource, id, lock.fencingToken, {
 *     balance: String(Number(read.row.balance) - amount),
 *   });
 * });
 * ```
 * @typeParam Row - the row's columns other than the token column, as the handle's driver returns
 *   them (node-postgres: `bigint` and `numeric` as strings; Prisma: `bigint` as `bigint`).
 */
export class FencedTable<Row extends object = Record<string, unknown>> {
  /** The key column's name, as given (default `'id'`). */
  protected readonly keyColumn: string;
  /** The token column's name, as given (default `'fence_token'`). */
  protected readonly tokenColumn: string;
  private readonly dialects = new Map<SqlDialect, DialectTable>();

  /**
   * Checks every name (for the given dialect, or the checks both share when it is learnt from the
   * handles); throws {@link InvalidIdentifierError} for one the database cannot take.
   */
  constructor(private readonly options: FencedTableOptions) {
    this.keyColumn = options.keyColumn ?? 'id';
    this.tokenColumn = options.tokenColumn ?? 'fence_token';
    if (options.dialect !== undefined && options.dialect !== 'postgres' && options.dialect !== 'mysql')
      throw new InvalidFencedValuesError(
        `dialect must be 'postgres' or 'mysql', got ${JSON.stringify(options.dialect)}.`,
      );
    checkIdentifier(options.table, 'table');
    if (options.schema !== undefined) checkIdentifier(options.schema, 'schema');
    checkIdentifier(this.keyColumn, 'keyColumn');
    checkIdentifier(this.tokenColumn, 'tokenColumn');
    if (options.dialect !== undefined) this.tableFor(options.dialect);
    if (this.keyColumn === this.tokenColumn)
      throw new InvalidFencedValuesError(`keyColumn and tokenColumn must differ (both ${this.keyColumn}).`);
  }

  /**
   * The table as it appears in the SQL, quoted (and schema-qualified when a schema was given), for
   * the table's dialect (PostgreSQL's quoting when none was given).
   */
  get qualifiedName(): string {
    return this.tableFor(this.options.dialect ?? 'postgres').names.table;
  }

  /**
   * Fenced read for a read-modify-write: records `token` as the row's newest reader (creating the
   * row when missing) and returns it. Refused, without the row, when a higher token has already
   * read or written it; then do not write, the lock has passed on.
   */
  async read(db: SqlHandle, key: unknown, token: number): Promise<FencedRead<Row>> {
    checkCall(key, token);
    const { [this.tokenColumn]: last, ...row } = await this.readRow(db, key, token);
    const lastToken = Number(last ?? 0);
    if (lastToken !== token) return { accepted: false, lastToken };
    return { accepted: true, row: row as Row, lastToken };
  }

  /**
   * Fenced write: sets `values` (and the token column to `token`) on the row, creating it when
   * missing, unless a higher token has read or written it. Entries whose value is `undefined` are
   * left out; the key and token columns cannot be among `values`.
   */
  async write(db: SqlHandle, key: unknown, token: number, values: Partial<Row> = {}): Promise<FencedWrite> {
    checkCall(key, token);
    const entries = Object.entries(values).filter(([, v]) => v !== undefined);
    for (const [column] of entries) {
      if (column === this.keyColumn || column === this.tokenColumn)
        throw new InvalidFencedValuesError(
          `A fenced write cannot set ${column}: the helper sets the ${column === this.keyColumn ? 'key' : 'token'} column itself.`,
        );
      checkIdentifier(column, 'column');
    }
    const { accepted, lastToken } = await this.writeRow(db, key, token, entries);
    return { accepted, lastToken: accepted ? token : Number(lastToken ?? 0) };
  }

  /**
   * The storage step of {@link read}, its arguments already checked: the row after the fenced read,
   * token column included (the read was accepted iff it holds `token`). The in-memory table of
   * `nest-quorum-lock/testing` overrides it.
   */
  protected async readRow(db: SqlHandle, key: unknown, token: number): Promise<Record<string, unknown>> {
    const runner = await runnerOf(db, this.options.dialect);
    const stored = await this.tableFor(runner.dialect).read(runner, key, token);
    if (!stored) throw new Error(`Fenced read of ${this.qualifiedName} returned no row`); // cannot happen
    return stored;
  }

  /**
   * The storage step of {@link write}, its arguments already checked (`entries`: column names as
   * given, and their values): whether the write was applied, and the row's token after it as the
   * driver returned it. The in-memory table of `nest-quorum-lock/testing` overrides it.
   */
  protected async writeRow(
    db: SqlHandle,
    key: unknown,
    token: number,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<{ readonly accepted: boolean; readonly lastToken: unknown }> {
    const runner = await runnerOf(db, this.options.dialect);
    const columns = entries.map(([column]) => quoterOf(runner.dialect)(column, 'column'));
    return this.tableFor(runner.dialect).write(runner, columns, [key, token, ...entries.map(([, v]) => v)]);
  }

  /**
   * `CREATE TABLE IF NOT EXISTS` for this table, for a migration file or {@link ensureTable}, in
   * `dialect` (default: the table's, else PostgreSQL).
   */
  createTableSql(
    spec: FencedTableColumns = {},
    dialect: SqlDialect = this.options.dialect ?? 'postgres',
  ): string {
    const quote = quoterOf(dialect);
    const columns = Object.entries(spec.columns ?? {}).map(
      ([name, type]) => `${quote(name, 'column')} ${type}`,
    );
    const { names, keyType } = this.tableFor(dialect);
    const lines = [
      `${names.key} ${spec.keyType ?? keyType} PRIMARY KEY`,
      ...columns,
      // 0: no holder has touched the row yet.
      `${names.token} bigint NOT NULL DEFAULT 0`,
    ];
    return `CREATE TABLE IF NOT EXISTS ${names.table} (\n  ${lines.join(',\n  ')}\n)`;
  }

  /**
   * `ALTER TABLE ... ADD COLUMN IF NOT EXISTS` for the token column, to fence an existing table
   * (MySQL 8 has no `IF NOT EXISTS` there: leave it out).
   */
  addTokenColumnSql(dialect: SqlDialect = this.options.dialect ?? 'postgres'): string {
    return addTokenColumnSql(this.tableFor(dialect).names);
  }

  /**
   * Creates the table when missing ({@link createTableSql}), and adds the token column to an
   * existing one. Convenient in tests and samples; production schemas belong in migrations (on
   * MariaDB, DDL commits the transaction the handle may have open).
   */
  async ensureTable(db: SqlHandle, spec: FencedTableColumns = {}): Promise<void> {
    const runner = await runnerOf(db, this.options.dialect);
    await runner.run(ddl(this.createTableSql(spec, runner.dialect)));
    await this.tableFor(runner.dialect).addTokenColumn(runner);
  }

  private tableFor(dialect: SqlDialect): DialectTable {
    let table = this.dialects.get(dialect);
    if (!table) {
      const quote = quoterOf(dialect);
      const { schema, table: name } = this.options;
      const quotedTable = quote(name, 'table');
      const names = {
        table: schema === undefined ? quotedTable : `${quote(schema, 'schema')}.${quotedTable}`,
        key: quote(this.keyColumn, 'keyColumn'),
        token: quote(this.tokenColumn, 'tokenColumn'),
        raw: { schema, table: name, token: this.tokenColumn },
      };
      table = dialect === 'postgres' ? new PostgresTable(names) : new MysqlTable(names);
      this.dialects.set(dialect, table);
    }
    return table;
  }
}

/** What a read and a write check first, before any SQL: the key, then the token. */
function checkCall(key: unknown, token: number): void {
  if (key === undefined || key === null)
    throw new InvalidFencedValuesError(`A fenced row needs a key, got ${String(key)}.`);
  if (!isFencingToken(token)) throw new InvalidFencingTokenError(token);
}
