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
 * Acquire on one node, all-or-none over its resources.
 * KEYS: guard marker, lock keys (n), fence counter keys (n, same hash tags as the lock keys).
 * ARGV: value, ttl ms, restart guard ms (0 = off), fence counter idle ttl ms.
 * Returns {1, token1..tokenN} when granted, {0, pttl, holder value} when busy (longest remaining
 * lease of the busy keys, -1 if one has no expiry; the value of the first busy key), {-1, ms} when the node abstains under the restart guard.
 *
 * The marker key has no expiry: it is missing only on a node that lost its data (or is new), and
 * such a node must not vote until every lease it may have granted and forgotten has run out.
 * A missing fence counter is seeded from the node's clock in microseconds, so it starts above any
 * token issued before it was lost.
 */
export const ACQUIRE = script(
  'acquire',
  `
local n = (#KEYS - 1) / 2
local guard = tonumber(ARGV[3])
if guard > 0 then
  local ready = redis.call('GET', KEYS[1])
  -- '0' means the guard has passed on this node: no clock read on the common path.
  if ready ~= '0' then
    local t = redis.call('TIME')
    local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if ready then
      ready = tonumber(ready)
    else
      ready = now_ms + guard
      redis.call('SET', KEYS[1], string.format('%.0f', ready))
    end
    if now_ms < ready then return {-1, ready - now_ms} end
    redis.call('SET', KEYS[1], '0')
  end
end
if n == 1 then
  if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {0, redis.call('PTTL', KEYS[2]), redis.call('GET', KEYS[2])}
  end
else
  local busy = -2
  local holder = false
  for i = 2, n + 1 do
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl ~= -2 then
      if not holder then holder = redis.call('GET', KEYS[i]) end
      if pttl == -1 or busy == -1 then busy = -1 elseif pttl > busy then busy = pttl end
    end
  end
  if busy ~= -2 then return {0, busy, holder} end
  for i = 2, n + 1 do redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2]) end
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
 * Release: delete each lock key that still holds our value (never another holder's). With
 * ARGV[2] = '1', tell waiters on the key's channel. A failed attempt frees its partial grants
 * without telling: nobody held the lock, and waking every waiter would only start another round
 * of colliding attempts. KEYS: lock keys. ARGV: value, notify ('1' or '0'). Returns the number deleted.
 */
export const RELEASE = script(
  'release',
  `
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    if ARGV[2] == '1' then redis.call('PUBLISH', KEYS[i] .. ':released', ARGV[1]) end
    deleted = deleted + 1
  end
end
return deleted
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
export const ALL_SCRIPTS: readonly LuaScript[] = [ACQUIRE, RAISE_FENCE, EXTEND, EXTEND_MANY, RELEASE];
