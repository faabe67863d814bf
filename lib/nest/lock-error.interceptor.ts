import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { catchError, from, mergeMap, throwError, type Observable } from 'rxjs';
import { toGraphQLError } from './contexts/graphql.js';
import { toHttpException } from './contexts/http.js';
import {
  isMappedLockError,
  lockErrorPayload,
  type LockErrorPayload,
  type MappedLockError,
} from './contexts/payload.js';
import { toRpcException, toWsException } from './contexts/rpc-ws.js';

/**
 * Registered by RedlockModule for the whole application. Maps a `LockNotAcquiredError` or a
 * `QuorumUnavailableError` to what each execution context's exception handling understands:
 * - HTTP: 409 Conflict / 503 Service Unavailable with `Retry-After`;
 * - RPC (`@MessagePattern`, `@EventPattern`): an `RpcException` whose error is
 *   `{ code, message, retryAfterMs? }` (see {@link LockErrorPayload});
 * - WebSocket: a `WsException` with the same object;
 * - GraphQL: a `GraphQLError` with `extensions: { code, retryAfterMs? }`.
 *
 * Anything else the method throws, and any other context, passes through untouched. The exception
 * classes of RPC, WebSocket and GraphQL come from optional peers, imported on first use only.
 */
@Injectable()
export class LockErrorInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((err: unknown) => {
        if (!isMappedLockError(err)) return throwError(() => err);
        // getType() is a plain string: 'graphql' is not in Nest's core ContextType union.
        const type: string = context.getType();
        if (type === 'http') return throwError(() => toHttpException(err, context));
        const build = asyncMappers[type];
        if (!build) return throwError(() => err);
        // The optional peer's exception class is imported lazily, hence the async hop; if that
        // import fails the original lock error is rethrown rather than a module-loading error.
        return from(build(lockErrorPayload(err), err).catch(() => err)).pipe(
          mergeMap((mapped) => throwError(() => mapped)),
        );
      }),
    );
  }
}

/** Builds the context's exception class, which lives in an optional peer. */
type AsyncMapper = (payload: LockErrorPayload, cause: MappedLockError) => Promise<Error>;

const asyncMappers: Partial<Record<string, AsyncMapper>> = {
  rpc: toRpcException,
  ws: toWsException,
  graphql: toGraphQLError,
};
