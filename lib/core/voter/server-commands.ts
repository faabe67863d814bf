import type { LuaScript } from '../scripts/lua-script.js';

/**
 * What admission (ioredis/admission.ts: preflight, the ACL probe, the identity guard) asks of a
 * server on a new connection, whatever the client: INFO, CONFIG GET, a script. Each client adapter
 * supplies one (ioredis, node-redis, Valkey GLIDE).
 */
export interface ServerCommands {
  /** `INFO <section>`, as text. */
  info(section: string): Promise<string>;
  /**
   * `CONFIG GET <parameter>`, as the client returns it: a `[name, value]` array (RESP2), or a map
   * (RESP3: an object or a Map) — see {@link configPairs}.
   */
  configGet(parameter: string): Promise<unknown>;
  /** Runs a script by SHA, its source on NOSCRIPT. */
  runScript(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** The connection's ACL user, when the client knows it. */
  readonly username: string | undefined;
}

/**
 * The `[name, value]` pairs of a CONFIG GET reply in any of the shapes clients give it: a flat
 * array (RESP2), an object or a Map (a RESP3 map), or `[{ key, value }]` (Valkey GLIDE).
 */
export function configPairs(reply: unknown): Array<[string, string]> {
  if (reply instanceof Map) return [...reply].map(([k, v]) => [String(k), String(v)]);
  if (Array.isArray(reply)) {
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i < reply.length; i++) {
      const item = reply[i] as unknown;
      if (item !== null && typeof item === 'object' && 'key' in item && 'value' in item) {
        pairs.push([String(item.key), String(item.value)]);
      } else if (i + 1 < reply.length) {
        pairs.push([String(item), String(reply[++i])]);
      }
    }
    return pairs;
  }
  if (reply !== null && typeof reply === 'object') {
    return Object.entries(reply).map(([k, v]) => [k, String(v)]);
  }
  return [];
}
