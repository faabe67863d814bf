import { luaScript } from './lua-script.js';

/**
 * Seeds the restart-guard markers of the slots one shard serves, where they are missing, as
 * the restart-guard block of nextTokenLua (fence.ts, inlined in the acquire script) would on a
 * slot's first grant (a cluster voter passes each slot's marker to the acquire script as its last
 * key: voter/ioredis-cluster/slots.ts): now + guard (server clock), or '0'
 * with the guard off (trusted: the engine was told these servers cannot have granted anything).
 * Run when a cluster voter first connects, in chunks of a shard's slots, so that a new cluster
 * abstains once for the guard, not once per slot at the first lock each slot sees. A chunk whose
 * first and last markers are in place was seeded before (a shard loses all of its keys or none:
 * preflight's noeviction rule; a resharded slot moves with its marker) and costs two GETs.
 * KEYS: none: the markers (ARGV[2..]) are the shard's own keys, in many slots, which a script
 * without a shebang may touch on the node that serves them; the call is sent to that node. Declared
 * keys of several slots would be refused (CROSSSLOT): with the identity check's scan of the fence
 * counters (identity.ts), the only keys a script touches undeclared.
 * ARGV: guard ms, marker keys. Returns the number of markers written.
 */
export const SEED_SLOT_MARKERS = luaScript(
  'seed-slot-markers',
  `
local guard = tonumber(ARGV[1])
local t = redis.call('TIME')
local value = guard <= 0 and '0' or string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + guard)
local function settled(ready) return (guard <= 0 and ready == '0') or (guard > 0 and ready) end
-- Seeded before (the usual case: a cluster that lost no data): nothing to write.
if settled(redis.call('GET', ARGV[2])) and settled(redis.call('GET', ARGV[#ARGV])) then return 0 end
local written = 0
for i = 2, #ARGV do
  local ready = redis.call('GET', ARGV[i])
  if not settled(ready) then
    redis.call('SET', ARGV[i], value)
    written = written + 1
  end
end
return written
`,
);
