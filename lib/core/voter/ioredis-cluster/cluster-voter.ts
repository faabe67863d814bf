import type { Cluster } from 'ioredis';
import { ScriptVoter } from '../script-voter.js';
import type { Voter, VoterContext } from '../voter.js';
import { IoredisClusterClient } from './cluster-client.js';
import { clusterConnection, type ClusterConnection, type ClusterVoterNode } from './connection.js';
import { assertClusterPrefix, assertOneSlot } from './slots.js';
import type { ClusterSubscriber } from './subscriber.js';

/**
 * A Redis Cluster as ONE voter of the quorum: the cluster holds one copy of the lock state,
 * spread over its shards by slot. Use it when one Redis process per voter is not enough
 * (throughput, memory); the quorum still needs 3 or 5 independent voters.
 *
 * How the algorithm maps onto a cluster:
 * - Every script touches the keys of one hash tag (the resource's: `<prefix>{<resource>}`, its
 *   fence counter and queue), so each call is one EVALSHA that ioredis routes by its first key.
 * - Multi-resource locks must keep their keys in one slot: a lock whose resources hash to
 *   different slots is refused before anything is sent (CrossSlotLockError, slots.ts).
 *   Taking the slots one by one and undoing the granted ones on a refusal would make the vote
 *   non-atomic: two acquirers could each win one slot and undo, over and over, on every voter
 *   (the split the requeue script exists to avoid), a turn claimed in one slot would be given
 *   away on the undo, and other clients would see half-taken locks. A common hash tag costs
 *   nothing and keeps the one-script, all-or-none vote.
 * - The restart guard: a shard that lost its data must abstain, the others must not, and a
 *   script may only touch its own slot. So the marker is per slot
 *   (`<prefix>__restart_guard__{<tag of the slot>}`, 16384 small keys, seeded when the voter
 *   first connects) and goes to the acquire script as its last key. A marker travels with its
 *   slot's keys when a slot is resharded, so it always vouches for exactly the data beside it.
 * - The clock guard's marking for every client (../cluster-script-client.ts, markClockStep): the
 *   engine reads one clock per voter, from the master that serves each lock's slot, and a master
 *   whose clock steps is marked as a single server is, on all of its slots: each master, told the
 *   voters' time plus the clock guard, marks itself only when its own clock is past it, so the
 *   masters that did not step keep voting.
 * - Wake-ups: the scripts PUBLISH on the cluster, which delivers to subscribers on any node
 *   (cluster-wide pub/sub), but counts only the shard's own subscribers in its reply, which the
 *   hand-over reads to skip waiters whose engine is gone: so the voter subscribes on every master
 *   (subscriber.ts).
 * - Health: the voter is connected while the cluster client is ready. A shard that is down makes
 *   the voter partly unavailable: operations on that shard's slots fail, which counts as a failed
 *   vote for those resources only, and the quorum decides with the other voters.
 *
 * - Preflight: the checks of one server on every master, each finding naming its shard
 *   (../cluster-preflight.ts), each time the cluster connects.
 *
 * - The identity guard, per master (shard-identities.ts): each new connection to a master is
 *   checked as a single server's is, and a master whose server changed (restart, failover) makes
 *   the voter abstain for restartGuard on its slots only.
 *
 * The node-redis and Valkey GLIDE cluster voters have the same guard per master, from each
 * master's run_id rather than from connection events (../master-identities.ts).
 *
 * The lock operations are ScriptVoter's (../script-voter.ts); what every cluster client shares is
 * ClusterScriptClient (../cluster-script-client.ts); the ioredis part is cluster-client.ts. The
 * node-redis and Valkey GLIDE cluster voters (../node-redis-cluster/, ../glide-cluster/) map the
 * algorithm the same way.
 */
export class ClusterVoter extends ScriptVoter<IoredisClusterClient> {
  constructor(connection: ClusterConnection, context: VoterContext) {
    super(new IoredisClusterClient(connection, context), context);
  }

  /** A voter for a Cluster client or `{ cluster: [...], options? }`. */
  static from(
    node: Cluster | ClusterVoterNode,
    context: VoterContext,
    option = 'a nodes entry',
  ): ClusterVoter {
    assertClusterPrefix(context.settings.guardKey, option);
    return new ClusterVoter(clusterConnection(node, context.connectTimeout), context);
  }

  /** The cluster client that runs the scripts (ours, or the client passed in). */
  get client(): Cluster {
    return this.adapter.client;
  }

  /** Receives wake messages, once subscribed (ours, also for a client passed in). */
  get subscriber(): ClusterSubscriber | undefined {
    return this.adapter.subscriber;
  }
}

/**
 * Throws CrossSlotLockError when a multi-resource lock's keys do not share one slot and a voter
 * is a Redis Cluster: called by the engine before an attempt, so the caller learns at once.
 * (`resources` are in the order of `lockKeys`.)
 */
export function assertLockFitsVoters(
  voters: readonly Voter[],
  resources: readonly string[],
  lockKeys: readonly string[],
): void {
  // Any Redis Cluster voter: ioredis, node-redis or Valkey GLIDE (their clients route by slot).
  const cluster = voters.find((voter) => voter instanceof ScriptVoter && voter.routesBySlot);
  if (cluster) assertOneSlot(resources, lockKeys, cluster.label);
}
