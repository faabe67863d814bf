import { createHash } from 'node:crypto';

/** A Lua script with its SHA1, called with EVALSHA and re-sent with EVAL after NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Lua shared by the scripts that hand a free lock to the next waiter in its queue.
 * `clock()` reads the node's TIME once per call, in ms. `promote(queue, turns, cause)` starts the
 * turn of the queue's first waiter (it must claim the lock before the turn ends, or it is skipped)
 * and wakes it on its engine's wake channel (ARGV[WAKE] prefix + the engine part of its value,
 * the text before the first ':'). The message is "<waiter value> <cause>"; an engine ignores a
 * cause it has already seen, so the same hand-over announced by every node wakes it once.
 */
function queueLua(turnArg: number, wakeArg: number): string {
  return `
local now_ms = false
local function clock()
  if not now_ms then
    local t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
local function promote(queue, turns, cause)
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if head then
    redis.call('HSET', turns, head, clock() + tonumber(ARGV[${turnArg}]))
    redis.call('PUBLISH', ARGV[${wakeArg}] .. string.match(head, '^[^:]*'), head .. ' ' .. cause)
  end
  return head
end
`;
}

/**
 * Acquire on one node, all-or-none over its resources, first come first served.
 * KEYS: guard marker, then per resource (n each, same hash tag per resource): lock keys, fence
 * counter keys, queue keys (sorted set: waiter value -> ticket), turn keys (hash: waiter value ->
 * node ms by which it must claim the free lock).
 * ARGV: value, ttl ms, restart guard ms (0 = off), fence counter idle ttl ms, ticket ('' = do not
 * queue: the caller will not wait), turn ms, queue idle ttl ms, wake channel prefix.
 * Returns {1, token1..tokenN} when granted; {0, ms, who} when busy: how long until it may be free
 * (the longest remaining lease, or the remaining turn of the waiter ahead; -1 if a key has no
 * expiry) and who has it (the holder's value, or the waiter whose turn it is); {-1, ms} when the
 * node abstains under the restart guard.
 *
 * A free lock goes to the first waiter in the queue, and only to it: a release wakes that waiter
 * alone instead of every waiter (which would then split the vote). A waiter that lets its turn
 * pass (it died, or stalls) is skipped by the next caller. The queue orders by the ticket the
 * client chose, the same on every node, so the nodes agree on who is first.
 *
 * The marker key has no expiry: it is missing only on a node that lost its data (or is new), and
 * such a node must not vote until every lease it may have granted and forgotten has run out.
 * A missing fence counter is seeded from the node's clock in microseconds, so it starts above any
 * token issued before it was lost.
 */
export const ACQUIRE = script(
  'acquire',
  `${queueLua(6, 8)}
local n = (#KEYS - 1) / 4
local value = ARGV[1]
local ticket = ARGV[5]
local guard = tonumber(ARGV[3])
if guard > 0 then
  local ready = redis.call('GET', KEYS[1])
  -- '0' means the guard has passed on this node: no clock read on the common path.
  if ready ~= '0' then
    if ready then
      ready = tonumber(ready)
    else
      ready = clock() + guard
      redis.call('SET', KEYS[1], string.format('%.0f', ready))
    end
    if clock() < ready then return {-1, ready - clock()} end
    redis.call('SET', KEYS[1], '0')
  end
end
local granted = false
if n == 1 and redis.call('EXISTS', KEYS[4]) == 0 then
  -- Nobody queues: the common, uncontended case.
  if not redis.call('SET', KEYS[2], value, 'NX', 'PX', ARGV[2]) then
    local busy = {0, redis.call('PTTL', KEYS[2]), redis.call('GET', KEYS[2])}
    if ticket ~= '' then
      redis.call('ZADD', KEYS[4], ticket, value)
      redis.call('PEXPIRE', KEYS[4], ARGV[7])
    end
    return busy
  end
  granted = true
end
if not granted then
  local busy = -2
  local holder = false
  for i = 2, n + 1 do
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl ~= -2 then
      if not holder then holder = redis.call('GET', KEYS[i]) end
      if pttl == -1 or busy == -1 then busy = -1 elseif pttl > busy then busy = pttl end
    else
      -- Free: ours if nobody queues ahead of us, or the one ahead let its turn pass.
      local queue, turns = KEYS[i + 2 * n], KEYS[i + 3 * n]
      local head = redis.call('ZRANGE', queue, 0, 0)[1]
      while head and head ~= value do
        local due = redis.call('HGET', turns, head)
        if not due then
          -- Nobody woke it (the lease ran out instead of being released): its turn starts now.
          due = clock() + tonumber(ARGV[6])
          promote(queue, turns, '')
        else
          due = tonumber(due)
        end
        if due > clock() then
          if not holder then holder = head end
          if busy ~= -1 and due - clock() > busy then busy = due - clock() end
          break
        end
        redis.call('ZREM', queue, head)
        redis.call('HDEL', turns, head)
        head = promote(queue, turns, head)
        -- The next one's turn has just started (unless it is us): wait for it.
      end
    end
  end
  if busy ~= -2 then
    if ticket ~= '' then
      for i = 2 * n + 2, 4 * n + 1 do
        if i <= 3 * n + 1 then redis.call('ZADD', KEYS[i], 'NX', ticket, value) end
        if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[i], ARGV[7]) end
      end
    end
    return {0, busy, holder}
  end
  for i = 2, n + 1 do
    redis.call('SET', KEYS[i], value, 'PX', ARGV[2])
    if ticket ~= '' then
      redis.call('ZREM', KEYS[i + 2 * n], value)
      redis.call('HDEL', KEYS[i + 3 * n], value)
    end
  end
end
local out = {1}
for i = 2, n + 1 do
  local fence = KEYS[i + n]
  local token = redis.call('INCR', fence)
  if token == 1 then
    -- The counter was missing (new resource, idle expiry, or lost in a restart): seed it from
    -- the clock in microseconds, above every token this node can have issued before.
    local t = redis.call('TIME')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', fence, string.format('%.0f', token))
  end
  redis.call('PEXPIRE', fence, ARGV[4])
  out[i] = token
end
return out
`,
);

