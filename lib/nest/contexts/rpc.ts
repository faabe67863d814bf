import { optionalPeer } from './optional-peer.js';
import type { LockErrorPayload } from './payload.js';

const microservices = optionalPeer(() => import('@nestjs/microservices'));

/**
 * An `RpcException` whose error is the payload: `BaseRpcExceptionFilter` sends an object error to
 * the client as it is, so a `ClientProxy` caller's observable errors with exactly
 * `{ code, message, retryAfterMs? }`. The lock error stays reachable as `cause` for logging.
 */
export async function toRpcException(payload: LockErrorPayload, cause: Error): Promise<Error> {
  const { RpcException } = await microservices();
  const exception = new RpcException({ ...payload });
  Object.defineProperty(exception, 'cause', { value: cause, configurable: true, writable: true });
  return exception;
}
