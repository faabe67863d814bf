import { ACQUIRE_SCRIPT, CLUSTER_ACQUIRE_SCRIPT } from './acquire.js';
import { EXTEND, EXTEND_MANY } from './extend.js';
import { RAISE_FENCE } from './fence.js';
import { INSPECT } from './inspect.js';
import type { LuaScript } from './lua-script.js';
import {
  CLUSTER_LEAVE_QUEUE_SCRIPT,
  CLUSTER_RELEASE_SCRIPT,
  CLUSTER_REQUEUE_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  RELEASE_SCRIPT,
  REQUEUE_SCRIPT,
} from './release.js';
import {
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_INSPECT_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
} from './read.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from './semaphore.js';

/** The lock scripts, by operation. */
export interface EngineScripts {
  readonly acquire: LuaScript;
  readonly release: LuaScript;
  readonly requeue: LuaScript;
  readonly leaveQueue: LuaScript;
  readonly raiseFence: LuaScript;
  readonly extend: LuaScript;
  readonly extendMany: LuaScript;
  readonly inspect: LuaScript;
  /** A semaphore's slot search (semaphore.ts). */
  readonly acquireSlot: LuaScript;
  /** A read-write lock's readers (read.ts): acquire, extend, let go, raise the fence, inspect. */
  readonly readAcquire: LuaScript;
  readonly readExtend: LuaScript;
  readonly readLetGo: LuaScript;
  readonly readRaiseFence: LuaScript;
  readonly readInspect: LuaScript;
  /** All of them, loaded on each (re)connection so that calls rarely meet NOSCRIPT. */
  readonly all: readonly LuaScript[];
}

const byOperation = {
  acquire: ACQUIRE_SCRIPT,
  release: RELEASE_SCRIPT,
  requeue: REQUEUE_SCRIPT,
  leaveQueue: LEAVE_QUEUE_SCRIPT,
  raiseFence: RAISE_FENCE,
  extend: EXTEND,
  extendMany: EXTEND_MANY,
  inspect: INSPECT,
  acquireSlot: SEMAPHORE_ACQUIRE_SCRIPT,
  readAcquire: READ_ACQUIRE_SCRIPT,
  readExtend: READ_EXTEND_SCRIPT,
  readLetGo: READ_LET_GO_SCRIPT,
  readRaiseFence: READ_RAISE_FENCE_SCRIPT,
  readInspect: READ_INSPECT_SCRIPT,
};

/**
 * The lock scripts of one Redis server: constants, the same for every engine whatever its options
 * (the settings travel as an argument: settings.ts), so every engine on a server shares one SHA per
 * script and one copy in its script cache. The scripts on every lock's path derive the names of a
 * lock key's fence counter and queue (key-layout.ts): fewer bytes per call.
 */
export const SCRIPTS: EngineScripts = Object.freeze({ ...byOperation, all: Object.values(byOperation) });

const byOperationOnCluster = {
  ...byOperation,
  acquire: CLUSTER_ACQUIRE_SCRIPT,
  release: CLUSTER_RELEASE_SCRIPT,
  requeue: CLUSTER_REQUEUE_SCRIPT,
  leaveQueue: CLUSTER_LEAVE_QUEUE_SCRIPT,
};

/**
 * The lock scripts of a Redis Cluster voter: {@link SCRIPTS}, but those on every lock's path
 * declare every key they touch, as Redis Cluster requires (key-layout.ts). Constants too.
 */
export const CLUSTER_SCRIPTS: EngineScripts = Object.freeze({
  ...byOperationOnCluster,
  all: Object.values(byOperationOnCluster),
});

const letGoScripts: ReadonlySet<LuaScript> = new Set(
  [SCRIPTS, CLUSTER_SCRIPTS].flatMap((scripts) => [
    scripts.release,
    scripts.requeue,
    scripts.leaveQueue,
    scripts.readLetGo,
  ]),
);

/**
 * Whether `script` lets go of a lock value (release, requeue, leave the line, a reader's let-go),
 * on a server or a Cluster. Such a script frees only what holds the caller's value, so a voter
 * sends it even while it would not vote there (a connection not admitted, a master not checked):
 * it may follow an acquire already written to that connection, which it must run behind.
 */
export function isLetGo(script: LuaScript): boolean {
  return letGoScripts.has(script);
}

export type { ScriptSettings } from './settings.js';
export { ScriptCalls, fencedKeys, inspectKeys, resourceKeys } from './calls.js';
export { CLOCK_WINDOW_US, decodeAcquireReply, type AcquireVote } from './acquire.js';
export { decodeSlotReply, type SlotVote } from './semaphore.js';
export { decodeReadersReply } from './read.js';
export {
  decodeExtendManyReply,
  decodeExtendOneReply,
  decodeExtendReply,
  extendArgs,
  extendManyCall,
  type ExtendAnswers,
  type ExtendRequest,
} from './extend.js';
export { decodeRaiseFenceReply } from './fence.js';
// Not in SCRIPTS.all (loaded on every connection): it runs once per clock step, and its first
// call sends its source.
export {
  CLOCK_MARK,
  CLOCK_MARK_SLOTS,
  clockMarkArgs,
  clockMarkSlotsArgs,
  decodeClockMarkReply,
  type ClockMark,
} from './clock-mark.js';
export { letGoScript, RELEASE, type LetGo, type LetGoScripts } from './release.js';
export { decodeInspectReply, type KeyView } from './inspect.js';
export { runScript, type LuaScript } from './lua-script.js';
export { decodeWakeMessage, encodeWakeMessage, type WakeMessage } from './wake-message.js';
export {
  isMultiResource,
  isReader,
  LockValues,
  MULTI_RESOURCE_MARK,
  READ_MARK,
  TURN_MARK,
  wakeChannelOf,
} from './lock-value.js';
