import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { clientKind } from '../clients/detect.js';
import type { RedisClientPackage } from '../clients/types.js';
import { RedlockOptionsError } from '../errors.js';
import type { RedlockNode } from '../options.js';
import { RedisVoter } from './ioredis/redis-voter.js';
import { ClusterVoter } from './ioredis-cluster/cluster-voter.js';
import { isClusterNode, type ClusterVoterNode } from './ioredis-cluster/connection.js';
import { isVoterFactory, type Voter, type VoterContext } from './voter.js';

/**
 * The voter for one entry of `nodes` (already checked by options.ts): a ready client by its kind
 * (clients/detect.ts), a URL or options by `client`, the package chosen for them (options.ts).
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
      case undefined:
        break;
      default:
        throw new RedlockOptionsError(
          option,
          `a ${kind} client is not supported by this version yet`,
          'Pass an ioredis client, a URL or options.',
        );
    }
    // `{ cluster: [...], options? }`: a Cluster opened with ioredis.
    if (isClusterNode(node)) return ClusterVoter.from(node as ClusterVoterNode, context);
  }
  if (client === 'node-redis') {
    throw new RedlockOptionsError(
      option,
      'connections opened with node-redis are not supported by this version yet',
      "Install ioredis, or choose client: 'ioredis'.",
    );
  }
  return RedisVoter.from(node as string | RedisOptions, context);
}
