import { createHash } from 'node:crypto';

/**
 * What a script does beyond the keys it declares, as a FUNCTION library's flags must say (the
 * option `scripts: 'functions'`; EVAL needs none of it).
 */
export interface LuaScriptFlags {
  /** It writes nothing: called with FCALL_RO, flag `no-writes`. */
  readonly readOnly?: boolean;
  /**
   * It touches keys it does not declare, in several slots of one Cluster master (the guards'
   * maintenance): flag `allow-cross-slot-keys`, which EVAL grants a script without flags implicitly.
   */
  readonly crossSlot?: boolean;
  /**
   * It must run on a server out of memory (maxmemory reached under noeviction): extending and letting
   * go keep or free memory, and EVAL runs their PEXPIRE and DEL then. Flag `allow-oom`, without
   * which a function that writes is refused as a whole on such a server.
   */
  readonly allowOom?: boolean;
}

/** A Lua script with its SHA1: called with EVALSHA, and sent again with EVAL after NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
  readonly flags: LuaScriptFlags;
}

/** Names a Lua source and computes the SHA1 that EVALSHA needs. */
export function luaScript(name: string, source: string, flags: LuaScriptFlags = {}): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex'), flags };
}
