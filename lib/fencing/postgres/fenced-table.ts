import { isFencingToken } from '../fencing-token.js';
import { InvalidFencedValuesError, InvalidFencingTokenError } from './errors.js';
import { quoteIdentifier } from './identifiers.js';
import type { PgQueryable } from './queryable.js';
import {
  addTokenColumnSql,
  createTableSql,
  fencedReadSql,
  fencedWriteSql,
  lastTokenSql,
  type QuotedNames,
} from './statements.js';

/** Where a {@link FencedTable} keeps its rows. Names are used exactly as given (quoted). */
export interface FencedTableOptions {
  /** Table name, case-sensitive (`'accounts'`, not `'Accounts'`, for an unquoted `CREATE TABLE accounts`). */
  readonly table: string;
  /** Schema; default: the connection's `search_path`. */
  readonly schema?: string;
  /** Primary-key (or unique) column that identifies a row; default `'id'`. */
  readonly keyColumn?: string;
  /** `bigint NOT NULL DEFAULT 0` column that keeps the highest token seen; default `'fence_token'`. */
  readonly tokenColumn?: string;
}

/** Outcome of {@link FencedTable.read}. */
export interface PgFencedRead<Row> {
  /** False when a higher token has already read or written the row: this holder is stale. */
  readonly accepted: boolean;
  /**
   * The row after the read, without the token column. A row that did not exist has just been
   * created holding only its key: its other columns hold their defaults (NULL without one).
   */
  readonly row: Row;
  /** The highest token that has read or written the row, after the call (ours when accepted). */
  readonly lastToken: number;
}

/** Outcome of {@link FencedTable.write}. */
export interface PgFencedWrite {
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
  /** SQL type of the key column; default `'text'`. */
  readonly keyType?: string;
  /** The other columns, name to SQL type (trusted SQL from your code, never from your users). */
  readonly columns?: Readonly<Record<string, string>>;
}

/** Upper bound of cached write statements (one per distinct set of written columns). */
const MAX_CACHED_WRITES = 64;

/**
 * The protected-resource side of fencing for rows in PostgreSQL, the counterpart of the Redis
 * `FencedWriter`. Each row keeps, in its token column, the highest fencing token that has read or
 * written it; a read or write whose token is lower is refused and changes nothing. A holder that
 * was paused past its lease (GC, swap, a stopped VM) can therefore neither overwrite its
 * successor's work nor write back a value it computed before its successor read the row.
 *
 * The exact rule, per row: a read or write with token T is accepted iff T >= the row's token
 * (or the row does not exist yet), and then sets the row's token to T. Equal tokens are the same
 * lock grant (tokens are unique per grant), which is what lets a holder read, then write, then
 * write again. One statement per call, atomic under any isolation level.
 *
 * ```ts
 * import { FencedTable } from 'nest-quorum-lock/postgres';
 * const accounts = new FencedTable<{ balance: string }>({ table: 'accounts' });
 *
 * await locks.using(`account:${id}`, async (lock) => {
 *   const { accepted, row } = await accounts.read(pool, id, lock.fencingToken);
 *   if (!accepted) throw new Error('a newer holder has read this account');
 *   const { accepted: written } = await accounts.write(pool, id, lock.fencingToken, {
 *     balance: Number(row.balance) - amount,
 *   });
 * });
 * ```
 * @typeParam Row - the row's columns other than the token column, as node-postgres returns them
 *   (`bigint` and `numeric` come back as strings).
 */
export class FencedTable<Row extends object = Record<string, unknown>> {
  private readonly names: QuotedNames;
  private readonly keyColumn: string;
  private readonly tokenColumn: string;
  private readonly readSql: string;
  private readonly writes = new Map<string, string>();

  /** Checks and quotes every name; throws {@link InvalidIdentifierError} for one PostgreSQL cannot take. */
  constructor(options: FencedTableOptions) {
    this.keyColumn = options.keyColumn ?? 'id';
    this.tokenColumn = options.tokenColumn ?? 'fence_token';
    const table = quoteIdentifier(options.table, 'table');
    this.names = {
      table: options.schema === undefined ? table : `${quoteIdentifier(options.schema, 'schema')}.${table}`,
      key: quoteIdentifier(this.keyColumn, 'keyColumn'),
      token: quoteIdentifier(this.tokenColumn, 'tokenColumn'),
    };
    if (this.keyColumn === this.tokenColumn)
      throw new InvalidFencedValuesError(`keyColumn and tokenColumn must differ (both ${this.keyColumn}).`);
    this.readSql = fencedReadSql(this.names);
  }

