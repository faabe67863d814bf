import { optionalPeer } from './optional-peer.js';
import type { LockErrorPayload } from './payload.js';

/** `RpcException` / `WsException`: the error object they are built with reaches the client as it is. */
type PayloadExceptionClass = new (error: object) => Error;

/**
 * The one builder of the RPC and WebSocket exceptions: the payload is the exception's error, and
 * the lock error stays reachable as `cause` for logging (neither class takes a `cause` option).
 */
function payloadException(
  load: () => Promise<PayloadExceptionClass>,
): (payload: LockErrorPayload, cause: Error) => Promise<Error> {
  return async (payload, cause) => {
    const Exception = await load();
    const exception = new Exception({ ...payload });
    Object.defineProperty(exception, 'cause', { value: cause, configurable: true, writable: true });
    return exception;
  };
}

const microservices = optionalPeer(() => import('@nestjs/microservices'));
const websockets = optionalPeer(() => import('@nestjs/websockets'));

/**
 * An `RpcException` whose error is the payload: `BaseRpcExceptionFilter` sends an object error to
 * the client as it is, so a `ClientProxy` caller's observable errors with exactly
 * `{ code, message, retryAfterMs? }`.
 */
export const toRpcException = payloadException(async () => (await microservices()).RpcException);

/**
 * A `WsException` whose error is the payload: `BaseWsExceptionFilter` emits an object error as it
 * is, so the client's `exception` event carries exactly `{ code, message, retryAfterMs? }`.
 * As for any exception in a gateway, a message's ack callback is not called.
 */
export const toWsException = payloadException(async () => (await websockets()).WsException);
