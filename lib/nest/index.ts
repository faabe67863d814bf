export { RedlockModule } from './redlock.module.js';
export { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
export type {
  RedlockModuleOptions,
  RedlockModuleExtras,
  RedlockNestOptions,
} from './redlock.module-definition.js';
export { LockService } from './lock.service.js';
export type { LockClusterStatus } from './lock.service.js';
export { DistributedLock } from './distributed-lock.decorator.js';
export type { DistributedLockOptions, DistributedLockMetadata } from './distributed-lock.decorator.js';
export { FencingToken, LockSignal } from './lock-params.decorator.js';
export type { LockKey } from './lock-key.js';
export { LockErrorInterceptor } from './lock-error.interceptor.js';
export {
  lockErrorPayload,
  type LockErrorCode,
  type LockErrorPayload,
  type LockErrorPayloadOptions,
} from './contexts/payload.js';
export { DISTRIBUTED_LOCK_METADATA } from './redlock.constants.js';
