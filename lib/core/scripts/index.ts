import { acquireScript } from './acquire.js';
import { EXTEND, EXTEND_MANY } from './extend.js';
import { RAISE_FENCE } from './fence.js';
import { INSPECT } from './inspect.js';
import type { LuaScript } from './lua-script.js';
import { leaveQueueScript, releaseScript, requeueScript, type LetGo } from './release.js';
import { compileSettings, type ScriptSettings } from './settings.js';

/** The scripts of one engine, with its settings compiled in. */
export interface EngineScripts {
  readonly acquire: LuaScript;
  readonly release: LuaScript;
  readonly requeue: LuaScript;
  readonly leaveQueue: LuaScript;
  readonly raiseFence: LuaScript;
  readonly extend: LuaScript;
  readonly extendMany: LuaScript;
  readonly inspect: LuaScript;
  /** All of them, loaded on each (re)connection so that calls rarely meet NOSCRIPT. */
  readonly all: readonly LuaScript[];
}

/** The script of a {@link LetGo} operation. */
export function letGoScript(scripts: EngineScripts, how: LetGo): LuaScript {
  return how.op === 'release' ? scripts.release : how.op === 'requeue' ? scripts.requeue : scripts.leaveQueue;
}

/** Builds an engine's scripts, with its settings compiled in. */
export function engineScripts(settings: ScriptSettings): EngineScripts {
  const compiled = compileSettings(settings);
  const scripts = {
    acquire: acquireScript(compiled),
    release: releaseScript(compiled),
    requeue: requeueScript(compiled),
    leaveQueue: leaveQueueScript(compiled),
    raiseFence: RAISE_FENCE,
    extend: EXTEND,
    extendMany: EXTEND_MANY,
    inspect: INSPECT,
  };
  return { ...scripts, all: Object.values(scripts) };
}

export type { ScriptSettings } from './settings.js';
export { acquireArgs, decodeAcquireReply, type AcquireVote } from './acquire.js';
export {
  decodeExtendManyReply,
  decodeExtendReply,
  extendArgs,
  extendManyCall,
  type ExtendRequest,
} from './extend.js';
export { decodeRaiseFenceReply, raiseFenceArgs } from './fence.js';
export { letGoArgs, RELEASE, type LetGo } from './release.js';
export { decodeInspectReply, type KeyView } from './inspect.js';
export { runScript, type LuaScript } from './lua-script.js';
export { decodeWakeMessage, encodeWakeMessage, type WakeMessage } from './wake-message.js';
export { isMultiResource, LockValues, MULTI_RESOURCE_MARK, TURN_MARK, wakeChannelOf } from './lock-value.js';
