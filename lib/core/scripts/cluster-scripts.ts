import { acquireScript } from './acquire.js';
import { luaScript, luaString, type LuaScript } from './lua-script.js';
import type { ScriptSettings } from './settings.js';

/*
 * The scripts a Redis Cluster voter runs besides the single-server ones (which it runs as they
 * are: each touches the keys of one hash tag).
 *
 * acquire: on one server the restart-guard marker is one key, compiled into the script as a
 *   literal. In a cluster a script may only touch keys of the slot its declared keys hash to (and
 *   keys of other slots only on the node that serves them), and the marker must sit on every
 *   shard anyway: a shard that lost its data must abstain, the others must not. So a cluster
 *   voter keeps one marker per slot (voter/ioredis-cluster/slots.ts) and passes the marker of the lock
 *   keys' slot as the LAST key. The Lua is the single-server acquire with two textual changes,
 *   checked here so that a change to acquire.ts that breaks them fails when the engine is built,
 *   not in production: the marker literal becomes KEYS[#KEYS], and the lock keys are
 *   KEYS[1 .. #KEYS - 1]. The single-server scripts, and their hot path, stay exactly as they are.
 */

/**
 * Acquire on one cluster slot. KEYS: lock keys (one slot), then that slot's marker key.
 * ARGV and replies: as acquireScript. `settings` compiled (compileSettings), as for acquireScript.
 */
export function clusterAcquireScript(settings: ScriptSettings): LuaScript {
  const source = acquireScript(settings).source;
  const literal = luaString(settings.guardKey);
  const lockKeyCount = 'local n = #KEYS\n';
  const marker = source.split(literal).length - 1;
  if (marker === 0 || source.split(lockKeyCount).length !== 2 || source.includes('#KEYS - 1')) {
    throw new Error(
      'acquire.ts changed shape: the cluster variant expects the marker literal and one "local n = #KEYS"',
    );
  }
  return luaScript(
    'acquire-cluster',
    source.replaceAll(literal, 'KEYS[#KEYS]').replace(lockKeyCount, 'local n = #KEYS - 1\n'),
  );
}

/**
 * Seeds the restart-guard markers of the slots one shard serves, where they are missing, as
 * the restart-guard block of nextTokenLua (fence.ts, inlined in the acquire script) would on a
 * slot's first grant: now + guard (server clock), or '0'
 * with the guard off (trusted: the engine was told these servers cannot have granted anything).
 * Run when a cluster voter first connects, in chunks of a shard's slots, so that a new cluster
 * abstains once for the guard, not once per slot at the first lock each slot sees. A chunk whose
 * first and last markers are in place was seeded before (a shard loses all of its keys or none:
 * preflight's noeviction rule; a resharded slot moves with its marker) and costs two GETs.
 * KEYS: none: the markers (ARGV[2..]) are the shard's own keys, in many slots, which a script
 * without a shebang may touch on the node that serves them; the call is sent to that node.
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
