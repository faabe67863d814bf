/** Metadata key: index of the `@FencingToken()` parameter of a method. */
export const FENCING_TOKEN_PARAM = Symbol('redlock:fencing-token-param');
/** Metadata key: index of the `@LockSignal()` parameter of a method. */
export const LOCK_SIGNAL_PARAM = Symbol('redlock:lock-signal-param');
/** Metadata key: the `@DistributedLock` settings of a method (for bootstrap checks and tooling). */
export const DISTRIBUTED_LOCK_METADATA = Symbol('redlock:distributed-lock');
/**
 * The property through which a decorated class receives LockService (property injection). Its
 * description is what NestJS prints when the provider is missing, so it says how to fix that.
 */
export const LOCK_SERVICE_PROPERTY = Symbol(
  'LockService, needed by @DistributedLock: import RedlockModule.forRoot() or forRootAsync() (isGlobal: true) ' +
    'in the root module; in a unit test, RedlockTestingModule.forRoot() from nest-quorum-lock/testing',
);
