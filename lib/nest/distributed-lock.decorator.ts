import { Inject, Logger } from '@nestjs/common';
import { catchError, EMPTY, Observable, throwError } from 'rxjs';
import {
  EngineClosedError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  RedlockOptionsError,
  type LockOptions,
} from '../core/index.js';
import { callLockedAsync, callLockedObservable } from './locked-call.js';
import { compileLockKey, type LockKey } from './lock-key.js';
import { LockService } from './lock.service.js';
import { noteRaisedBy } from './raised-by.js';
import { noteTypicalHold, TypicalHold } from './typical-hold.js';
import { UnavailableEpisode } from './unavailable-episode.js';
import {
  DISTRIBUTED_LOCK_METADATA,
  FENCING_TOKEN_PARAM,
  LOCK_SERVICE_PROPERTY,
  LOCK_SIGNAL_PARAM,
} from './redlock.constants.js';

/**
 * Per-method options of `@DistributedLock` (module defaults apply to what is left out). `onBusy`:
 * what a call does when the lock is still busy after `wait`: `'throw'` (default) raises
 * `LockNotAcquiredError` (HTTP 409); `'skip'` does not run the method and resolves `undefined` (an
 * Observable method completes empty), logged at debug level: for scheduled jobs that only one
 * instance should run, with `holdAtLeast` so that a short job is not run twice per tick. A
 * `'skip'` method is also skipped while the lock quorum is unavailable (no instance could run it):
 * one warning when that starts, with the reason, and one line when a call reaches the quorum
 * again, instead of an error with a stack trace every tick; and, at debug level, when the engine
 * shuts down before its acquire ends.
 */
export type DistributedLockOptions = Omit<LockOptions, 'signal'>;

/** Where skipped calls are logged (busy: debug level; an unavailable quorum: once per episode). */
const skipLog = new Logger('DistributedLock');

/** What `@DistributedLock` records on the method, readable with `Reflect.getMetadata`. */
export interface DistributedLockMetadata {
  readonly key: LockKey;
  readonly options: DistributedLockOptions;
}

type AnyMethod = (...args: never[]) => unknown;

/**
 * Methods the decorator accepts: taking the lock is asynchronous, so the method must return a
 * Promise or an Observable (a synchronous method would silently change its return type).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type LockableMethod = (...args: any[]) => Promise<unknown> | Observable<unknown>;

/**
 * With `onBusy: 'skip'` a busy lock resolves the call with `undefined` without running the method:
 * a method declared `Promise<number>` would hand `undefined` to callers typed for a number. Such a
 * declaration fails to compile, with this message; `Promise<number | undefined>` (or
 * `Promise<void>`) compiles. An Observable method completes empty instead, which its type allows.
 */
type SkipResult<M> = M extends (...args: never[]) => Promise<infer T>
  ? undefined extends T
    ? unknown
    : {
        "onBusy: 'skip' resolves undefined when the lock is busy: declare the method's result as Promise<T | undefined>": true;
      }
  : unknown;

/** The method decorator `@DistributedLock` returns. */
export type DistributedLockDecorator = <M extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

/** The method decorator `@DistributedLock(key, { onBusy: 'skip' })` returns: see {@link SkipResult}. */
export type SkippingLockDecorator = <M extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M> & SkipResult<M>,
) => void;

/** Classes whose LockService property injection is registered (once per class, not per method). */
const injected = new WeakSet<object>();

/**
 * Runs the method under a distributed lock: acquired on a majority of nodes before the call,
 * auto-extended while it runs (watchdog, bounded by `maxHold`), released afterwards. The fencing
 * token and the lock's AbortSignal reach the method through `@FencingToken()` / `@LockSignal()`.
 *
 * Works on controller route handlers, in any order with `@Get`/`@Post`/`@UseGuards` (all metadata
 * is kept), and on methods of any provider. A method declared to return an `Observable` holds the
 * lock until the stream completes, errors or is unsubscribed. The method's own errors pass through
 * unchanged; a busy lock raises `LockNotAcquiredError` (HTTP 409 with Retry-After), or skips the call
 * with `onBusy: 'skip'` (then the method must be declared to resolve `T | undefined`).
 *
 * @param key a resource, several, a template or a function of the arguments. Template placeholders
 * are the arguments by position (`'order:{0}'`) and paths into one (`'user:{1.id}'`); `{{` and `}}`
 * are literal braces; any other brace (`'order:{id}'`) is a `RedlockOptionsError` when the
 * decorator is applied.
 *
 * ```ts
 * @Post(':id/withdraw')
 * @DistributedLock('account:{0}', { wait: 2000 })
 * withdraw(@Param('id') id: string, @Body() body: WithdrawDto, @FencingToken() token: number) { ... }
 * ```
 */
