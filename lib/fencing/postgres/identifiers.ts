import { InvalidIdentifierError } from './errors.js';

/** PostgreSQL's NAMEDATALEN - 1: longer names are truncated, so they would address another name. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Quotes `name` as a PostgreSQL identifier, exactly as given (case kept, `"` doubled), after
 * checking that PostgreSQL would use it unchanged. Quoting rather than pattern-matching is what
 * makes any name safe to splice into SQL: inside double quotes only a doubled quote has meaning.
 */
export function quoteIdentifier(name: string, option: string): string {
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidIdentifierError(String(name), option, 'it must be a non-empty string');
  if (name.includes('\0')) throw new InvalidIdentifierError(name, option, 'it holds a NUL character');
  if (Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES)
    throw new InvalidIdentifierError(
      name,
      option,
      `it is longer than ${MAX_IDENTIFIER_BYTES} bytes and PostgreSQL would truncate it`,
    );
  return `"${name.replace(/"/g, '""')}"`;
}
