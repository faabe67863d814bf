import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, from, mergeMap, throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError, Redlock } from '../core/index.js';
import { toGraphQLError } from './contexts/graphql.js';
import { toHttpException } from './contexts/http.js';
import {
  isMappedLockError,
  lockErrorPayload,
  type LockErrorPayload,
  type MappedLockError,
} from './contexts/payload.js';
import { retryAfterMs } from './contexts/retry-after.js';
import { toRpcException, toWsException } from './contexts/rpc-ws.js';
import { raisedBy } from './raised-by.js';
import { MODULE_OPTIONS_TOKEN, type RedlockModuleOptions } from './redlock.module-definition.js';

/** Where the details of mapped lock errors are logged. */
const log = new Logger('DistributedLock');

/**
 * Registered by RedlockModule for the whole application. Maps a `LockNotAcquiredError` or a
 * `QuorumUnavailableError` to what each execution context's exception handling understands:
 * - HTTP: 409 Conflict / 503 Service Unavailable with `Retry-After`, the body carrying `code`;
 * - RPC (`@MessagePattern`, `@EventPattern`): an `RpcException` whose error is
 *   `{ code, message, retryAfterMs? }` (see {@link LockErrorPayload});
 * - WebSocket: a `WsException` with the same object;
 * - GraphQL: a `GraphQLError` with `extensions: { code, retryAfterMs? }`.
 *
 * What clients receive is written for clients: no lock key, no node names, no advice meant for
 * developers. Those details are logged, one line per mapped error: a busy lock at debug level
 * (contention is expected, and the client was told when to retry), a lost quorum at warn level.
 * The module option `exposeLockDetails: true` also sends them (`detail`, `resources`).
 *
 * Anything else the method throws, and any other context, passes through untouched. The exception
 * classes of RPC, WebSocket and GraphQL come from optional peers, imported on first use only.
 */
@Injectable()
export class LockErrorInterceptor implements NestInterceptor {
  private readonly exposeDetails: boolean;
  private readonly retryDelayMs: number | undefined;

  constructor(
    @Optional() @Inject(MODULE_OPTIONS_TOKEN) options?: RedlockModuleOptions,
    @Optional() redlock?: Redlock,
  ) {
    this.exposeDetails = options?.exposeLockDetails === true;
    this.retryDelayMs = redlock?.options.retryDelay;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((err: unknown) => {
        if (!isMappedLockError(err)) return throwError(() => err);
        const payload = lockErrorPayload(err, {
          exposeDetails: this.exposeDetails,
          retryAfterMs: retryAfterMs(err, this.retryDelayMs),
        });
        logDetails(err, payload, context);
        // getType() is a plain string: 'graphql' is not in Nest's core ContextType union.
        const type: string = context.getType();
        if (type === 'http') return throwError(() => toHttpException(err, payload, context));
        const build = asyncMappers[type];
        if (!build) return throwError(() => err);
        // The optional peer's exception class is imported lazily, hence the async hop; if that
        // import fails the original lock error is rethrown rather than a module-loading error.
        return from(build(payload, err).catch(() => err)).pipe(
          mergeMap((mapped) => throwError(() => mapped)),
        );
      }),
    );
  }
}

/** One line per mapped error, with what the client is not told. */
function logDetails(err: MappedLockError, payload: LockErrorPayload, context: ExecutionContext): void {
  const hint = payload.retryAfterMs === undefined ? 'no retry hint' : `retry hint ${payload.retryAfterMs} ms`;
  const line = `${whoRaised(err, context)}: ${err.code} (${hint}): ${err.message}`;
  if (err instanceof LockNotAcquiredError) log.debug(line);
  else log.warn(line);
}

/**
 * The decorated method whose lock failed, and the handler that reached it when that is another
 * one (a controller calling a service): `OrdersService.pay (via OrdersController.pay)`.
 */
function whoRaised(err: MappedLockError, context: ExecutionContext): string {
  const handler = handlerName(context);
  const raiser = raisedBy(err);
  return raiser === undefined || raiser === handler ? handler : `${raiser} (via ${handler})`;
}

function handlerName(context: ExecutionContext): string {
  const type = context.getClass?.()?.name;
  const method = context.getHandler?.()?.name;
  return type && method ? `${type}.${method}` : context.getType();
}

/** Builds the context's exception class, which lives in an optional peer. */
type AsyncMapper = (payload: LockErrorPayload, cause: MappedLockError) => Promise<Error>;

const asyncMappers: Partial<Record<string, AsyncMapper>> = {
  rpc: toRpcException,
  ws: toWsException,
  graphql: toGraphQLError,
};
