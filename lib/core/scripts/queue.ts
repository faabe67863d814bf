import { READ_MARKER } from '../keys.js';
import { luaIsMultiResource, luaIsReader, luaWakeChannelOf, TURN_MARK } from './lock-value.js';
import { nextTokenLua } from './fence.js';
import { HAND_OVER_SETTINGS, luaSetting, type SettingsFields } from './settings.js';
import { LUA_HANDED_MESSAGE, LUA_TURN_MESSAGE } from './wake-message.js';

/*
 * Waiting in line, on the node. Per resource, beside the lock key and under its hash tag, a
 * sorted set (lock key + QUEUE_SUFFIX, keys.ts) holds the waiters' values by ticket (the same ticket on
 * every node, so the nodes agree on the order).
 *
 * Handing a lock over: when a holder releases and someone waits, the lock key does not become free.
 * It goes to the first waiter in the queue, for `turnMs` (a short lease: a waiter that died or
 * stalls holds the lock up no longer than that), and the node tells the waiter's engine so:
 * - A waiter for one resource is handed the lock itself: the key holds its value, and the message
 *   carries the fencing token and the node's clock. Once a majority of nodes has handed it over,
 *   the waiter holds the lock without another round (see queue/hand-off.ts), and, unless it
 *   released it first, extends it halfway through the turn, to end as a grant of its own ttl
 *   would have. A node without the key's fence counter (it may be under its restart guard after
 *   a change of server or the clock guard's marking, whose marker only an acquire reads) hands
 *   over nothing: it gives that waiter a turn, as below, so that no hand-over of a node under its
 *   guard counts, for any client.
 * - A waiter for several resources (its value ends with MULTI_RESOURCE_MARK) is given a turn: the
 *   key holds TURN_MARK + its value, which only that waiter can take (an acquire that finds its
 *   own turn claims it), once it has its turn on every resource.
 * - Readers (values ending with READ_MARK) at the head of the line are let in together: the key
 *   holds READ_MARKER for a turn and each reader up to the first writer is given a turn to claim
 *   (scripts/read.ts).
 * Every other caller finds the key busy.
 */

/**
 * Lua function promote(key, fence, queue, cause): hands the lock `key` to the first waiter in its
 * `queue` (taking it out of the queue) and tells it on its engine's channel (see wake-message.ts);
 * `fence` is the key's fence counter. The three are declared keys of the script that defines it,
 * and ARGV[2] is its settings argument (settings.ts), whose fields are `fields`. `cause` is the value of the one handing over
 * (releasing, giving up), out of the queue already. A waiter whose engine does not listen on this
 * node (its process is gone) is skipped. Returns whether someone got it. Called only where a queue
 * exists: the settings are parsed there, never on an uncontended release.
 */
export function promoteFunctionLua(fields: SettingsFields): string {
  return `
local function promote(key, fence, queue, cause)
  local turn_ms = ${luaSetting('ARGV[2]', 'turnMs', fields)}
  while true do
    local popped = redis.call('ZPOPMIN', queue)
    local head = popped[1]
    if not head then return false end
    if ${luaIsReader('head')} then
      -- Readers at the head of the line go in together (scripts/read.ts): the key becomes the
      -- readers' for a turn, and each is told to claim it. They stay in line until they claim, so
      -- that a writer behind them does not keep them out (a reader needs no writer ahead of it).
      redis.call('ZADD', queue, popped[2], head)
      local told = false
      local line = redis.call('ZRANGE', queue, 0, -1)
      for i = 1, #line do
        head = line[i]
        if not (${luaIsReader('head')}) then break end
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE}) > 0 then
          told = true
        else
          redis.call('ZREM', queue, head) -- its engine is gone
        end
      end
      if told then
        redis.call('SET', key, '${READ_MARKER}', 'PX', turn_ms)
        return true
      end
    elseif ${luaIsMultiResource('head')} then
      redis.call('SET', key, '${TURN_MARK}' .. head, 'PX', turn_ms)
      redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE})
      return true
    else
      -- The clock is read before the lease starts, so that the waiter never overestimates it.
      local now = redis.call('TIME')${nextTokenLua({ fence: 'fence', settings: 'ARGV[2]', fields })}
      if token then
        redis.call('SET', key, head, 'PX', turn_ms)
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_HANDED_MESSAGE}) > 0 then return true end
      else
        -- No counter: the node may be under its restart guard (see nextTokenLua), which only an
        -- acquire reads. A turn instead: the waiter's claim is an acquire, which abstains while
        -- the guard runs (the waiter learns until when) and seeds the counter after it.
        redis.call('SET', key, '${TURN_MARK}' .. head, 'PX', turn_ms)
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE}) > 0 then return true end
      end
      redis.call('DEL', key)
    end
  end
end
`;
}

/** {@link promoteFunctionLua} of the let-go scripts, whose settings argument is the hand-over one. */
export const PROMOTE_FUNCTION_LUA = promoteFunctionLua(HAND_OVER_SETTINGS);
