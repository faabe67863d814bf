import { optionalPeer } from './optional-peer.js';
import type { LockErrorPayload } from './payload.js';

const websockets = optionalPeer(() => import('@nestjs/websockets'));

/**
 * A `WsException` whose error is the payload: `BaseWsExceptionFilter` emits an object error as it
 * is, so the client's `exception` event carries exactly `{ code, message, retryAfterMs? }`.
 * As for any exception in a gateway, a message's ack callback is not called.
 */
export async function toWsException(payload: LockErrorPayload, cause: Error): Promise<Error> {
  const { WsException } = await websockets();
  const exception = new WsException({ ...payload });
  Object.defineProperty(exception, 'cause', { value: cause, configurable: true, writable: true });
  return exception;
}
