import { createHash } from 'node:crypto';

/** A Lua script with its SHA1: called with EVALSHA, and sent again with EVAL after NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Names a Lua source and computes the SHA1 that EVALSHA needs. */
export function luaScript(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}
