import { EngineClosedError, LockNotAcquiredError, QuorumUnavailableError } from '../../core/index.js';
import { retryAfterMs as computeRetryAfterMs, retryAfterSeconds } from './retry-after.js';

/** The `code` of a lock error, as HTTP, RPC, WebSocket and GraphQL clients receive it. */
export type LockErrorCode = 'LOCK_NOT_ACQUIRED' | 'QUORUM_UNAVAILABLE' | 'ENGINE_CLOSED';

/**
 * What a client receives when a `@DistributedLock` method could not take its lock: the error of an
 * `RpcException` / `WsException`, the `extensions` of a `GraphQLError`, or the HTTP body (beside
 * Nest's `statusCode` and `error`).
 * `message` is written for clients (no lock key, no advice meant for developers) and agrees with
 * `retryAfterMs`, which is present for a busy lock and for a quorum that abstains for a known
 * time; absent when nodes are down. With the module option `exposeLockDetails: true`, `detail`
 * (the error's own message) and `resources` (the lock keys) are added.
 */
export interface LockErrorPayload {
  readonly code: LockErrorCode;
  readonly message: string;
  readonly retryAfterMs?: number;
  /** Only with `exposeLockDetails: true`: the lock error's message, meant for developers. */
  readonly detail?: string;
  /** Only with `exposeLockDetails: true`: the resources that could not be locked. */
  readonly resources?: readonly string[];
}

/** How {@link lockErrorPayload} builds a payload. */
export interface LockErrorPayloadOptions {
  /** Add `detail` and `resources` (default false: they are internal names). */
  readonly exposeDetails?: boolean;
  /** The retry hint, when the caller computed it already (default: from the error alone). */
  readonly retryAfterMs?: number;
}

/** The errors the interceptor maps; everything else a method throws passes through untouched. */
export type MappedLockError = LockNotAcquiredError | QuorumUnavailableError | EngineClosedError;

/** True for the errors the interceptor maps (the same check for every context). */
export function isMappedLockError(err: unknown): err is MappedLockError {
  return (
    err instanceof LockNotAcquiredError ||
    err instanceof QuorumUnavailableError ||
    err instanceof EngineClosedError
  );
}

/**
 * Text sent for a lost quorum while nodes are down (`Retry-After: 1`). The error's own message
 * names every node and why it failed: useful in the server's log, but internal topology that a
 * remote client (a browser over WebSocket) must not see.
 */
export const QUORUM_UNAVAILABLE_MESSAGE = 'Distributed lock quorum unavailable; retry shortly.';

/** The client-facing sentence, which agrees with the retry hint sent beside it. */
export function clientMessage(err: MappedLockError, retryAfterMs: number | undefined): string {
  const seconds = retryAfterSeconds(retryAfterMs);
  if (err instanceof LockNotAcquiredError) return `The resource is busy; retry in ${seconds} s.`;
  if (err instanceof EngineClosedError) return `This instance is shutting down; retry in ${seconds} s.`;
  return retryAfterMs === undefined
    ? QUORUM_UNAVAILABLE_MESSAGE
    : `Distributed lock quorum unavailable; retry in ${seconds} s.`;
}

/**
 * Builds the transport-neutral payload of a lock error. Keys are only ever `code`, `message` and,
 * when known, `retryAfterMs` (never an `undefined` value, so serialisers do not emit `null`), plus
 * `detail` and `resources` when `exposeDetails` is set.
 */
export function lockErrorPayload(
  err: MappedLockError,
  options: LockErrorPayloadOptions = {},
): LockErrorPayload {
  const retryAfterMs = options.retryAfterMs ?? computeRetryAfterMs(err);
  const message = clientMessage(err, retryAfterMs);
  return {
    code: err.code,
    message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(options.exposeDetails
      ? { detail: err.message, resources: 'resources' in err ? [...err.resources] : [] }
      : {}),
  };
}
