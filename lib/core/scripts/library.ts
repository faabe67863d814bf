import { createHash } from 'node:crypto';
import { ACL_PROBE } from './acl-probe.js';
import { ACQUIRE } from './acquire.js';
import { EXTEND, EXTEND_MANY } from './extend.js';
import { RAISE_FENCE } from './fence.js';
import { CLOCK_MARK, IDENTITY_CHECK, RUN_ID, SEED_SLOT_MARKERS } from './guards.js';
import { INSPECT } from './inspect.js';
import { LET_GO, RELEASE_MANY } from './let-go.js';
import type { LuaScript } from './lua.js';
import {
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_INSPECT_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
} from './read.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from './semaphore.js';

/*
 * The same scripts as a FUNCTION library, for servers where EVAL is refused (the option
 * `scripts: 'functions'`). Function names are global on a server, shared by every library loaded
 * there: each one carries the hash of its own code and the library's version (the hash of all of
 * them), so that two versions of this package, or another library, never collide on a name, and a
 * deploy that changes one script loads a whole new library beside the old one instead of replacing
 * functions that running instances of the old version still call.
 */

/** The lock's scripts, loaded on every new connection so that calls rarely meet NOSCRIPT. */
export const LOCK_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE,
  LET_GO,
  RELEASE_MANY,
  EXTEND,
  EXTEND_MANY,
  RAISE_FENCE,
  INSPECT,
  SEMAPHORE_ACQUIRE_SCRIPT,
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
  READ_INSPECT_SCRIPT,
];

/** Every script the engine sends, the lock's and the guards' alike. */
export const LIBRARY_SCRIPTS: readonly LuaScript[] = [
  ...LOCK_SCRIPTS,
  RUN_ID,
  IDENTITY_CHECK,
  CLOCK_MARK,
  SEED_SLOT_MARKERS,
  ACL_PROBE,
];

/** A FUNCTION library of scripts, ready for `FUNCTION LOAD`. */
export interface FunctionLibrary {
  /** `nest_quorum_lock_<version>`. */
  readonly name: string;
  /** The hash of every function's name, flags and code (12 hex digits). */
  readonly version: string;
  /** The library's code, `#!lua name=...` first. */
  readonly source: string;
  /** A function without keys that writes nothing and returns the version: is the library there? */
  readonly probe: string;
  /** The function that runs `script`; undefined for a script not in the library. */
  functionOf(script: LuaScript): string | undefined;
}

/** Builds the library of `scripts` (names must be unique). */
export function functionLibrary(scripts: readonly LuaScript[]): FunctionLibrary {
  const version = createHash('sha1')
    .update(scripts.map((s) => `${s.name}\n${flagsOf(s).join(',')}\n${s.sha}\n`).join(''))
    .digest('hex')
    .slice(0, 12);
  const names = new Map(
    scripts.map((s) => [
      s.sha,
      `nql_${version}_${s.name.replace(/[^A-Za-z0-9]/g, '_')}_${s.sha.slice(0, 12)}`,
    ]),
  );
  const probe = `nql_${version}_library`;
  const register = (name: string, flags: readonly string[], body: string) =>
    `redis.register_function{\n  function_name = '${name}',\n  flags = {${flags.map((f) => `'${f}'`).join(', ')}},\n` +
    `  callback = function(KEYS, ARGV)\n${body.trim()}\nend,\n}\n`;
  const source =
    `#!lua name=nest_quorum_lock_${version}\n` +
    `-- nest-quorum-lock's scripts (npx nest-quorum-lock functions prints this library)\n` +
    register(probe, ['no-writes'], `return '${version}'`) +
    scripts.map((s) => `-- ${s.name}\n` + register(names.get(s.sha)!, flagsOf(s), s.source)).join('');
  return {
    name: `nest_quorum_lock_${version}`,
    version,
    source,
    probe,
    functionOf: (script) => names.get(script.sha),
  };
}

/** The FUNCTION flags a script needs. */
function flagsOf(script: LuaScript): string[] {
  return [
    ...(script.flags.readOnly ? ['no-writes'] : []),
    ...(script.flags.crossSlot ? ['allow-cross-slot-keys'] : []),
    ...(script.flags.allowOom ? ['allow-oom'] : []),
  ];
}

/** This version's library: every script the engine sends. */
export const FUNCTION_LIBRARY: FunctionLibrary = functionLibrary(LIBRARY_SCRIPTS);
