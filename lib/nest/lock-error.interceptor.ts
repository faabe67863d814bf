import {
  ConflictException,
  Injectable,
  ServiceUnavailableException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError, QuorumUnavailableError } from '../core/index.js';

/** Minimal response surface shared by Express (`setHeader`) and Fastify (`header`). */
interface HeaderSink {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
}

/**
 * Registered by RedlockModule for the whole application. In HTTP, a busy lock becomes
 * 409 Conflict with a `Retry-After` header (seconds until the holder's lease ends), and a lost
 * quorum becomes 503 Service Unavailable. Other contexts (RPC, WebSockets) get the typed error.
 */
@Injectable()
export class LockErrorInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    return next.handle().pipe(
      catchError((err: unknown) => {
        if (err instanceof LockNotAcquiredError) {
          setHeader(context, 'Retry-After', String(err.retryAfterSeconds));
          return throwError(
            () =>
              new ConflictException(
                { statusCode: 409, error: 'Conflict', message: err.message, retryAfterMs: err.retryAfterMs },
                { cause: err },
              ),
          );
        }
        if (err instanceof QuorumUnavailableError) {
          setHeader(context, 'Retry-After', '1');
          return throwError(
            () =>
              new ServiceUnavailableException(
                {
                  statusCode: 503,
                  error: 'Service Unavailable',
                  message: 'Distributed lock quorum unavailable; retry shortly.',
                },
                { cause: err },
              ),
          );
        }
        return throwError(() => err);
      }),
    );
  }
}

function setHeader(context: ExecutionContext, name: string, value: string): void {
  const response = context.switchToHttp().getResponse<HeaderSink>();
  if (typeof response.setHeader === 'function') response.setHeader(name, value);
  else response.header?.(name, value);
}
