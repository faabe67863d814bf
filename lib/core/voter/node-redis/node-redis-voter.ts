import { AdmittedVoter } from '../admitted-voter.js';
import type { VoterContext } from '../voter.js';
import { nodeRedisConnection, type NodeRedisClientApi } from './connection.js';
import { NodeRedisClient } from './node-redis-client.js';

/**
 * One Redis server reached with node-redis (`redis` 5 or 6, RESP2 or RESP3), as a Voter: the lock
 * operations of ScriptVoter on a {@link NodeRedisClient} (admission, bounded commands, the wake
 * subscription on a duplicate() connection). Releases wait for their replies (no one-way calls:
 * those write to an ioredis socket directly).
 */
export class NodeRedisVoter extends AdmittedVoter<NodeRedisClient> {
  /** A voter for a node-redis client (createClient), or a URL / createClient options it opens. */
  static from(node: string | object, context: VoterContext): NodeRedisVoter {
    const connection = nodeRedisConnection(node, context.connectTimeout);
    return new NodeRedisVoter(new NodeRedisClient(connection, context), context);
  }

  /** The client that runs the scripts (ours, or the one passed in). */
  get client(): NodeRedisClientApi {
    return this.adapter.client;
  }
}
