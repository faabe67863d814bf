/**
 * The fenced table's SQL for MariaDB 10.11+ (and MySQL 8, the same dialect family, untested here),
 * built from names already quoted with backticks. The rule is PostgreSQL's (dialects/postgres.ts);
 * the statements differ because this dialect has neither RETURNING nor a data-modifying WITH, and
 * because an affected-rows count cannot tell an accepted write of unchanged values from a refused
 * one (without the client's FOUND_ROWS flag the server counts changed rows, not matched ones, and
 * the flag is the application's connection setting). So each operation runs in one transaction:
 * lock the row (`SELECT ... FOR UPDATE`), decide from the token read there, then UPDATE; a missing
 * row is created with `INSERT ... ON DUPLICATE KEY UPDATE` (whose update arm applies the same rule,
 * for a row another transaction created meanwhile) and read back under the lock.
 *
 * UPDATE for existing rows, INSERT only for missing ones, as in PostgreSQL: an INSERT is checked
 * against NOT NULL columns without defaults before the duplicate key is seen (error 1364), so a
 * partial write to an existing row must not go through it. `VALUES(col)` rather than MySQL's
 * `AS new` row alias, which MariaDB does not have. Assignments in ON DUPLICATE KEY UPDATE run left
 * to right, each seeing the ones before: the token column is assigned last, after the columns
 * whose `IF` reads it.
 */
import type { SqlRow, SqlRunner } from '../handles/runner.js';
import { arg, bind, ddl, KEY, sqlText, TOKEN, type Statement } from '../statement.js';
import {
  assignments,
  insertValues,
  StatementCache,
  type DialectTable,
  type DialectWrite,
  type QuotedNames,
} from './dialect.js';

const rows = sqlText(true);
const text = sqlText(false);

/** Whether a table has a column: information_schema, as MySQL 8 has no ADD COLUMN IF NOT EXISTS. */
const countColumn = rows`SELECT COUNT(*) AS n FROM information_schema.columns
WHERE table_schema = COALESCE(${arg(0)}, DATABASE()) AND table_name = ${arg(1)} AND column_name = ${arg(2)}`;

/** The statements of a write of one set of columns. */
interface WriteStatements {
  /** Sets the columns and the token on a row already locked and checked. */
  readonly update: Statement;
  /** Creates the row, or (created meanwhile) updates it under the rule. */
  readonly insert: Statement;
}

/** The fenced table's operations on MariaDB: each one transaction of a few statements. */
export class MysqlTable implements DialectTable {
  readonly keyType = 'varchar(255)';
  private readonly lockRow: Statement;
  private readonly lockToken: Statement;
  private readonly raiseToken: Statement;
  private readonly createForRead: Statement;
  private readonly writes: StatementCache<WriteStatements>;

  constructor(readonly names: QuotedNames) {
    const n = names;
    this.lockRow = rows`SELECT * FROM ${n.table} WHERE ${n.key} = ${KEY} FOR UPDATE`;
    this.lockToken = rows`SELECT ${n.token} AS token FROM ${n.table} WHERE ${n.key} = ${KEY} FOR UPDATE`;
    this.raiseToken = text`UPDATE ${n.table} SET ${n.token} = ${TOKEN} WHERE ${n.key} = ${KEY}`;
    this.createForRead = text`INSERT INTO ${n.table} (${n.key}, ${n.token}) VALUES (${KEY}, ${TOKEN})
ON DUPLICATE KEY UPDATE ${n.token} = GREATEST(COALESCE(${n.token}, 0), VALUES(${n.token}))`;
    this.writes = new StatementCache((columns) => writeStatements(n, columns));
  }

  read(runner: SqlRunner, key: unknown, token: number): Promise<SqlRow | undefined> {
    return runner.transaction(async (tx) => {
      const [row] = await tx.run(bind(this.lockRow, [key]));
      if (row) {
        const last = Number(row[this.names.raw.token] ?? 0);
        if (last >= token) return row; // ours already (equal), or refused (higher)
        await tx.run(bind(this.raiseToken, [key, token]));
        return { ...row, [this.names.raw.token]: token };
      }
      await tx.run(bind(this.createForRead, [key, token]));
      const [created] = await tx.run(bind(this.lockRow, [key]));
      return created;
    });
  }

  write(runner: SqlRunner, columns: readonly string[], args: readonly unknown[]): Promise<DialectWrite> {
    const statements = this.writes.get(columns);
    const [key, token] = args;
    return runner.transaction(async (tx) => {
      const [row] = await tx.run(bind(this.lockToken, [key]));
      if (row) {
        if (Number(row.token ?? 0) > Number(token)) return { accepted: false, lastToken: row.token };
        await tx.run(bind(statements.update, args));
        return { accepted: true, lastToken: token };
      }
      await tx.run(bind(statements.insert, args));
      const [created] = await tx.run(bind(this.lockToken, [key]));
      const lastToken = created?.token ?? 0;
      return { accepted: Number(lastToken) === Number(token), lastToken };
    });
  }

  async addTokenColumn(runner: SqlRunner): Promise<void> {
    const { schema, table, token } = this.names.raw;
    const [found] = await runner.run(bind(countColumn, [schema ?? null, table, token]));
    if (Number(found?.n ?? 0) === 0)
      await runner.run(
        ddl(`ALTER TABLE ${this.names.table} ADD COLUMN ${this.names.token} bigint NOT NULL DEFAULT 0`),
      );
  }
}

/**
 * A write of `columns` (quoted): the UPDATE of a locked row whose token allowed it, and the INSERT
 * of a missing row, whose ON DUPLICATE KEY arm applies the rule to a row created meanwhile.
 */
function writeStatements(n: QuotedNames, columns: readonly string[]): WriteStatements {
  const insertColumns = [n.key, n.token, ...columns].join(', ');
  const allowed = `COALESCE(${n.token}, 0) <= VALUES(${n.token})`;
  const conditional = columns.map((c) => `${c} = IF(${allowed}, VALUES(${c}), ${c}), `).join('');
  return {
    update: text`UPDATE ${n.table} SET ${assignments(columns)}${n.token} = ${TOKEN} WHERE ${n.key} = ${KEY}`,
    insert: text`INSERT INTO ${n.table} (${insertColumns}) VALUES (${KEY}, ${TOKEN}${insertValues(columns)})
ON DUPLICATE KEY UPDATE ${conditional}${n.token} = GREATEST(COALESCE(${n.token}, 0), VALUES(${n.token}))`,
  };
}
