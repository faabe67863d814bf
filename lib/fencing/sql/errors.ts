import { RedlockError } from '../../core/errors.js';
import { invalidFencingTokenMessage } from '../fencing-token.js';

/**
 * Base class of the SQL fencing helper's errors; a {@link RedlockError} like every error of this
 * library (`name` is the concrete class's name).
 */
export class FencedTableError extends RedlockError {
  constructor(message: string) {
    super(message);
  }
}

/**
 * A schema, table or column name that the database cannot take as a quoted identifier: empty,
 * holding a NUL character, longer than PostgreSQL's 63 bytes (it would silently truncate it and
 * address another name) or MariaDB's 64 characters, or (MariaDB) ending in a space or holding a
 * `?`, which client-side placeholder formatting (mysql2's `query`) would take for a value.
 */
export class InvalidIdentifierError extends FencedTableError {
  constructor(
    /** The name as it was given. */
    readonly identifier: string,
    /** Which option held it, e.g. `keyColumn`. */
    readonly option: string,
    reason: string,
  ) {
    super(`Invalid ${option} ${JSON.stringify(identifier)}: ${reason}.`);
  }
}

/** A fencing token that is not a positive safe integer (pass `lock.fencingToken`). */
export class InvalidFencingTokenError extends FencedTableError {
  constructor(readonly token: unknown) {
    super(invalidFencingTokenMessage(token));
  }
}

/** A key or column values that a fenced read or write cannot use. */
export class InvalidFencedValuesError extends FencedTableError {}
