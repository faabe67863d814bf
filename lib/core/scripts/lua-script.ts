import { createHash } from 'node:crypto';

/**
 * What {@link runScript} needs of a connection: ioredis' `evalsha` and `eval` (a `Redis` or a
 * `Cluster`), written out so that the public typings do not need ioredis' own.
 */
export interface ScriptClient {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/** A Lua script with its SHA1, called with EVALSHA and re-sent with EVAL after NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Names a Lua source and computes the SHA1 that EVALSHA needs. */
export function luaScript(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Runs a script by SHA, and sends its source on NOSCRIPT (first use on a node, or a node that
 * restarted and lost its script cache). The runner of every answered script call on ioredis: the
 * ioredis and ioredis Cluster adapters (voter/ioredis/ioredis-client.ts,
 * voter/ioredis-cluster/cluster-client.ts), preflight's probes and `FencedWriter` use it; one-way
 * releases (voter/one-way.ts) write their EVALSHA to the socket themselves. `onNoScript` hears of a node whose script cache was found empty, once
 * the call was sent again.
 */
export function runScript<T = unknown>(
  client: ScriptClient,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  decode: (reply: unknown) => T = identity as (reply: unknown) => T,
  onNoScript?: () => void,
): Promise<T> {
  // Decoding in the same then() as the NOSCRIPT fallback: one promise per call on the hot path.
  return client.evalsha(script.sha, keys.length, ...keys, ...args).then(decode, (err: unknown) => {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      const retried = client.eval(script.source, keys.length, ...keys, ...args).then(decode);
      onNoScript?.(); // after the retry: what it sends comes after this call, as it was sent
      return retried;
    }
    throw err;
  });
}

/** A reply decoder that returns the reply as it came. */
export const identity = (reply: unknown): unknown => reply;
