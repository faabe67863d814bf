/**
 * The fenced table's SQL for PostgreSQL, built from names that are already quoted (identifiers.ts).
 * Placeholders are the call's arguments: the key, the token, then the written columns' values.
 *
 * The rule, for one row: the token column holds the highest fencing token that has read or
 * written the row. A read or write with token T is accepted when T >= that value and raises it to
 * T; otherwise it is refused and changes nothing. Tokens are unique per lock grant, so an equal
 * token is the same holder (its own read, then its write); a lower one is a holder whose lock has
 * expired and whose successor has already touched the row.
 *
 * Each operation is one statement, so it needs no transaction of its own and is part of the
 * caller's when the handle is one.
 */
import type { SqlRow, SqlRunner } from '../handles/runner.js';
import { bind, ddl, KEY, sqlText, TOKEN, type Statement } from '../statement.js';
import {
  addTokenColumnSql,
  assignments,
  insertValues,
  StatementCache,
  type DialectTable,
  type DialectWrite,
  type QuotedNames,
} from './dialect.js';

const rows = sqlText(true);

/** The fenced table's operations on PostgreSQL: one statement each. */
export class PostgresTable implements DialectTable {
  readonly keyType = 'text';
  /**
   * Fenced read: raise the token column to the token unless it is higher, and return the row. A
   * missing row is created holding only the key and the token (its other columns take their
   * defaults), because the read must be recorded even then: otherwise an older holder, paused after
   * its own read of the missing row, could still create it after this reader's read and before this
   * reader's write. UPDATE first, INSERT only when it found nothing: an INSERT ... ON CONFLICT is
   * checked against NOT NULL constraints before the conflict is seen, so it would fail on an
   * existing row of a table with a NOT NULL column that has no default. The ON CONFLICT arm covers a
   * row created by another transaction after this statement's snapshot.
   */
  private readonly readSql: Statement;
  /** The row's current token, to report why a write was refused. */
  private readonly lastTokenSql: Statement;
  private readonly writes: StatementCache;

  constructor(readonly names: QuotedNames) {
    const n = names;
    this.readSql = rows`WITH found AS (
  UPDATE ${n.table} SET ${n.token} = GREATEST(${n.token}, ${TOKEN}) WHERE ${n.key} = ${KEY} RETURNING *
), created AS (
  INSERT INTO ${n.table} AS cur (${n.key}, ${n.token}) SELECT ${KEY}, ${TOKEN} WHERE NOT EXISTS (SELECT FROM found)
  ON CONFLICT (${n.key}) DO UPDATE SET ${n.token} = GREATEST(cur.${n.token}, EXCLUDED.${n.token})
  RETURNING cur.*
)
SELECT * FROM found UNION ALL SELECT * FROM created`;
    this.lastTokenSql = rows`SELECT ${n.token} AS token FROM ${n.table} WHERE ${n.key} = ${KEY}`;
    this.writes = new StatementCache((columns) => writeStatement(n, columns));
  }

  async read(runner: SqlRunner, key: unknown, token: number): Promise<SqlRow | undefined> {
    const [stored] = await runner.run(bind(this.readSql, [key, token]));
    return stored;
  }

  async write(
    runner: SqlRunner,
    columns: readonly string[],
    args: readonly unknown[],
  ): Promise<DialectWrite> {
    const applied = await runner.run(bind(this.writes.get(columns), args));
    if (applied.length > 0) return { accepted: true, lastToken: args[1] };
    const [row] = await runner.run(bind(this.lastTokenSql, [args[0]]));
    return { accepted: false, lastToken: row?.token ?? 0 };
  }

  addTokenColumn(runner: SqlRunner): Promise<unknown> {
    return runner.run(ddl(addTokenColumnSql(this.names)));
  }
}

/**
 * Fenced write of `columns`: applied, with the token column set to the token, only when the row's
 * token is <= it or the row does not exist yet; returns one row when applied, none when refused.
 * As in the read, UPDATE first and INSERT only for a row missing from the snapshot, so a refused
 * or partial write to an existing row never trips a NOT NULL check meant for new rows.
 */
function writeStatement(n: QuotedNames, columns: readonly string[]): Statement {
  const fromExcluded = columns.map((c) => `${c} = EXCLUDED.${c}, `).join('');
  const insertColumns = [n.key, n.token, ...columns].join(', ');
  return rows`WITH updated AS (
  UPDATE ${n.table} SET ${assignments(columns)}${n.token} = ${TOKEN}
  WHERE ${n.key} = ${KEY} AND COALESCE(${n.token}, 0) <= ${TOKEN} RETURNING 1
), inserted AS (
  INSERT INTO ${n.table} AS cur (${insertColumns}) SELECT ${KEY}, ${TOKEN}${insertValues(columns)}
  WHERE NOT EXISTS (SELECT FROM ${n.table} WHERE ${n.key} = ${KEY})
  ON CONFLICT (${n.key}) DO UPDATE SET ${fromExcluded}${n.token} = EXCLUDED.${n.token}
  WHERE COALESCE(cur.${n.token}, 0) <= EXCLUDED.${n.token}
  RETURNING 1
)
SELECT 1 FROM updated UNION ALL SELECT 1 FROM inserted`;
}