/**
 * Second fencing round: raise each counter to at least the token chosen by the client, but only
 * while this client still holds every lock key on the node.
 * KEYS: lock keys (n), fence keys (n). ARGV: value, fence idle ttl ms, token1..tokenN.
 * Returns 1 when done, 0 when the lock is no longer held here.
 */
export const RAISE_FENCE = script(
  'raise-fence',
  `
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, n do
  local current = redis.call('GET', KEYS[i + n])
  if (not current) or tonumber(current) < tonumber(ARGV[i + 2]) then
    redis.call('SET', KEYS[i + n], ARGV[i + 2], 'PX', ARGV[2])
  end
end
return 1
`,
);

/**
 * Extend every lock key on the node to ttl, only if all still hold our value.
 * KEYS: lock keys. ARGV: value, ttl ms. Returns 1 when extended, 0 otherwise.
 */
export const EXTEND = script(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
);

/**
 * Release: delete each lock key that still holds our value (never another holder's).
 * KEYS: lock keys (n), queue keys (n), turn keys (n). ARGV: value, mode, ticket, turn ms, wake
 * channel prefix. Mode '1' (a holder releases): hand each freed lock to the first waiter in its
 * queue (start its turn, wake it). Mode '0' (an acquire attempt that failed frees its partial
 * grant): wake nobody, since nobody held the lock, and with a ticket, take our place back in a
 * queue that others wait in, since we retry. Returns the number of keys deleted.
 */
export const RELEASE = script(
  'release',
  `${queueLua(4, 5)}
local n = #KEYS / 3
local deleted = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    if ARGV[2] == '1' then
      promote(KEYS[i + n], KEYS[i + 2 * n], ARGV[1])
    elseif ARGV[3] ~= '' and redis.call('EXISTS', KEYS[i + n]) == 1 then
      redis.call('ZADD', KEYS[i + n], 'NX', ARGV[3], ARGV[1])
    end
  end
end
return deleted
`,
);

/**
 * Leave the queues: a waiter that gives up (its wait ran out, it was aborted) or that got the lock
 * on a majority while still queued on this node. When it was first in line for a free lock, the
 * next waiter's turn starts. KEYS: lock keys (n), queue keys (n), turn keys (n). ARGV: value,
 * turn ms, wake channel prefix. Returns the number of queues left.
 */
export const LEAVE_QUEUE = script(
  'leave-queue',
  `${queueLua(2, 3)}
local n = #KEYS / 3
local left = 0
for i = 1, n do
  local queue, turns = KEYS[i + n], KEYS[i + 2 * n]
  local first = redis.call('ZRANGE', queue, 0, 0)[1] == ARGV[1]
  left = left + redis.call('ZREM', queue, ARGV[1])
  redis.call('HDEL', turns, ARGV[1])
  if first and redis.call('EXISTS', KEYS[i]) == 0 then promote(queue, turns, ARGV[1]) end
end
return left
`,
);

/**
 * EXTEND for many locks in one call (the watchdogs' batch for one node and one tick).
 * ARGV: lock count, then per lock: key count, value, ttl ms. KEYS: the locks' keys, in order.
 * Returns one 1/0 per lock.
 */
export const EXTEND_MANY = script(
  'extend-many',
  `
local out = {}
local k = 1
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local count = tonumber(ARGV[a])
  local value = ARGV[a + 1]
  local ttl = ARGV[a + 2]
  a = a + 3
  local ok = 1
  for j = k, k + count - 1 do
    if redis.call('GET', KEYS[j]) ~= value then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for j = k, k + count - 1 do redis.call('PEXPIRE', KEYS[j], ttl) end
  end
  out[i] = ok
  k = k + count
end
return out
`,
);

/** Every script the engine runs, loaded on each (re)connection so calls rarely meet NOSCRIPT. */
export const ALL_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE,
  RAISE_FENCE,
  EXTEND,
  EXTEND_MANY,
  RELEASE,
  LEAVE_QUEUE,
];
