/**
 * The SQL the fenced table sends, built from names that are already quoted (identifiers.ts).
 * Values are always bind parameters: $1 the key, $2 the token, $3... the written columns.
 *
 * The rule, for one row: the token column holds the highest fencing token that has read or
 * written the row. A read or write with token T is accepted when T >= that value and raises it to
 * T; otherwise it is refused and changes nothing. Tokens are unique per lock grant, so an equal
 * token is the same holder (its own read, then its write); a lower one is a holder whose lock has
 * expired and whose successor has already touched the row.
 */
export interface QuotedNames {
  /** `"schema"."table"` or `"table"`. */
  readonly table: string;
  readonly key: string;
  readonly token: string;
}

/**
 * Fenced read: raise the token column to $2 unless it is higher, and return the row. A missing row
 * is created holding only the key and the token (its other columns take their defaults), because
 * the read must be recorded even then: otherwise an older holder, paused after its own read of the
 * missing row, could still create it after this reader's read and before this reader's write.
 * UPDATE first, INSERT only when it found nothing: an INSERT ... ON CONFLICT is checked against
 * NOT NULL constraints before the conflict is seen, so it would fail on an existing row of a table
 * with a NOT NULL column that has no default. The ON CONFLICT arm covers a row created by another
 * transaction after this statement's snapshot.
 */
export function fencedReadSql(n: QuotedNames): string {
  return [
    `WITH found AS (`,
    `  UPDATE ${n.table} SET ${n.token} = GREATEST(${n.token}, $2) WHERE ${n.key} = $1 RETURNING *`,
    `), created AS (`,
    `  INSERT INTO ${n.table} AS cur (${n.key}, ${n.token}) SELECT $1, $2 WHERE NOT EXISTS (SELECT FROM found)`,
    `  ON CONFLICT (${n.key}) DO UPDATE SET ${n.token} = GREATEST(cur.${n.token}, EXCLUDED.${n.token})`,
    `  RETURNING cur.*`,
    `)`,
    `SELECT * FROM found UNION ALL SELECT * FROM created`,
  ].join('\n');
}

/**
 * Fenced write of `columns` ($3...): applied, with the token column set to $2, only when the row's
 * token is <= $2 or the row does not exist yet; returns one row when applied, none when refused.
 * As in the read, UPDATE first and INSERT only for a row missing from the snapshot, so a refused
 * or partial write to an existing row never trips a NOT NULL check meant for new rows.
 */
export function fencedWriteSql(n: QuotedNames, columns: readonly string[]): string {
  const params = columns.map((_, i) => `$${i + 3}`);
  const set = columns.map((c, i) => `${c} = ${params[i]}, `).join('');
  const fromExcluded = columns.map((c) => `${c} = EXCLUDED.${c}, `).join('');
  const insertColumns = [n.key, n.token, ...columns].join(', ');
  return [
    `WITH updated AS (`,
    `  UPDATE ${n.table} SET ${set}${n.token} = $2`,
    `  WHERE ${n.key} = $1 AND COALESCE(${n.token}, 0) <= $2 RETURNING 1`,
    `), inserted AS (`,
    `  INSERT INTO ${n.table} AS cur (${insertColumns}) SELECT ${['$1', '$2', ...params].join(', ')}`,
    `  WHERE NOT EXISTS (SELECT FROM ${n.table} WHERE ${n.key} = $1)`,
    `  ON CONFLICT (${n.key}) DO UPDATE SET ${fromExcluded}${n.token} = EXCLUDED.${n.token}`,
    `  WHERE COALESCE(cur.${n.token}, 0) <= EXCLUDED.${n.token}`,
    `  RETURNING 1`,
    `)`,
    `SELECT 1 FROM updated UNION ALL SELECT 1 FROM inserted`,
  ].join('\n');
}

/** The row's current token, to report why a write was refused. */
export function lastTokenSql(n: QuotedNames): string {
  return `SELECT ${n.token} AS token FROM ${n.table} WHERE ${n.key} = $1`;
}

/**
 * CREATE TABLE IF NOT EXISTS with the key as primary key (ON CONFLICT needs a unique index on it)
 * and the token column `bigint NOT NULL DEFAULT 0` (0: no holder has touched the row yet).
 * `columns` maps quoted names to SQL types written by the application, never by its users.
 */
export function createTableSql(
  n: QuotedNames,
  keyType: string,
  columns: ReadonlyArray<[string, string]>,
): string {
  const lines = [
    `${n.key} ${keyType} PRIMARY KEY`,
    ...columns.map(([name, type]) => `${name} ${type}`),
    `${n.token} bigint NOT NULL DEFAULT 0`,
  ];
  return `CREATE TABLE IF NOT EXISTS ${n.table} (\n  ${lines.join(',\n  ')}\n)`;
}

/** Adds the token column to an existing table (a no-op when it is there). */
export function addTokenColumnSql(n: QuotedNames): string {
  return `ALTER TABLE ${n.table} ADD COLUMN IF NOT EXISTS ${n.token} bigint NOT NULL DEFAULT 0`;
}
