import type { ClusterVoterNode, IoRedisCluster } from './clients/types.js';
import { createVoter } from './transport/pick.js';
import type { Voter, VoterContext } from './voter/voter-api.js';

export { Redlock } from './engine/redlock.js';
export type { NodeStatus } from './quorum/health.js';
export type { Lock } from './engine/lock.js';
export type { LockEvent } from './events.js';
export type { TelemetryProviders } from './telemetry.js';
export type { LockInspection, SemaphoreInspection } from './quorum/inspect.js';
export type { RedlockOptions, LockOptions, RedlockNode } from './options.js';
export type { PreflightMode } from './preflight.js';
export type { RedlockLogger } from './logger.js';
export { realRuntime, type Runtime } from './runtime.js';
export { markFreshNode, type FreshNodeOptions, type FreshNodeProof } from './guards/fresh-node.js';
export type { Voter, VoterContext, VoterFactory } from './voter/voter-api.js';
export type { Transport, TransportEvent, Route } from './transport/transport.js';
export type {
  ClusterStartupNode,
  ClusterVoterNode,
  GlideClient,
  IoRedisClient,
  IoRedisCluster,
  NodeRedisClient,
  NodeRedisCluster,
  RedisClientPackage,
  RedisConnectionOptions,
} from './clients/types.js';
/**
 * A Redis Cluster as ONE voter, built from an ioredis `Cluster` or `{ cluster: [...], options? }`
 * (as `nodes` does with such an entry). Typed without ioredis' typings (an optional peer).
 */
export const ClusterVoter: {
  from(node: IoRedisCluster | ClusterVoterNode, context: VoterContext): Voter;
} = { from: (node, context) => createVoter(node, context, 'ioredis', 'a nodes entry') };
/** A Redis Cluster voter (see {@link ClusterVoter}). */
export type ClusterVoter = Voter;
export type { AcquireVote, ExtendRequest, KeyView, LetGo, SlotVote } from './scripts/index.js';
export {
  RedlockError,
  RedlockOptionsError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  LockLostError,
  EngineClosedError,
  NodeConfigurationError,
  LockUsageError,
  LockUpgradeError,
  CrossSlotLockError,
  NodeNotFreshError,
} from './errors.js';
export type { NodeFailure } from './errors.js';
