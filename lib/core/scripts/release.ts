import { TURN_MARK } from './lock-value.js';
import { DECLARED_KEYS, DERIVED_KEYS, type KeyLayout } from './key-layout.js';
import { luaScript, type LuaScript } from './lua-script.js';
import { PROMOTE_FUNCTION_LUA } from './queue.js';

/*
 * Three ways to let go of lock keys, one script each. All of them free only keys that hold the
 * caller's value (never another holder's), and hand what they free to the first in line (see
 * queue.ts). Each replies with a count (freed keys, or queues left), which nobody needs to read.
 *
 * KEYS, for n resources: lock keys 1..n, then on a Redis Cluster their fence counters n+1..2n
 * and queues 2n+1..3n (key-layout.ts: a single server derives those from the lock keys; each
 * script is built once per layout). ARGV[1] is the caller's value, ARGV[2] the hand-over settings
 * argument (settings.ts).
 */

/**
 * A holder's release, or a failed attempt of a caller that does not wait. ARGV: value, settings.
 * Hands each lock to the first waiter in its queue. A holder may also find its own turn there (a
 * node handed it the lock after it had got a majority elsewhere), or its own entry in a queue (an
 * earlier attempt of a wait left it): both go, or the turn would keep the node from voting until
 * it lapsed.
 */
const releaseScript = (keys: KeyLayout): LuaScript =>
  luaScript(
    keys === DERIVED_KEYS ? 'release' : `release-${keys.name}`,
    `${PROMOTE_FUNCTION_LUA}
local value = ARGV[1]
${keys.head(false)}
local freed = 0
for i = 1, n do
  local key = KEYS[i]
${keys.queue('queue', 'i')}
  local current = redis.call('GET', key)
  local queued = redis.call('EXISTS', queue) == 1
  local mine = current == value or current == '${TURN_MARK}' .. value
  if queued then redis.call('ZREM', queue, value) end
  if mine then
    freed = freed + 1
    if not (queued and promote(key, ${keys.fence('i')}, queue, value)) then redis.call('DEL', key) end
  end
end
return freed
`,
  );

/**
 * A failed attempt of a caller that waits on: it frees what it got and keeps its place in line.
 * It must not keep what it got: acquirers that split the nodes between them would each keep their
 * share and wait for the others forever.
 * ARGV: value, settings, ticket, and the value it waits on under (default: the same).
 * One that waits on under a new value (a waiter for one resource) hands what it got to the first
 * in line, which may be itself under that value: what a node handed it before is not lost.
 */
const requeueScript = (keys: KeyLayout): LuaScript =>
  luaScript(
    keys === DERIVED_KEYS ? 'requeue' : `requeue-${keys.name}`,
    `${PROMOTE_FUNCTION_LUA}
local value = ARGV[1]
local ticket = ARGV[3]
local renamed = ARGV[4] or value
${keys.head(false)}
local freed = 0
for i = 1, n do
  local key = KEYS[i]
${keys.queue('queue', 'i')}
  local mine = redis.call('GET', key) == value
  local queued = redis.call('EXISTS', queue) == 1
  local had = queued and redis.call('ZREM', queue, value) == 1
  if had or (mine and queued) then redis.call('ZADD', queue, 'NX', ticket, renamed) end
  if mine then
    freed = freed + 1
    if not (renamed ~= value and queued and promote(key, ${keys.fence('i')}, queue, value)) then
      redis.call('DEL', key)
    end
  end
end
return freed
`,
  );

/**
 * Leave the queues: a waiter that gives up (its wait ran out, it was aborted). If the lock (or its
 * turn) had been handed to it, the next waiter gets it. ARGV: value, settings.
 */
const leaveQueueScript = (keys: KeyLayout): LuaScript =>
  luaScript(
    keys === DERIVED_KEYS ? 'leave-queue' : `leave-queue-${keys.name}`,
    `${PROMOTE_FUNCTION_LUA}
local value = ARGV[1]
${keys.head(false)}
local left = 0
for i = 1, n do
  local key = KEYS[i]
${keys.queue('queue', 'i')}
  left = left + redis.call('ZREM', queue, value)
  local current = redis.call('GET', key)
  if (current == value or current == '${TURN_MARK}' .. value) and not promote(key, ${keys.fence('i')}, queue, value) then
    redis.call('DEL', key)
  end
end
return left
`,
  );

/** The let-go scripts of one Redis server (fence counters and queues derived: key-layout.ts). */
export const RELEASE_SCRIPT = releaseScript(DERIVED_KEYS);
export const REQUEUE_SCRIPT = requeueScript(DERIVED_KEYS);
export const LEAVE_QUEUE_SCRIPT = leaveQueueScript(DERIVED_KEYS);
/** The let-go scripts of a Redis Cluster voter (every key declared: key-layout.ts). */
export const CLUSTER_RELEASE_SCRIPT = releaseScript(DECLARED_KEYS);
export const CLUSTER_REQUEUE_SCRIPT = requeueScript(DECLARED_KEYS);
export const CLUSTER_LEAVE_QUEUE_SCRIPT = leaveQueueScript(DECLARED_KEYS);

/** How a caller lets go of lock keys: the named operations behind the three scripts above. */
export type LetGo =
  /** A holder's release, or a failed attempt of a caller that does not wait. */
  | { readonly op: 'release' }
  /** A failed attempt of a caller that waits on at `ticket`, under `renamedTo` if given. */
  | { readonly op: 'requeue'; readonly ticket: string; readonly renamedTo?: string }
  /** A waiter that gives up. */
  | { readonly op: 'leave-queue' };

/** A holder's release (one shared instance: it is on every lock's path). */
export const RELEASE: LetGo = Object.freeze({ op: 'release' });

/** The let-go scripts of one key layout (key-layout.ts). */
export interface LetGoScripts {
  readonly release: LuaScript;
  readonly requeue: LuaScript;
  readonly leaveQueue: LuaScript;
}

/** The script of `scripts` that carries out a {@link LetGo} operation. */
export function letGoScript(how: LetGo, scripts: LetGoScripts): LuaScript {
  return how.op === 'release' ? scripts.release : how.op === 'requeue' ? scripts.requeue : scripts.leaveQueue;
}
