import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { clientKind } from '../clients/detect.js';
import type { RedisClientPackage } from '../clients/types.js';
import { RedlockOptionsError } from '../errors.js';
import type { RedlockNode } from '../options.js';
import { GlideVoter } from './glide/glide-voter.js';
import { RedisVoter } from './ioredis/redis-voter.js';
import { NodeRedisVoter } from './node-redis/node-redis-voter.js';
import { ClusterVoter } from './ioredis-cluster/cluster-voter.js';
import { isClusterNode, type ClusterVoterNode } from './ioredis-cluster/connection.js';
import { isVoterFactory, type Voter, type VoterContext } from './voter.js';

/**
 * The voter for one entry of `nodes` (already checked by node-checks.ts): a ready client by its kind
 * (clients/detect.ts), a URL or options by `client`, the package chosen for them (resolve-options.ts).
 */
export function createVoter(
  node: RedlockNode,
  context: VoterContext,
  client: RedisClientPackage | undefined,
  option: string,
): Voter {
  if (isVoterFactory(node)) return node.createVoter(context);
  if (typeof node === 'object') {
    const kind = clientKind(node);
    switch (kind) {
      case 'ioredis':
        return RedisVoter.from(node as Redis, context);
      case 'ioredis-cluster':
        return ClusterVoter.from(node as Cluster, context);
      case 'node-redis':
        return NodeRedisVoter.from(node, context);
      case 'glide':
        return GlideVoter.from(node, context);
      case undefined:
        break;
      default:
        throw new RedlockOptionsError(
          option,
          `a ${kind === 'node-redis-cluster' ? 'node-redis cluster (createCluster)' : 'Valkey GLIDE GlideClusterClient'} is not supported as a voter yet`,
          'Give the Redis Cluster as an ioredis Cluster or { cluster: [{ host, port }, ...] } (opened with ioredis).',
        );
    }
    // `{ cluster: [...], options? }`: a Cluster opened with ioredis.
    if (isClusterNode(node)) return ClusterVoter.from(node as ClusterVoterNode, context);
  }
  if (client === 'node-redis') return NodeRedisVoter.from(node as string | object, context);
  return RedisVoter.from(node as string | RedisOptions, context);
}
