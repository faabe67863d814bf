import { LockNotAcquiredError, QuorumUnavailableError } from '../../core/index.js';

/** The `code` of a lock error, as RPC, WebSocket and GraphQL clients receive it. */
export type LockErrorCode = 'LOCK_NOT_ACQUIRED' | 'QUORUM_UNAVAILABLE';

/**
 * What a non-HTTP client receives when a `@DistributedLock` method could not take its lock:
 * the error of an `RpcException` / `WsException`, or the `extensions` of a `GraphQLError`.
 * `retryAfterMs` is present for a busy lock (the holder's remaining lease) and for a quorum that
 * abstains for a known time; absent when nodes are down.
 */
export interface LockErrorPayload {
  readonly code: LockErrorCode;
  readonly message: string;
  readonly retryAfterMs?: number;
}

/** The errors the interceptor maps; everything else a method throws passes through untouched. */
export type MappedLockError = LockNotAcquiredError | QuorumUnavailableError;

/** True for the two errors the interceptor maps (the same check for every context). */
export function isMappedLockError(err: unknown): err is MappedLockError {
  return err instanceof LockNotAcquiredError || err instanceof QuorumUnavailableError;
}

/**
 * Text sent for a lost quorum. The error's own message names every node and why it failed: useful
 * in the server's log, but internal topology that a remote client (a browser over WebSocket) must
 * not see. HTTP's 503 has always sent this same sentence.
 */
export const QUORUM_UNAVAILABLE_MESSAGE = 'Distributed lock quorum unavailable; retry shortly.';

/**
 * Builds the transport-neutral payload of a lock error. Keys are only ever `code`, `message` and,
 * when known, `retryAfterMs` (never an `undefined` value, so serialisers do not emit `null`).
 */
export function lockErrorPayload(err: MappedLockError): LockErrorPayload {
  const message = err instanceof LockNotAcquiredError ? err.message : QUORUM_UNAVAILABLE_MESSAGE;
  return err.retryAfterMs === undefined
    ? { code: err.code, message }
    : { code: err.code, message, retryAfterMs: err.retryAfterMs };
}
