import { luaScript } from './lua.js';

/*
 * The ACL probe's script (voter/acl-probe.ts runs it): tries, with redis.pcall, every command the
 * engine's scripts call, and returns the ACL rules that were refused.
 */

/** Every command the engine's Lua scripts call (scripts/), as ACL rules. */
const SCRIPT_COMMANDS = [
  ['+set', "redis.pcall('SET', KEYS[1], '1', 'PX', 1000)"],
  ['+get', "redis.pcall('GET', KEYS[1])"],
  ['+pttl', "redis.pcall('PTTL', KEYS[1])"],
  ['+pexpire', "redis.pcall('PEXPIRE', KEYS[1], 1000)"],
  ['+incr', "redis.pcall('INCR', KEYS[1])"],
  ['+exists', "redis.pcall('EXISTS', KEYS[1])"],
  ['+zadd', "redis.pcall('ZADD', KEYS[2], 1, 'x')"],
  ['+zrem', "redis.pcall('ZREM', KEYS[2], 'x')"],
  ['+zpopmin', "redis.pcall('ZPOPMIN', KEYS[2])"],
  // Read-write locks (scripts/read.ts, the readers' hand-over in scripts/queue.ts). Run while
  // KEYS[1] is still the string set above: a command on a key of another type fails with WRONGTYPE
  // after the ACL let it through (not counted missing), and creates no hash that would outlive DEL.
  ['+hset', "redis.pcall('HSET', KEYS[1], 'x', '1')"],
  ['+hget', "redis.pcall('HGET', KEYS[1], 'x')"],
  ['+hdel', "redis.pcall('HDEL', KEYS[1], 'x')"],
  ['+hgetall', "redis.pcall('HGETALL', KEYS[1])"],
  ['+hexists', "redis.pcall('HEXISTS', KEYS[1], 'x')"],
  ['+zrange', "redis.pcall('ZRANGE', KEYS[2], 0, 0)"],
  ['+zscore', "redis.pcall('ZSCORE', KEYS[2], 'x')"],
  ['+del', "redis.pcall('DEL', KEYS[1], KEYS[2])"],
  ['+time', "redis.pcall('TIME')"],
  ['+scan', "redis.pcall('SCAN', '0', 'MATCH', KEYS[1], 'COUNT', 1)"],
  ['+publish', "redis.pcall('PUBLISH', ARGV[1], '')"],
] as const;

/** KEYS: a string key and a sorted-set key under the prefix. ARGV: a wake channel. */
export const ACL_PROBE = luaScript(
  'acl-probe',
  `
local missing = {}
local function check(rule, reply)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, "can't run this command", 1, true) then
      missing[#missing + 1] = rule
    elseif string.find(reply.err, 'channel', 1, true) then
      missing[#missing + 1] = 'channel'
    end
  end
end
${SCRIPT_COMMANDS.map(([rule, call]) => `check('${rule}', ${call})`).join('\n')}
return missing
`,
);
