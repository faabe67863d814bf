import { InvalidIdentifierError } from './errors.js';

/** The SQL dialects the fenced table speaks: PostgreSQL, and MariaDB / MySQL. */
export type SqlDialect = 'postgres' | 'mysql';

/** PostgreSQL's NAMEDATALEN - 1: longer names are truncated, so they would address another name. */
const MAX_PG_IDENTIFIER_BYTES = 63;
/** MariaDB's and MySQL's limit for table and column names, in characters. */
const MAX_MYSQL_IDENTIFIER_CHARS = 64;

/** The checks every dialect shares: a non-empty string without NUL. */
export function checkIdentifier(name: string, option: string): void {
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidIdentifierError(String(name), option, 'it must be a non-empty string');
  if (name.includes('\0')) throw new InvalidIdentifierError(name, option, 'it holds a NUL character');
}

/**
 * Quotes `name` as a PostgreSQL identifier, exactly as given (case kept, `"` doubled), after
 * checking that PostgreSQL would use it unchanged. Quoting rather than pattern-matching is what
 * makes any name safe to splice into SQL: inside double quotes only a doubled quote has meaning.
 */
export function quoteIdentifier(name: string, option: string): string {
  checkIdentifier(name, option);
  const tooLong = `it is longer than ${MAX_PG_IDENTIFIER_BYTES} bytes and PostgreSQL would truncate it`;
  if (Buffer.byteLength(name, 'utf8') > MAX_PG_IDENTIFIER_BYTES)
    throw new InvalidIdentifierError(name, option, tooLong);
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Quotes `name` as a MariaDB / MySQL identifier (backticks, `` ` `` doubled). Besides the length,
 * MariaDB refuses names that end in a space; and a `?` is refused here because drivers that format
 * values into the statement on the client (mysql2's `query`, used by TypeORM and Drizzle) replace
 * every `?`, quoted or not.
 */
export function quoteMysqlIdentifier(name: string, option: string): string {
  checkIdentifier(name, option);
  const invalid = (reason: string) => new InvalidIdentifierError(name, option, reason);
  if ([...name].length > MAX_MYSQL_IDENTIFIER_CHARS)
    throw invalid(`it is longer than ${MAX_MYSQL_IDENTIFIER_CHARS} characters`);
  if (name.endsWith(' ')) throw invalid('MariaDB refuses names that end in a space');
  if (name.includes('?'))
    throw invalid("it holds a '?', which drivers that format values on the client take for a placeholder");
  return `\`${name.replace(/`/g, '``')}\``;
}

/** The quoting function of `dialect`. */
export function quoterOf(dialect: SqlDialect): (name: string, option: string) => string {
  return dialect === 'postgres' ? quoteIdentifier : quoteMysqlIdentifier;
}
