export { Redlock } from './redlock.js';
export type { NodeStatus } from './voters.js';
export type { Lock } from './lock.js';
export type { LockEvent } from './events.js';
export type { TelemetryProviders } from './telemetry.js';
export type { LockInspection } from './inspect.js';
export type { RedlockOptions, LockOptions, RedlockNode, PreflightMode } from './options.js';
export type { RedlockLogger } from './logger.js';
export type { Voter, VoterContext, VoterFactory } from './voter/voter.js';
export { MemoryVoter } from './voter/memory-voter.js';
export { ClusterVoter } from './voter/cluster-voter.js';
export type { ClusterVoterNode } from './voter/cluster-connection.js';
export { CrossSlotLockError } from './voter/cluster-slots.js';
export { MemoryState } from './voter/memory-state.js';
export type { AcquireVote, ExtendRequest, KeyView, LetGo } from './scripts/index.js';
export {
  RedlockError,
  RedlockOptionsError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  LockLostError,
  NodeConfigurationError,
} from './errors.js';
export type { NodeFailure } from './errors.js';
