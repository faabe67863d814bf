import {
  FencedTable,
  type FencedTableColumns,
  type FencedTableOptions,
} from '../../fencing/sql/fenced-table.js';
import { InvalidFencedValuesError } from '../../fencing/sql/errors.js';
import type { SqlHandle } from '../../fencing/sql/handles/types.js';
import { checkIdentifier, quoterOf, type SqlDialect } from '../../fencing/sql/identifiers.js';

/** Options of an {@link InMemoryFencedTable}: the real table's, and what a new row holds. */
export interface InMemoryFencedTableOptions<
  Row extends object = Record<string, unknown>,
> extends FencedTableOptions {
  /**
   * The values a row gets when a fenced read or write creates it, for the columns the call does not
   * set: what the table's DDL gives them (`NULL`, or its `DEFAULT`). A column with none is absent
   * from the rows this table returns.
   */
  readonly columnDefaults?: Readonly<Partial<Row>>;
}

interface StoredRow {
  readonly values: Record<string, unknown>;
  token: number;
}

/**
 * A {@link FencedTable} whose rows are kept in memory, for unit tests: the real table's checks,
 * errors and result shapes (it is one: `instanceof FencedTable` holds), with the same rule per row.
 * A read or write with token T is accepted iff T >= the row's token (or the row does not exist yet)
 * and then sets it to T; a refused read returns no row; a read of a missing row creates it holding
 * its key (and {@link InMemoryFencedTableOptions.columnDefaults}).
 *
 * What a database would add and memory does not: the handle passed to `read` / `write` is not used
 * (pass what your test gives your service), values come back as written (no driver conversion),
 * and a write is not undone when the transaction around it rolls back. Give it to a service through
 * `RedlockTestingModule.forRoot({ fencedTables: [{ provide: ACCOUNTS, table: 'accounts' }] })`.
 *
 * @typeParam Row - the row's columns other than the token column.
 */
export class InMemoryFencedTable<Row extends object = Record<string, unknown>> extends FencedTable<Row> {
  private readonly rows = new Map<string, StoredRow>();
  private readonly defaults: Readonly<Record<string, unknown>>;
  /** Whose identifier rules a written column name must pass (the real table learns it from the handle). */
  private readonly dialect: SqlDialect;

  /**
   * Checks the options as the real table does (the same errors; names for PostgreSQL unless
   * `dialect` says otherwise), and `columnDefaults` as a write's values.
   */
  constructor(options: InMemoryFencedTableOptions<Row>) {
    super(options);
    this.dialect = options.dialect ?? 'postgres';
    // The names as the dialect quotes them (PostgreSQL's when none is given): the real table checks
    // them at its first call, when it learns the dialect from the handle; there is no handle here.
    void this.qualifiedName;
    this.defaults = this.checkedValues(options.columnDefaults ?? {});
  }

  /**
   * The row stored for `key` as `SELECT *` would show it (token column included), or `undefined`
   * when there is none. Rows are matched by `String(key)`, as a text key column would.
   */
  rowOf(key: unknown): Record<string, unknown> | undefined {
    const stored = this.rows.get(String(key));
    return stored && { ...stored.values, [this.tokenColumn]: stored.token };
  }

  /**
   * Sets a row's columns as the application's own setup would (a plain `INSERT` or `UPDATE`, no token
   * check), and its token column when `token` is given (a new row's starts at 0, below every token).
   */
  seed(key: unknown, values: Readonly<Partial<Row>>, token?: number): this {
    if (key === undefined || key === null)
      throw new InvalidFencedValuesError(`A fenced row needs a key, got ${String(key)}.`);
    const checked = this.checkedValues(values);
    const row = this.rowFor(key);
    Object.assign(row.values, checked);
    if (token !== undefined) row.token = token;
    return this;
  }

  /** Removes every row. */
  clear(): void {
    this.rows.clear();
  }

  /** Nothing to create in memory; checks the column names as the real table does. */
  override async ensureTable(_db: SqlHandle, spec: FencedTableColumns = {}): Promise<void> {
    this.createTableSql(spec);
  }

  protected override async readRow(
    _db: SqlHandle,
    key: unknown,
    token: number,
  ): Promise<Record<string, unknown>> {
    const row = this.rowFor(key);
    if (token >= row.token) row.token = token;
    return { ...row.values, [this.tokenColumn]: row.token };
  }

  protected override async writeRow(
    _db: SqlHandle,
    key: unknown,
    token: number,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<{ readonly accepted: boolean; readonly lastToken: unknown }> {
    const quote = quoterOf(this.dialect);
    for (const [column] of entries) quote(column, 'column');
    const existing = this.rows.get(String(key));
    if (existing && existing.token > token) return { accepted: false, lastToken: existing.token };
    const row = existing ?? this.rowFor(key);
    for (const [column, value] of entries) row.values[column] = value;
    row.token = token;
    return { accepted: true, lastToken: token };
  }

  /** Values as a write takes them: `undefined` left out, neither the key nor the token column. */
  private checkedValues(values: object): Record<string, unknown> {
    const entries = Object.entries(values).filter(([, v]) => v !== undefined);
    for (const [column] of entries) {
      if (column === this.keyColumn || column === this.tokenColumn)
        throw new InvalidFencedValuesError(
          `An in-memory fenced row cannot be given ${column}: the table sets its ${column === this.keyColumn ? 'key' : 'token'} column itself.`,
        );
      checkIdentifier(column, 'column');
      quoterOf(this.dialect)(column, 'column');
    }
    return Object.fromEntries(entries);
  }

  private rowFor(key: unknown): StoredRow {
    const row = this.rows.get(String(key)) ?? {
      values: { [this.keyColumn]: key, ...this.defaults },
      token: 0,
    };
    this.rows.set(String(key), row);
    return row;
  }
}
