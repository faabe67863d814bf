export { RedlockModule } from './redlock.module.js';
export { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
export { LockService } from './lock.service.js';
export { DistributedLock } from './distributed-lock.decorator.js';
export { FencingToken, LockSignal } from './lock-params.decorator.js';
export { LockErrorInterceptor } from './lock-error.interceptor.js';
export { DISTRIBUTED_LOCK_METADATA } from './redlock.constants.js';
//# sourceMappingURL=index.js.map