/** Base class of the PostgreSQL fencing helper's errors; `name` is the concrete class's name. */
export class FencedTableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * A schema, table or column name that PostgreSQL cannot take as a quoted identifier: empty,
 * longer than 63 bytes (PostgreSQL would silently truncate it and address another name), or
 * holding a NUL character.
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
    super(`A fencing token must be a positive safe integer (lock.fencingToken), got ${String(token)}.`);
  }
}

/** A key or column values that a fenced read or write cannot use. */
export class InvalidFencedValuesError extends FencedTableError {}
