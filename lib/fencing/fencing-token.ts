/*
 * The one check of a fencing token handed to a fenced store, shared by the Redis `FencedWriter`
 * and the PostgreSQL `FencedTable`, so that both refuse exactly the same values.
 */

/**
 * Whether `token` can be a fencing token: what `Lock.fencingToken` always is, a positive safe
 * integer. Anything else (0, a negative, a fraction, NaN, a string from a request, a number past
 * 2^53 that no longer compares exactly) would make the store's "highest token wins" rule unsound.
 */
export function isFencingToken(token: unknown): token is number {
  return typeof token === 'number' && Number.isSafeInteger(token) && token > 0;
}

/** Why `token` was refused, for either store's error. */
export function invalidFencingTokenMessage(token: unknown): string {
  return `A fencing token must be a positive safe integer (lock.fencingToken), got ${String(token)}.`;
}
