import { assertClusterPrefix } from '../ioredis-cluster/slots.js';
import type { NodeRedisClusterApi } from '../node-redis/connection.js';
import { nodeRedisConnection } from '../node-redis/connection.js';
import { AdmittedVoter } from '../admitted-voter.js';
import type { VoterContext } from '../voter.js';
import { NodeRedisClusterClient } from './cluster-client.js';

/**
 * A Redis Cluster reached with a node-redis cluster client (`createCluster`, `redis` 5 or 6) as
 * ONE voter of the quorum: the lock operations of ScriptVoter on a {@link NodeRedisClusterClient}.
 * The mapping of the algorithm onto a cluster (one hash tag per lock, a restart-guard marker per
 * slot, CrossSlotLockError, wake-ups on every master) is the ioredis Cluster voter's
 * (../ioredis-cluster/cluster-voter.ts). The cluster is the application's: never closed here.
 */
export class NodeRedisClusterVoter extends AdmittedVoter<NodeRedisClusterClient> {
  /** A voter for a node-redis cluster (createCluster), connected or not. */
  static from(cluster: object, context: VoterContext, option = 'a nodes entry'): NodeRedisClusterVoter {
    assertClusterPrefix(context.settings.guardKey, option);
    const connection = nodeRedisConnection(cluster, context.connectTimeout);
    return new NodeRedisClusterVoter(new NodeRedisClusterClient(connection, context), context);
  }

  /** The cluster client that runs the scripts (the application's). */
  get client(): NodeRedisClusterApi {
    return this.adapter.cluster;
  }
}
