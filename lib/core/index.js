export { Redlock } from './redlock.js';
export { RedlockError, RedlockOptionsError, LockNotAcquiredError, QuorumUnavailableError, LockLostError } from './errors.js';
//# sourceMappingURL=index.js.map