  /** The table as it appears in the SQL, quoted (and schema-qualified when a schema was given). */
  get qualifiedName(): string {
    return this.names.table;
  }

  /**
   * Fenced read for a read-modify-write: records `token` as the row's newest reader (creating the
   * row when missing) and returns it. Refused, with the row as it is, when a higher token has
   * already read or written the row; then do not write, the lock has passed on.
   */
  async read(db: PgQueryable, key: unknown, token: number): Promise<PgFencedRead<Row>> {
    checkKey(key);
    checkToken(token);
    const { rows } = await db.query(this.readSql, [key, token]);
    const stored = rows[0] as Record<string, unknown> | undefined;
    if (!stored) throw new Error(`Fenced read of ${this.names.table} returned no row`); // cannot happen
    const { [this.tokenColumn]: last, ...row } = stored;
    const lastToken = Number(last);
    return { accepted: lastToken === token, row: row as Row, lastToken };
  }

  /**
   * Fenced write: sets `values` (and the token column to `token`) on the row, creating it when
   * missing, unless a higher token has read or written it. Entries whose value is `undefined` are
   * left out; the key and token columns cannot be among `values`.
   */
  async write(
    db: PgQueryable,
    key: unknown,
    token: number,
    values: Partial<Row> = {},
  ): Promise<PgFencedWrite> {
    checkKey(key);
    checkToken(token);
    const entries = Object.entries(values).filter(([, v]) => v !== undefined);
    for (const [column] of entries) {
      if (column === this.keyColumn || column === this.tokenColumn)
        throw new InvalidFencedValuesError(
          `A fenced write cannot set ${column}: the helper sets the ${column === this.keyColumn ? 'key' : 'token'} column itself.`,
        );
    }
    const columns = entries.map(([column]) => column);
    const { rowCount } = await db.query(this.writeSql(columns), [key, token, ...entries.map(([, v]) => v)]);
    if ((rowCount ?? 0) > 0) return { accepted: true, lastToken: token };
    const { rows } = await db.query(lastTokenSql(this.names), [key]);
    return { accepted: false, lastToken: Number((rows[0] as { token?: unknown } | undefined)?.token ?? 0) };
  }

  /** `CREATE TABLE IF NOT EXISTS` for this table, for a migration file or {@link ensureTable}. */
  createTableSql(spec: FencedTableColumns = {}): string {
    const columns = Object.entries(spec.columns ?? {}).map(
      ([name, type]) => [quoteIdentifier(name, 'column'), type] as [string, string],
    );
    return createTableSql(this.names, spec.keyType ?? 'text', columns);
  }

  /** `ALTER TABLE ... ADD COLUMN IF NOT EXISTS` for the token column, to fence an existing table. */
  addTokenColumnSql(): string {
    return addTokenColumnSql(this.names);
  }

  /**
   * Creates the table when missing ({@link createTableSql}), and adds the token column to an
   * existing one. Convenient in tests and samples; production schemas belong in migrations.
   */
  async ensureTable(db: PgQueryable, spec: FencedTableColumns = {}): Promise<void> {
    await db.query(this.createTableSql(spec));
    await db.query(this.addTokenColumnSql());
  }

  private writeSql(columns: string[]): string {
    const cacheKey = JSON.stringify(columns);
    let sql = this.writes.get(cacheKey);
    if (sql === undefined) {
      sql = fencedWriteSql(
        this.names,
        columns.map((c) => quoteIdentifier(c, 'column')),
      );
      if (this.writes.size >= MAX_CACHED_WRITES) this.writes.clear();
      this.writes.set(cacheKey, sql);
    }
    return sql;
  }
}

function checkToken(token: number): void {
  if (!isFencingToken(token)) throw new InvalidFencingTokenError(token);
}

function checkKey(key: unknown): void {
  if (key === undefined || key === null)
    throw new InvalidFencedValuesError(`A fenced row needs a key, got ${String(key)}.`);
}