export function DistributedLock(
  key: LockKey,
  options: DistributedLockOptions & { onBusy: 'skip' },
): SkippingLockDecorator;
export function DistributedLock(key: LockKey, options?: DistributedLockOptions): DistributedLockDecorator;
export function DistributedLock(
  key: LockKey,
  options: DistributedLockOptions = {},
): DistributedLockDecorator {
  return (target, propertyKey, descriptor) => {
    const original = descriptor.value as unknown;
    const where = `${target.constructor.name}.${String(propertyKey)}`;
    if (typeof original !== 'function') {
      throw new TypeError(`@DistributedLock() belongs on a method; ${where} is not one`);
    }
    // Property injection registered now: a module without RedlockModule fails at bootstrap.
    if (!injected.has(target)) {
      injected.add(target);
      Inject(LockService)(target, LOCK_SERVICE_PROPERTY);
    }

    const resolveKeys = compileLockKey(key, where);
    const tokenIndex = Reflect.getMetadata(FENCING_TOKEN_PARAM, target, propertyKey) as number | undefined;
    const signalIndex = Reflect.getMetadata(LOCK_SIGNAL_PARAM, target, propertyKey) as number | undefined;
    const returnsObservable = Reflect.getMetadata('design:returntype', target, propertyKey) === Observable;
    const { onBusy = 'throw', ...ownOptions } = options;
    const lockOptions = { holder: where, ...ownOptions };
    if (onBusy !== 'throw' && onBusy !== 'skip') {
      // A typo must not quietly turn a scheduled job's 'skip' into errors every tick.
      throw new RedlockOptionsError(
        `@DistributedLock onBusy on ${where}`,
        `got ${String(onBusy)}`,
        "Use 'throw' or 'skip'.",
      );
    }
    if (lockOptions.mode === 'read' && Array.isArray(key) && key.length > 1) {
      // Fixed keys are known now: a read lock guards one key (resources from a function: at the call).
      throw new RedlockOptionsError(
        `@DistributedLock mode on ${where}`,
        `'read' with ${key.length} keys`,
        'A read lock guards one key: use one key, or a write lock for several.',
      );
    }
    const skipWhenBusy = onBusy === 'skip';
    // How long this method holds its lock: the retry hint of a client it turns away (retry-after.ts).
    const typicalHold = new TypicalHold();
    const busyHint = (err: unknown, ran: boolean): void => {
      if (ran) return;
      noteRaisedBy(err, where);
      if (err instanceof LockNotAcquiredError) noteTypicalHold(err, typicalHold);
    };
    // Only our own acquire is skipped: a lock error the method itself raised passes.
    const episode = skipWhenBusy ? new UnavailableEpisode(where, skipLog) : undefined;
    const skipped = <T>(err: unknown, resources: string[], ran: boolean, value: T): T => {
      if (ran) throw err;
      if (err instanceof QuorumUnavailableError) {
        episode!.skip(err);
        return value;
      }
      if (err instanceof EngineClosedError) {
        // A tick that fires while the application shuts down: not run, and not an error.
        skipLog.debug(`${where} skipped: the lock engine is shutting down (onBusy: 'skip')`);
        return value;
      }
      if (!(err instanceof LockNotAcquiredError)) throw err;
      episode!.reached();
      skipLog.debug(`${where} skipped: ${resources.join(', ')} is locked elsewhere (onBusy: 'skip')`);
      return value;
    };

    const wrapper = new Proxy(original as AnyMethod, {
      apply(method, self: Record<symbol, LockService | undefined> | undefined, args: unknown[]) {
        const service = self?.[LOCK_SERVICE_PROPERTY];
        if (!service) {
          throw new TypeError(
            `${where} is decorated with @DistributedLock, but its instance was not created by NestJS ` +
              '(or RedlockModule is missing): get it from the DI container instead of calling `new`.',
          );
        }
        let resources: string[];
        try {
          resources = resolveKeys(args);
        } catch (err) {
          // Report a bad key the way the method reports errors: as a rejection or a stream error.
          return returnsObservable ? throwError(() => err) : Promise.reject(err);
        }
        let ran = false;
        const invoke = (lock: { fencingToken: number; signal: AbortSignal }) => {
          ran = true;
          episode?.reached();
          const callArgs = [...args];
          if (tokenIndex !== undefined) callArgs[tokenIndex] = lock.fencingToken;
          if (signalIndex !== undefined) callArgs[signalIndex] = lock.signal;
          const started = performance.now();
          const result: unknown = Reflect.apply(method, self, callArgs);
          if (result instanceof Promise) {
            const ended = () => typicalHold.record(performance.now() - started);
            result.then(ended, ended);
          }
          return result;
        };
        if (returnsObservable) {
          const call = callLockedObservable(service, resources, lockOptions, invoke);
          return call.pipe(
            catchError((err: unknown) => {
              if (skipWhenBusy) return skipped(err, resources, ran, EMPTY);
              busyHint(err, ran);
              return throwError(() => err);
            }),
          );
        }
        const call = callLockedAsync(service, resources, lockOptions, invoke);
        return call.catch((err: unknown) => {
          if (skipWhenBusy) return skipped(err, resources, ran, undefined);
          busyHint(err, ran);
          throw err;
        });
      },
    });
    // The router and other decorators read metadata from the function object: copy all of it, or
    // a route declared above this decorator would answer 404.
    for (const metadataKey of Reflect.getOwnMetadataKeys(original)) {
      Reflect.defineMetadata(metadataKey, Reflect.getOwnMetadata(metadataKey, original), wrapper);
    }
    Reflect.defineMetadata(
      DISTRIBUTED_LOCK_METADATA,
      { key, options } satisfies DistributedLockMetadata,
      wrapper,
    );
    descriptor.value = wrapper as unknown as typeof descriptor.value;
  };
}
