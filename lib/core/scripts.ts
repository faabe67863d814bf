import { createHash } from 'node:crypto';
import { FENCE_SUFFIX, MULTI_RESOURCE_MARK, QUEUE_SUFFIX, WAKE_CHANNEL_PREFIX } from './keys.js';

/** A Lua script with its SHA1, called with EVALSHA and re-sent with EVAL after NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Engine settings compiled into its scripts, so that no call has to send them. */
export interface ScriptSettings {
  /** Restart guard in ms, 0 when off. */
  readonly guardMs: number;
  /** The restart-guard marker key. */
  readonly guardKey: string;
  /** Idle expiry of the fence counters, ms. */
  readonly fenceIdleMs: number;
  /** How long a waiter whose turn came has to claim the lock, ms. */
  readonly turnMs: number;
  /**
   * Idle expiry of a queue, ms: every attempt of a waiter renews it, and waiters try at least
   * this often (they re-check every second), so it only ends queues whose waiters are all gone.
   */
  readonly queueIdleMs: number;
}

/** The scripts of one engine. */
export interface EngineScripts {
  readonly acquire: LuaScript;
  readonly release: LuaScript;
  readonly leaveQueue: LuaScript;
  /** All of them, loaded on each (re)connection so that calls rarely meet NOSCRIPT. */
  readonly all: readonly LuaScript[];
}

/*
 * Per resource, a node holds the lock key (a string: the holder's value) and, under the same hash
 * tag, keys named after it: the fence counter (lock key + FENCE_SUFFIX) and the queue of waiters
 * (QUEUE_SUFFIX: a sorted set of waiter values by ticket). Scripts take only the lock keys and
 * derive the others, and the engine's settings are compiled in: every argument costs encoding and
 * parsing on each node, on the latency path.
 *
 * Handing a lock over: when a holder releases and someone waits, the lock key does not become free.
 * It goes to the first waiter in the queue, for TURN ms (a short lease: a waiter that died or
 * stalls holds the lock up no longer than that), and the node tells the waiter's engine so:
 * - A waiter for one resource is handed the lock itself: the key holds its value, and the message
 *   carries the fencing token and the node's clock. Once a majority of nodes has handed it over,
 *   the waiter holds the lock without another round (see Redlock.grantFromHandOffs), and, unless
 *   it released it first, extends it halfway through the turn, to end as a grant of its own ttl
 *   would have.
 * - A waiter for several resources (its value ends with MULTI_RESOURCE_MARK) is given a turn: the
 *   key holds TURN_MARK + its value, which only that waiter can take (an acquire that finds its
 *   own turn claims it), once it has its turn on every resource.
 * Every other caller finds the key busy.
 */

/** Prefix of a lock key's value while it waits for the waiter named after it ('~' is no value's). */
const TURN_MARK = '~';

/**
 * Lua that gives the next fence token of the counter `fence` in `token`. A missing counter is
 * seeded from the node's clock in microseconds, so it starts above any token issued before it was
 * lost. Its idle expiry is set when seeded and renewed every 64 grants: a counter that expires
 * anyway is seeded again, above every earlier token. `onMissing` runs first when it was missing.
 */
function nextTokenLua(fenceIdleMs: number, onMissing = ''): string {
  return `
  local token = redis.call('INCR', fence)
  if token == 1 then
    local t${onMissing}
    t = t or redis.call('TIME')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', fence, string.format('%.0f', token), 'PX', ${fenceIdleMs})
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', fence, ${fenceIdleMs})
  end`;
}

/**
 * Lua shared by the scripts that hand a lock over. `promote(key, cause)` hands the lock to the
 * first waiter in its queue (taking it out of the queue) and tells it on its engine's channel
 * (WAKE_CHANNEL_PREFIX + the engine part of its value, the text before the first ':'):
 * "<value> <cause> <token> <node clock, us>" when handed the lock, "<value> <cause>" when
 * given a turn. `cause` is the value of the one handing over (releasing, giving up), out of the
 * queue already. A waiter whose engine does not listen on this node (its process is gone) is
 * skipped. Returns whether someone got it.
 */
