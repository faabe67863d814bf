import { READ_MARKER, luaIsReader } from './keys.js';
import { nextTokenLua } from './fence.js';
import { luaScript } from './lua.js';
import { PROMOTE_LUA } from './queue.js';
import { luaClockReadings, luaSetting } from './settings.js';

/*
 * Read-write locks on one node. A writer is a plain lock (scripts/acquire.ts, unchanged): its
 * value sits in the lock key. Readers hold the key together: it holds READ_MARKER (keys.ts), with
 * the longest reader's lease, so a writer's acquire finds it busy and queues; each reader has its
 * own entry in the readers hash beside it (reader value -> the node's clock, ms, at which its
 * lease ends), so a crashed reader's lease ends by itself. A reader's value ends with READ_MARK
 * (lock-value.ts): the voters route its operations here, and a release lets every reader at the
 * head of the line in together (scripts/queue.ts, promote).
 *
 * A read grant needs no writer in the key and no writer waiting ahead of it in the queue (so a
 * stream of readers cannot starve a writer); a write grant needs the key free, so no reader. A
 * read's fencing token is the counter as it is (not bumped): at least the last write's token, and
 * the next write's INCR lies above it.
 *
 * KEYS, all under the resource's hash tag: lock key, fence counter, queue, readers hash (then,
 * for READ_ACQUIRE, the restart-guard marker). ARGV[1] the reader's value, ARGV[2] the settings
 * (settings.ts).
 */

/**
 * Lua function live_until(readers, now_ms): forgets the readers whose lease ended, and returns
 * when the last live one's ends (0: none is left).
 */
const LIVE_UNTIL_LUA = `
local function live_until(readers, now_ms)
  local latest = 0
  local all = redis.call('HGETALL', readers)
  for i = 1, #all, 2 do
    local ends = tonumber(all[i + 1])
    if ends <= now_ms then redis.call('HDEL', readers, all[i]) elseif ends > latest then latest = ends end
  end
  return latest
end
`;

/** Lua: `now_ms` (the node's clock, ms) and `clock_us` from one TIME. */
const NOW_LUA = `
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local clock_us = tonumber(t[1]) * 1000000 + tonumber(t[2])`;

/**
 * A reader's acquire. ARGV: value, settings, ttl ms, ticket ('' = do not queue), seed proposal
 * (µs, or ''). Replies as the acquire script does for one resource (decodeAcquireReply): the token,
 * {2, token, clock} under the clock guard, {0, ms, holder, clock} busy (queued by ticket), {-1, ms}
 * abstaining. A missing fence counter consults the restart guard (the marker, KEYS[5]), as a
 * write does; the identity guard is the voter's own (voter/script-voter.ts).
 */
export const READ_ACQUIRE_SCRIPT = luaScript(
  'read-acquire',
  `${PROMOTE_LUA}
local key, fence, queue, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value = ARGV[1]
local queued = redis.call('EXISTS', queue) == 1
local current = redis.call('GET', key)
if not current and queued then
  -- Free, with a line: the last holder's lease ran out, nobody handed it over. Hand it over now.
  promote(key, fence, queue, value)
  current = redis.call('GET', key)
  queued = redis.call('EXISTS', queue) == 1
end${NOW_LUA}
local busy = nil
local holder = current
if current and current ~= '${READ_MARKER}' then
  busy = redis.call('PTTL', key) -- a writer, its turn, or another use of the key (a semaphore)
elseif queued then
  -- No writer holds it; a writer waiting ahead of this reader keeps it out all the same.
  local mine = tonumber(redis.call('ZSCORE', queue, value) or ARGV[4])
  local line = redis.call('ZRANGE', queue, 0, -1, 'WITHSCORES')
  for i = 1, #line, 2 do
    local waiting = line[i]
    if not (${luaIsReader('waiting')}) then
      if not mine or tonumber(line[i + 1]) < mine then
        busy = current and redis.call('PTTL', key) or -1
        holder = waiting
      end
      break
    end
  end
end
if busy then
  if ARGV[4] ~= '' then
    redis.call('ZADD', queue, 'NX', ARGV[4], value)
    local queue_idle_ms = ${luaSetting('ARGV[2]', 'queueIdleMs')}
    if redis.call('PTTL', queue) < queue_idle_ms then redis.call('PEXPIRE', queue, queue_idle_ms) end
  end
  return {0, busy, holder, clock_us}
end
local read_token = tonumber(redis.call('GET', fence))
local read_abstain, read_behind = nil, nil
if not read_token then
  -- A missing counter: a new resource, its idle expiry, or a node that lost its data.${nextTokenLua({ fence: 'fence', marker: 'KEYS[5]', proposal: "tonumber(ARGV[5] or '')", settings: 'ARGV[2]' })}
  read_token, read_abstain, read_behind = token, abstain, clock_behind
end
if read_abstain then return {-1, read_abstain, read_behind} end
local ttl = tonumber(ARGV[3])
redis.call('HSET', readers, value, now_ms + ttl)
if redis.call('PTTL', key) < ttl then redis.call('SET', key, '${READ_MARKER}', 'PX', ttl) end
if redis.call('PTTL', readers) < ttl then redis.call('PEXPIRE', readers, ttl) end
if queued then redis.call('ZREM', queue, value) end
if ${luaClockReadings('ARGV[2]')} then return {2, read_token, clock_us} end
return read_token
`,
);

