import { ConflictException, ServiceUnavailableException, type ExecutionContext } from '@nestjs/common';
import { LockNotAcquiredError } from '../../core/index.js';
import { QUORUM_UNAVAILABLE_MESSAGE, type MappedLockError } from './payload.js';

/** Minimal response surface shared by Express (`setHeader`) and Fastify (`header`). */
interface HeaderSink {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
}

/**
 * A busy lock becomes 409 Conflict, a lost quorum 503 Service Unavailable, both with a
 * `Retry-After` header in whole seconds (at least 1): the holder's remaining lease for 409; for 503
 * the time until a quorum votes again when the error knows it, else 1.
 */
export function toHttpException(err: MappedLockError, context: ExecutionContext): Error {
  if (err instanceof LockNotAcquiredError) {
    setHeader(context, 'Retry-After', String(err.retryAfterSeconds));
    return new ConflictException(
      { statusCode: 409, error: 'Conflict', message: err.message, retryAfterMs: err.retryAfterMs },
      { cause: err },
    );
  }
  setHeader(context, 'Retry-After', String(retryAfterSeconds(err.retryAfterMs)));
  return new ServiceUnavailableException(
    {
      statusCode: 503,
      error: 'Service Unavailable',
      message: QUORUM_UNAVAILABLE_MESSAGE,
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    },
    { cause: err },
  );
}

function retryAfterSeconds(retryAfterMs: number | undefined): number {
  return retryAfterMs === undefined ? 1 : Math.max(1, Math.ceil(retryAfterMs / 1000));
}

function setHeader(context: ExecutionContext, name: string, value: string): void {
  const response = context.switchToHttp().getResponse<HeaderSink>();
  if (typeof response.setHeader === 'function') response.setHeader(name, value);
  else response.header?.(name, value);
}