function queueLua(turnMs: number, fenceIdleMs: number): string {
  return `
local function promote(key, cause)
  local queue = key .. '${QUEUE_SUFFIX}'
  while true do
    local head = redis.call('ZPOPMIN', queue)[1]
    if not head then return false end
    local channel = '${WAKE_CHANNEL_PREFIX}' .. string.match(head, '^[^:]*')
    if string.sub(head, -1) == '${MULTI_RESOURCE_MARK}' then
      redis.call('SET', key, '${TURN_MARK}' .. head, 'PX', ${turnMs})
      redis.call('PUBLISH', channel, head .. ' ' .. cause)
      return true
    end
    -- The clock is read before the lease starts, so that the waiter never overestimates it.
    local now = redis.call('TIME')
    redis.call('SET', key, head, 'PX', ${turnMs})
    local fence = key .. '${FENCE_SUFFIX}'${nextTokenLua(fenceIdleMs)}
    local message = head .. ' ' .. cause .. ' ' .. string.format('%.0f', token) .. ' ' ..
      now[1] .. string.format('%06d', tonumber(now[2]))
    if redis.call('PUBLISH', channel, message) > 0 then return true end
    redis.call('DEL', key)
  end
end
`;
}

/**
 * The restart guard, when on, run when a fence counter was missing (`fence`: its key; the caller
 * has just created it with INCR). The marker key has no expiry: it is missing only on a node that
 * lost its data (or is new), and such a node must not vote until every lease it may have granted
 * and forgotten has run out. A node that lost its data has lost every fence counter too, so its
 * first grant of any resource comes here: the usual grant reads neither the marker nor the clock.
 * '0' means the guard has passed on this node. While it abstains, the node undoes this grant (the
 * lock keys it just took, and the counter, so that the next attempt comes here again) and replies
 * {-1, ms until it votes}. Leaves the TIME reply it read in `t`, which seeding reuses.
 */
function guardLua(guardMs: number, guardKey: string): string {
  if (guardMs <= 0) return '';
  const marker = luaString(guardKey);
  return `
    local ready = redis.call('GET', ${marker})
    if ready ~= '0' then
      t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      if ready then
        ready = tonumber(ready)
      else
        ready = now + ${guardMs}
        redis.call('SET', ${marker}, string.format('%.0f', ready))
      end
      if now < ready then
        for j = 1, n do
          if redis.call('GET', KEYS[j]) == value then redis.call('DEL', KEYS[j]) end
        end
        redis.call('DEL', fence)
        return {-1, ready - now}
      end
      redis.call('SET', ${marker}, '0')
    end`;
}

/**
 * Acquire on one node, all-or-none over its resources.
 * KEYS: lock keys. ARGV: value, ttl ms, ticket ('' = do not queue: the caller will not wait).
 * Returns the token when one resource is granted (an integer: the usual grant builds no table),
 * {1, token1..tokenN} when several are; {0, ms, who, clock} when busy: how long until it may be
 * free (the longest remaining lease or turn; -1 if a key has no expiry), who has it (the value of
 * the first busy key: a holder's value, or a turn) and the node's clock in microseconds (what a
 * lock handed over later is timed against); {-1, ms} when the node abstains under the restart
 * guard. A key already handed to the caller (it holds the caller's value) counts as free.
 *
 * A caller that will wait joins the queue of each busy resource, by its ticket (the same on every
 * node, so the nodes agree on the order). A lock released while someone waits goes to the first
 * waiter in line (see promote), so a release wakes one waiter instead of all of them, and they do
 * not split the vote.
 */
function acquireLua({ guardMs, guardKey, fenceIdleMs, queueIdleMs }: ScriptSettings): string {
  return `
local n = #KEYS
local value = ARGV[1]
local granted = n == 1 and redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2])
if not granted then
  local turn = '${TURN_MARK}' .. value
  local busy = -2
  local holder = false
  for i = 1, n do
    local current = redis.call('GET', KEYS[i])
    if current and current ~= turn and current ~= value then
      local pttl = redis.call('PTTL', KEYS[i])
      if not holder then holder = current end
      if pttl == -1 or busy == -1 then busy = -1 elseif pttl > busy then busy = pttl end
    end
  end
  if busy ~= -2 then
    if ARGV[3] ~= '' then
      for i = 1, n do
        local queue = KEYS[i] .. '${QUEUE_SUFFIX}'
        redis.call('ZADD', queue, 'NX', ARGV[3], value)
        if redis.call('PTTL', queue) < ${queueIdleMs} then redis.call('PEXPIRE', queue, ${queueIdleMs}) end
      end
    end
    local now = redis.call('TIME')
    return {0, busy, holder, tonumber(now[1]) * 1000000 + tonumber(now[2])}
  end
  -- Every key is free, our turn, or already handed to us.
  for i = 1, n do
    redis.call('SET', KEYS[i], value, 'PX', ARGV[2])
    if ARGV[3] ~= '' then redis.call('ZREM', KEYS[i] .. '${QUEUE_SUFFIX}', value) end
  end
end
local out = n > 1 and {1}
for i = 1, n do
  -- A missing counter: a new resource, its idle expiry, or a node that lost its data.
  local fence = KEYS[i] .. '${FENCE_SUFFIX}'${nextTokenLua(fenceIdleMs, guardLua(guardMs, guardKey))}
  if not out then return token end
  out[i + 1] = token
end
return out
`;
}

