import type {
  GlideClient,
  IoRedisClient,
  IoRedisCluster,
  NodeRedisClient,
  NodeRedisCluster,
} from '../core/clients/types.js';
import { clientSend } from '../core/transport/pick.js';
import type { ServerSend } from '../core/voter/server.js';

/**
 * A connection to the Redis that keeps fenced data: an ioredis (or iovalkey) `Redis` or `Cluster`, a node-redis 5
 * or 6 client or cluster, or a Valkey GLIDE 2 client or cluster client. Its own settings (timeouts,
 * retries) apply to the fenced calls.
 */
export type FencedStoreClient =
  IoRedisClient | IoRedisCluster | NodeRedisClient | NodeRedisCluster | GlideClient;

/**
 * The store's client as one raw-command function (EVALSHA, EVAL after NOSCRIPT: core's runScript):
 * one Lua source serves every client. Anything else is a `TypeError` here, when the writer is built.
 */
export function storeSend(client: FencedStoreClient): ServerSend {
  const send = typeof client === 'object' && client !== null ? clientSend(client) : undefined;
  if (send) return send;
  const got =
    client === null ? 'null' : typeof client === 'object' ? 'an object of another kind' : typeof client;
  throw new TypeError(
    'FencedWriter needs a Redis client: an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster ' +
      `(createClient / createCluster), or a Valkey GLIDE client; got ${got}`,
  );
}
