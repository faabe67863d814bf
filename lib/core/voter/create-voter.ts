import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { clientKind } from '../clients/detect.js';
import type { RedisClientPackage } from '../clients/types.js';
import type { RedlockNode } from '../options.js';
import { GlideVoter } from './glide/glide-voter.js';
import { RedisVoter } from './ioredis/redis-voter.js';
import { NodeRedisVoter } from './node-redis/node-redis-voter.js';
import { GlideClusterVoter } from './glide-cluster/cluster-voter.js';
import { ClusterVoter } from './ioredis-cluster/cluster-voter.js';
import { NodeRedisClusterVoter } from './node-redis-cluster/cluster-voter.js';
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
      case 'node-redis-cluster':
        return NodeRedisClusterVoter.from(node, context, option);
      case 'glide':
        return GlideVoter.from(node, context);
      case 'glide-cluster':
        return GlideClusterVoter.from(node, context, option);
      case undefined:
        break;
    }
    // `{ cluster: [...], options? }`: a Cluster opened with ioredis.
    if (isClusterNode(node)) return ClusterVoter.from(node as ClusterVoterNode, context);
  }
  if (client === 'node-redis') return NodeRedisVoter.from(node as string | object, context);
  return RedisVoter.from(node as string | RedisOptions, context);
}
