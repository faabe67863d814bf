import type { LuaScript } from '../scripts/lua-script.js';

/*
 * The bytes of a one-way let-go call (one-way.ts sends them): apart from the connection code, so
 * that what the engine's public types reach (ScriptCalls, ScriptClient) needs no client's types.
 */

/** `CLIENT REPLY SKIP` in the protocol: the server sends no reply to the next command. */
const SKIP_NEXT_REPLY = '*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n';

/** A bulk string of the protocol. */
function bulk(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}

/**
 * `CLIENT REPLY SKIP` and `EVALSHA sha keys args` as the bytes to write. A release asks every
 * voter with the same keys and arguments (ScriptCalls shares them): the engine encodes them once
 * for all its voters ({@link OneWayWires}).
 */
export function oneWayScriptCall(sha: string, keys: readonly string[], args: readonly string[]): string {
  let wire = `${SKIP_NEXT_REPLY}*${3 + keys.length + args.length}\r\n$7\r\nEVALSHA\r\n${bulk(sha)}${bulk(String(keys.length))}`;
  for (const key of keys) wire += bulk(key);
  for (const arg of args) wire += bulk(arg);
  return wire;
}

/** What encodes a one-way call's bytes (OneWayCalls.send): {@link oneWayScriptCall}, or a cache of it. */
export interface OneWayEncoder {
  oneWayWire(script: LuaScript, keys: readonly string[], args: readonly string[]): string;
}

/**
 * One engine's encoder of one-way calls: keeps the bytes of the last call, by the identity of its
 * script, keys and arguments arrays (ScriptCalls hands every voter of a release the same arrays,
 * and never changes an array it handed out), so that a release of N voters encodes once, not N
 * times: with every key declared (the fence counter and queue too) and the settings argument, the
 * per-voter encoding was a visible share of B2's Node CPU and garbage. Per engine, not module-global.
 */
export class OneWayWires implements OneWayEncoder {
  private last:
    { script: LuaScript; keys: readonly string[]; args: readonly string[]; wire: string } | undefined;

  oneWayWire(script: LuaScript, keys: readonly string[], args: readonly string[]): string {
    const last = this.last;
    if (last && last.script === script && last.keys === keys && last.args === args) return last.wire;
    const wire = oneWayScriptCall(script.sha, keys, args);
    this.last = { script, keys, args, wire };
    return wire;
  }
}
