export { Redlock } from './redlock.js';
export type { NodeStatus } from './redlock.js';
export type { Lock } from './lock.js';
export type { RedlockOptions, LockOptions, RedlockNode } from './options.js';
export type { RedlockLogger } from './logger.js';
export {
  RedlockError,
  RedlockOptionsError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  LockLostError,
} from './errors.js';
export type { NodeFailure } from './errors.js';
