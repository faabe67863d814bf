/*
 * The lock's Lua scripts and their replies: constants, the same for every engine whatever its
 * options (the settings travel as an argument), every key they touch declared, on a single server
 * as on a Cluster. The guards' maintenance scripts are in guards.ts.
 */
export { ACQUIRE, CLOCK_WINDOW_US, decodeAcquireReply, type AcquireVote } from './acquire.js';
export {
  decodeExtendManyReply,
  decodeExtendOneReply,
  decodeExtendReply,
  extendArgs,
  extendManyCall,
  EXTEND,
  EXTEND_MANY,
  type ExtendAnswers,
  type ExtendRequest,
} from './extend.js';
export { RAISE_FENCE } from './fence.js';
export { decodeClockMarkReply, type ClockMark } from './guards.js';
export { decodeInspectReply, INSPECT, type KeyView } from './inspect.js';
export { LET_GO, RELEASE, RELEASE_MANY, type LetGo } from './let-go.js';
export { luaScript, type LuaScript } from './lua.js';
export { decodeReadersReply } from './read.js';
export { decodeSlotReply, type SlotVote } from './semaphore.js';
export { settingsArg, type ScriptSettings } from './settings.js';
export {
  decodeWakeMessage,
  encodeWakeMessage,
  isMultiResource,
  isReader,
  LockValues,
  MULTI_RESOURCE_MARK,
  READ_MARK,
  TURN_MARK,
  wakeChannelOf,
  type WakeMessage,
} from './keys.js';
