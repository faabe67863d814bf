import { clientKind } from '../core/clients/detect.js';
import type {
  GlideClient,
  IoRedisClient,
  IoRedisCluster,
  NodeRedisClient,
  NodeRedisCluster,
} from '../core/clients/types.js';
import type { ServerSend } from '../core/voter/server.js';

/**
 * A connection to the Redis that keeps fenced data: an ioredis (or iovalkey) `Redis` or `Cluster`, a node-redis 5
 * or 6 client or cluster, or a Valkey GLIDE 2 client or cluster client. Its own settings (timeouts,
 * retries) apply to the fenced calls.
 */
export type FencedStoreClient =
  IoRedisClient | IoRedisCluster | NodeRedisClient | NodeRedisCluster | GlideClient;

/** GLIDE's reply decoder option, as GLIDE takes it (`Decoder.String` is 1). */
const DECODE_STRINGS = { decoder: 1 } as const;

/**
 * The store's client as one raw-command function (EVALSHA, EVAL after NOSCRIPT: core's runScript):
 * one Lua source serves every client; a Cluster routes a script by its first key. Anything else is a
 * `TypeError` here, when the writer is built.
 */
export function storeSend(client: FencedStoreClient): ServerSend {
  const c = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  switch (typeof client === 'object' && client !== null ? clientKind(client) : undefined) {
    case 'ioredis':
    case 'ioredis-cluster':
      return (command) => c.call!(...command);
    case 'node-redis':
      return (command) => c.sendCommand!([...command]);
    case 'node-redis-cluster':
      // EVALSHA sha numkeys key ...: the key picks the shard.
      return (command) => c.sendCommand!(command[3], false, [...command]);
    case 'glide':
    case 'glide-cluster':
      return (command) => c.customCommand!([...command], DECODE_STRINGS).then(pairsAsArray);
  }
  const got =
    client === null ? 'null' : typeof client === 'object' ? 'an object of another kind' : typeof client;
  throw new TypeError(
    'FencedWriter needs a Redis client: an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster ' +
      `(createClient / createCluster), or a Valkey GLIDE client; got ${got}`,
  );
}

/** GLIDE gives a script's table of pairs as `[{ key, value }]`: the flat array other clients give. */
function pairsAsArray(reply: unknown): unknown {
  const first = Array.isArray(reply) ? (reply[0] as { key?: unknown; value?: unknown } | null) : undefined;
  if (!first || typeof first !== 'object' || Array.isArray(first) || !('key' in first && 'value' in first))
    return reply;
  return (reply as Array<{ key: unknown; value: unknown }>).flatMap(({ key, value }) => [key, value]);
}