/**
 * Release: free each lock key that still holds our value (never another holder's).
 * KEYS: lock keys. ARGV: value; then '' when a holder releases, or, when an acquire attempt that
 * failed frees its partial grant, its ticket ('-' for none); then, optionally, the value under
 * which that caller waits on (default: the same).
 * A holder's release hands each lock to the first waiter in its queue, and first takes the holder
 * out of the queues (and turns) where an earlier attempt left it. A failed attempt that waits
 * frees what it got and keeps its place in the queue (it retries after a short back-off). It
 * must not keep what it got: acquirers that split the nodes between them would each keep their
 * share and wait for the others forever. One that waits on under a new value (a waiter for one
 * resource) hands what it got on to the first in line; one that does not wait, like a holder.
 * Returns the number of keys freed.
 */
function releaseLua({ turnMs, fenceIdleMs }: ScriptSettings): string {
  return `${queueLua(turnMs, fenceIdleMs)}
local value = ARGV[1]
local after = ARGV[2]
local renamed = ARGV[3] or value
local freed = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local queue = key .. '${QUEUE_SUFFIX}'
  local current = redis.call('GET', key)
  local queued = redis.call('EXISTS', queue) == 1
  -- A holder may also find its own turn here: this node handed it the lock after it had got a
  -- majority elsewhere. Left alone, the turn would keep the node from voting until it lapsed.
  local mine = current == value or (after == '' and current == '${TURN_MARK}' .. value)
  if mine then freed = freed + 1 end
  if after ~= '' and after ~= '-' then
    local had = queued and redis.call('ZREM', queue, value) == 1
    if had or (mine and queued) then redis.call('ZADD', queue, 'NX', after, renamed) end
    -- One that waits on under a new value hands what it got to the first in line, which may be
    -- itself under that value: what a node handed it before is not lost.
    if mine and not (renamed ~= value and queued and promote(key, value)) then redis.call('DEL', key) end
  else
    if queued and after == '' then redis.call('ZREM', queue, value) end
    if mine and not (queued and promote(key, value)) then redis.call('DEL', key) end
  end
end
return freed
`;
}

/**
 * Leave the queues: a waiter that gives up (its wait ran out, it was aborted). If the lock (or its
 * turn) had been handed to it, the next waiter gets it. KEYS: lock keys. ARGV: value. Returns the
 * number of queues left.
 */
function leaveQueueLua({ turnMs, fenceIdleMs }: ScriptSettings): string {
  return `${queueLua(turnMs, fenceIdleMs)}
local left = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  left = left + redis.call('ZREM', key .. '${QUEUE_SUFFIX}', ARGV[1])
  local current = redis.call('GET', key)
  if (current == ARGV[1] or current == '${TURN_MARK}' .. ARGV[1]) and not promote(key, ARGV[1]) then
    redis.call('DEL', key)
  end
end
return left
`;
}

/**
 * Second fencing round: raise each counter to at least the token chosen by the client, but only
 * while this client still holds every lock key on the node.
 * KEYS: lock keys. ARGV: value, fence idle ttl ms, token1..tokenN.
 * Returns 1 when done, 0 when the lock is no longer held here.
 */
export const RAISE_FENCE = script(
  'raise-fence',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  local fence = KEYS[i] .. '${FENCE_SUFFIX}'
  local current = redis.call('GET', fence)
  if (not current) or tonumber(current) < tonumber(ARGV[i + 2]) then
    redis.call('SET', fence, ARGV[i + 2], 'PX', ARGV[2])
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

/** A Lua string literal for any text: bytes other than plain ASCII letters and digits escaped. */
function luaString(text: string): string {
  let literal = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const plain = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122);
    literal += plain ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`;
  }
  return `"${literal}"`;
}

/** Builds an engine's scripts, with its settings compiled in. */
export function engineScripts(settings: ScriptSettings): EngineScripts {
  const exact = (ms: number) => Math.max(0, Math.ceil(ms));
  const compiled = {
    guardMs: exact(settings.guardMs),
    guardKey: settings.guardKey,
    fenceIdleMs: exact(settings.fenceIdleMs),
    turnMs: exact(settings.turnMs),
    queueIdleMs: exact(settings.queueIdleMs),
  };
  const acquire = script('acquire', acquireLua(compiled));
  const release = script('release', releaseLua(compiled));
  const leaveQueue = script('leave-queue', leaveQueueLua(compiled));
  return {
    acquire,
    release,
    leaveQueue,
    all: [acquire, release, leaveQueue, RAISE_FENCE, EXTEND, EXTEND_MANY],
  };
}