/**
 * A reader's extension: only while the key holds READ_MARKER and the reader's own lease has not
 * ended (it may have been re-taken by a writer since). The key's lease follows the longest live
 * reader's. KEYS: lock key, readers. ARGV: value, ttl ms, and `c` when the engine runs the clock
 * guard. Returns 1 when extended, 0 otherwise; with `c`, the node's clock in microseconds instead,
 * negated when not extended, as EXTEND replies (extend.ts): a step of the node's clock is seen in
 * a reader's extension as in a writer's, and the refusal's clock counts too.
 */
export const READ_EXTEND_SCRIPT = luaScript(
  'read-extend',
  `${LIVE_UNTIL_LUA}${NOW_LUA}
local ok = 0
if redis.call('GET', KEYS[1]) == '${READ_MARKER}' then
  local ends = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
  if ends and ends > now_ms then
    redis.call('HSET', KEYS[2], ARGV[1], now_ms + tonumber(ARGV[2]))
    local latest = live_until(KEYS[2], now_ms)
    redis.call('PEXPIRE', KEYS[1], latest - now_ms)
    redis.call('PEXPIRE', KEYS[2], latest - now_ms)
    ok = 1
  end
end
if ARGV[3] then
  if ok == 1 then return clock_us end
  return -clock_us
end
return ok
`,
  { allowOom: true },
);

/**
 * A reader lets go. ARGV: value, settings, operation ('release' | 'requeue' | 'leave-queue'),
 * then for 'requeue' the ticket and the value it waits on under (default: the same). The reader's
 * entry goes; when it was the last live reader, the key goes to the first in line (a writer, or
 * the readers at the head) or is freed. Replies 1 when the reader held it here, else 0.
 */
export const READ_LET_GO_SCRIPT = luaScript(
  'read-let-go',
  `${PROMOTE_LUA}${LIVE_UNTIL_LUA}
local key, fence, queue, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value = ARGV[1]
local queued = redis.call('EXISTS', queue) == 1
local mine = redis.call('HDEL', readers, value) == 1
if queued then
  local had = redis.call('ZREM', queue, value) == 1
  if ARGV[3] == 'requeue' and (had or mine) then redis.call('ZADD', queue, 'NX', ARGV[4], ARGV[5] or value) end
end
if not (mine and redis.call('GET', key) == '${READ_MARKER}') then return mine and 1 or 0 end${NOW_LUA}
local latest = live_until(readers, now_ms)
if latest > 0 then
  redis.call('PEXPIRE', key, latest - now_ms)
elseif not (queued and promote(key, fence, queue, value)) then
  redis.call('DEL', key)
end
return 1
`,
  { allowOom: true },
);

/**
 * A reader's second fencing round: raises the counter to the read's token (the max its granting
 * majority returned), so that a majority holds counter >= it and every later write's token lies
 * above it. Only while the reader holds the key here, and the counter is still there (a counter
 * gone since the grant is not created: see RAISE_FENCE, fence.ts). KEYS: lock key, fence counter,
 * readers. ARGV: value, settings, token. Returns 1 when done, 0 when not held here or
 * the counter is gone.
 */
export const READ_RAISE_FENCE_SCRIPT = luaScript(
  'read-raise-fence',
  `
if redis.call('GET', KEYS[1]) ~= '${READ_MARKER}' or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then
  return 0
end
local current = redis.call('GET', KEYS[2])
if not current then return 0 end
if tonumber(current) < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ${luaSetting('ARGV[2]', 'fenceIdleMs')})
end
return 1
`,
);

/**
 * The live readers of a lock key (read-only): their values, while the key holds READ_MARKER.
 * KEYS: lock key, readers. Returns the values (empty when readers do not hold it).
 */
export const READ_INSPECT_SCRIPT = luaScript(
  'read-inspect',
  `
if redis.call('GET', KEYS[1]) ~= '${READ_MARKER}' then return {} end${NOW_LUA}
local all = redis.call('HGETALL', KEYS[2])
local live = {}
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) > now_ms then live[#live + 1] = all[i] end
end
return live
`,
  { readOnly: true },
);

/** READ_INSPECT's reply: the live readers' values. */
export function decodeReadersReply(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map(String) : [];
}
