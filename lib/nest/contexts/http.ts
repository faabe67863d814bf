import { ConflictException, ServiceUnavailableException, type ExecutionContext } from '@nestjs/common';
import { LockNotAcquiredError } from '../../core/index.js';
import type { LockErrorPayload, MappedLockError } from './payload.js';
import { retryAfterSeconds } from './retry-after.js';

/** Minimal response surface shared by Express (`setHeader`) and Fastify (`header`). */
interface HeaderSink {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
}

/**
 * A busy lock becomes 409 Conflict, a lost quorum or an engine shutting down 503 Service
 * Unavailable, each with a `Retry-After` header in whole seconds (at least 1) that agrees with the
 * body's `retryAfterMs` and message (see `retry-after.ts` for how the hint is chosen). The body is
 * the payload of the other contexts, `code` included, under Nest's usual `statusCode` and `error`:
 * the code tells a client a busy lock from the app's own 409 (and a lost quorum or a shutdown from
 * other 503s).
 */
export function toHttpException(
  err: MappedLockError,
  payload: LockErrorPayload,
  context: ExecutionContext,
): Error {
  setHeader(context, 'Retry-After', String(retryAfterSeconds(payload.retryAfterMs)));
  if (err instanceof LockNotAcquiredError) {
    return new ConflictException({ statusCode: 409, error: 'Conflict', ...payload }, { cause: err });
  }
  return new ServiceUnavailableException(
    { statusCode: 503, error: 'Service Unavailable', ...payload },
    { cause: err },
  );
}

function setHeader(context: ExecutionContext, name: string, value: string): void {
  const response = context.switchToHttp().getResponse<HeaderSink>();
  if (typeof response.setHeader === 'function') response.setHeader(name, value);
  else response.header?.(name, value);
}
