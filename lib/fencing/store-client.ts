import { clientKind } from '../core/clients/detect.js';
import type { GlideClient, NodeRedisClient, NodeRedisCluster } from '../core/clients/types.js';
import type { ScriptClient } from '../core/scripts/lua-script.js';
import { normaliseReply } from '../core/voter/glide/glide-client.js';

/**
 * A connection to the Redis that keeps fenced data: an ioredis `Redis` or `Cluster` (or anything
 * with ioredis' `evalsha` and `eval`), a node-redis 5 / 6 client or cluster, or a Valkey GLIDE 2
 * client or cluster client. Its own settings (timeouts, retries) apply to the fenced calls.
 */
export type FencedStoreClient = ScriptClient | NodeRedisClient | NodeRedisCluster | GlideClient;

/** A command as a client's raw-command method takes it, answered with string replies. */
type Send = (args: string[]) => Promise<unknown>;

interface NodeRedisClientSend {
  sendCommand(args: string[]): Promise<unknown>;
}
interface NodeRedisClusterSend {
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
}
interface GlideSend {
  customCommand(args: string[], options: object): Promise<unknown>;
}

/** GLIDE's reply decoder option, as GLIDE takes it (`Decoder.String` is 1). */
const DECODE_STRINGS = { decoder: 1 } as const;

/**
 * The store's client as `runScript` drives it (EVALSHA, EVAL after NOSCRIPT). ioredis is used as it
 * is; node-redis and GLIDE get their scripts through their raw-command method, so that one Lua
 * source serves every client. Anything else is a `TypeError` here, when the writer is built.
 */
export function storeScriptClient(client: FencedStoreClient): ScriptClient {
  const kind = typeof client === 'object' && client !== null ? clientKind(client) : undefined;
  let send: Send;
  switch (kind) {
    case 'node-redis': {
      const c = client as unknown as NodeRedisClientSend;
      send = (args) => c.sendCommand(args);
      break;
    }
    case 'node-redis-cluster': {
      const c = client as unknown as NodeRedisClusterSend;
      // args: EVALSHA sha numkeys key ...: the key picks the shard.
      send = (args) => c.sendCommand(args[3], false, args);
      break;
    }
    case 'glide':
    case 'glide-cluster': {
      // GLIDE routes EVALSHA / EVAL by their first key on a cluster client.
      const c = client as unknown as GlideSend;
      send = (args) => c.customCommand(args, DECODE_STRINGS).then(normaliseReply);
      break;
    }
    default: {
      const c = (client ?? {}) as Partial<ScriptClient>;
      if (typeof c.evalsha === 'function' && typeof c.eval === 'function') return client as ScriptClient;
      throw new TypeError(
        'FencedWriter needs a Redis client: an ioredis Redis or Cluster, a node-redis client or cluster ' +
          '(createClient / createCluster), or a Valkey GLIDE client; got ' +
          (client === null
            ? 'null'
            : typeof client === 'object'
              ? 'an object of another kind'
              : typeof client),
      );
    }
  }
  const command = (name: string, script: string, numKeys: number, rest: (string | number)[]) =>
    send([name, script, String(numKeys), ...rest.map(String)]);
  return {
    evalsha: (sha, numKeys, ...rest) =>
      command('EVALSHA', sha, numKeys, rest).catch((err: unknown) => {
        // runScript re-sends on a message that starts with NOSCRIPT; GLIDE names it NoScriptError.
        if (
          err instanceof Error &&
          !err.message.startsWith('NOSCRIPT') &&
          /NoScriptError/.test(err.message)
        ) {
          throw new Error(`NOSCRIPT ${err.message}`, { cause: err });
        }
        throw err;
      }),
    eval: (source, numKeys, ...rest) => command('EVAL', source, numKeys, rest),
  };
}
