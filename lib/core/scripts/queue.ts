import {
  READ_MARKER,
  LUA_HANDED_MESSAGE,
  LUA_TURN_MESSAGE,
  luaIsMultiResource,
  luaIsReader,
  luaWakeChannelOf,
  TURN_MARK,
} from './keys.js';
import { nextTokenLua } from './fence.js';
import { luaSetting } from './settings.js';

/*
 * Waiting in line, on the node. Per resource, beside the lock key, a sorted set holds the waiters'
 * values by ticket (the same ticket on every node, so the nodes agree on the order).
 *
 * Handing a lock over: when a holder releases and someone waits, the key goes to the first waiter,
 * for `turnMs` (a waiter that died or stalls holds the lock up no longer than that), and the node
 * tells the waiter's engine:
 * - a waiter for one resource is handed the lock itself (its value, with the next token and the
 *   node's clock in the message): once a majority has handed it over, it holds the lock without a
 *   round of its own. A node without the key's fence counter (maybe under its guard after a change
 *   of server or a clock marking, whose marker only an acquire reads) gives a turn instead;
 * - a waiter for several resources is given a turn: TURN_MARK + its value, which only it can take;
 * - readers at the head of the line are let in together: the key holds READ_MARKER for a turn,
 *   and each reader up to the first writer is told to claim it (read.ts).
 */

/**
 * Lua function promote(key, fence, queue, cause): hands the lock `key` to the first waiter in
 * `queue` and tells it; `fence` is the key's counter, all three declared keys; ARGV[2] the settings.
 * `cause` is the value of the one handing over. A waiter whose engine does not listen on this node
 * (its process is gone) is skipped, whatever it waits for: a turn nobody hears would hold the key
 * for `turnMs` for nobody (the simulator's seed 11000023: 324 of 358 turns on one key). Returns whether someone got it. Called only where a queue
 * exists: an uncontended release never parses the settings.
 */
export const PROMOTE_LUA = `
local function promote(key, fence, queue, cause)
  local turn_ms = ${luaSetting('ARGV[2]', 'turnMs')}
  while true do
    local popped = redis.call('ZPOPMIN', queue)
    local head = popped[1]
    if not head then return false end
    if ${luaIsReader('head')} then
      -- Readers stay in line until they claim, so that a writer behind them does not keep them out.
      redis.call('ZADD', queue, popped[2], head)
      local told = false
      local line = redis.call('ZRANGE', queue, 0, -1)
      for i = 1, #line do
        head = line[i]
        if not (${luaIsReader('head')}) then break end
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE}) > 0 then
          told = true
        else
          redis.call('ZREM', queue, head)
        end
      end
      if told then
        redis.call('SET', key, '${READ_MARKER}', 'PX', turn_ms)
        return true
      end
    elseif ${luaIsMultiResource('head')} then
      redis.call('SET', key, '${TURN_MARK}' .. head, 'PX', turn_ms)
      if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE}) > 0 then return true end
      redis.call('DEL', key)
    else
      -- The clock is read before the lease starts: the waiter never overestimates it.
      local now = redis.call('TIME')${nextTokenLua({ fence: 'fence', settings: 'ARGV[2]' })}
      if token then
        redis.call('SET', key, head, 'PX', turn_ms)
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_HANDED_MESSAGE}) > 0 then return true end
      else
        redis.call('SET', key, '${TURN_MARK}' .. head, 'PX', turn_ms)
        if redis.call('PUBLISH', ${luaWakeChannelOf('head')}, ${LUA_TURN_MESSAGE}) > 0 then return true end
      end
      redis.call('DEL', key)
    end
  end
end
`;
