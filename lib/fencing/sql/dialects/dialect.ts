import type { SqlRow, SqlRunner } from '../handles/runner.js';
import { sqlText, value, type Statement } from '../statement.js';

/** A table's names, each already quoted for the dialect. */
export interface QuotedNames {
  /** The table, schema-qualified when a schema was given. */
  readonly table: string;
  readonly key: string;
  readonly token: string;
  /** The same names as given, unquoted. */
  readonly raw: { readonly schema?: string; readonly table: string; readonly token: string };
}

/** Outcome of a dialect's write: whether it was applied, and the row's token after it. */
export interface DialectWrite {
  readonly accepted: boolean;
  /** The token as the driver returned it (a number, a string or a bigint). */
  readonly lastToken: unknown;
}

/**
 * The fenced table's operations in one SQL dialect. `args` are the call's arguments: the key, the
 * token, then the values of `columns` (quoted names), in order.
 */
export interface DialectTable {
  readonly names: QuotedNames;
  /** The key column's SQL type when the application gives none. */
  readonly keyType: string;
  /** The row after a fenced read, token column included: the read was accepted iff it holds our token. */
  read(runner: SqlRunner, key: unknown, token: number): Promise<SqlRow | undefined>;
  write(runner: SqlRunner, columns: readonly string[], args: readonly unknown[]): Promise<DialectWrite>;
  /** Adds the token column to an existing table that lacks it (the end of `ensureTable`). */
  addTokenColumn(runner: SqlRunner): Promise<unknown>;
}

/** Adds the token column to an existing table (a no-op when it is there; MySQL 8 lacks the form). */
export function addTokenColumnSql(n: QuotedNames): string {
  return `ALTER TABLE ${n.table} ADD COLUMN IF NOT EXISTS ${n.token} bigint NOT NULL DEFAULT 0`;
}

const text = sqlText(false);

/** `column = value, ` for each written column: an UPDATE's SET, before the token's assignment. */
export const assignments = (columns: readonly string[]): Statement[] =>
  columns.map((c, i) => text`${c} = ${value(i)}, `);

/** `, value` for each written column: an INSERT's values, after the key and the token. */
export const insertValues = (columns: readonly string[]): Statement[] =>
  columns.map((_, i) => text`, ${value(i)}`);

/** Upper bound of cached write statements per table (one per distinct set of written columns). */
const MAX_CACHED_WRITES = 64;

/** A small cache of statements by written columns, emptied when it would grow past its bound. */
export class StatementCache<S = Statement> {
  private readonly entries = new Map<string, S>();

  constructor(private readonly build: (columns: readonly string[]) => S) {}

  get(columns: readonly string[]): S {
    const key = JSON.stringify(columns);
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = this.build(columns);
      if (this.entries.size >= MAX_CACHED_WRITES) this.entries.clear();
      this.entries.set(key, entry);
    }
    return entry;
  }
}
