import { PERMITS_MARK, READ_MARKER, TURN_MARK } from './keys.js';
import { luaScript } from './lua.js';
import { nextTokenLua } from './fence.js';
import { abstaining, type AbstainingVote } from './acquire.js';
import { luaClockReadings, luaSetting } from './settings.js';

/** A node's answer to a semaphore's slot search, decoded. */
export type SlotVote =
  /**
   * Granted the slot at `index` of the proposed order, with its fencing token; `free`: the indices
   * of the slots that were free (or the caller's) there, the granted one included; `clockUs`: the
   * node's clock in microseconds, when the engine runs the clock guard (as with a plain grant).
   */
  | {
      readonly kind: 'granted';
      readonly index: number;
      readonly token: number;
      readonly free: readonly number[];
      readonly clockUs?: number;
    }
  /**
   * Every slot busy: `retryAfterMs` until the first may be free (-1 unknown), a holder, the node's
   * clock, and the holder of each slot in the proposed order.
   */
  | {
      readonly kind: 'busy';
      readonly retryAfterMs: number;
      readonly holder: string;
      readonly clockUs: number;
      readonly holders: readonly string[];
    }
  /** The node abstains for `forMs` more ms (acquire.ts). */
  | AbstainingVote
  /** The key is in use otherwise: as a semaphore of `permits` permits (1: as a mutex, 0: by readers). */
  | { readonly kind: 'conflict'; readonly permits: number };

/**
 * A semaphore's slot search on one node: the slots are k keys, each a lock of its own (never a
 * count), and the caller proposes ONE order of them, the same for every node. The node grants the
 * first slot in that order that holds the caller's value or turn (a release handed it over, see
 * queue.ts), else the first free one, and issues that slot's fencing token (one counter per slot:
 * fencing is per key and permit). So nodes that agree on which slots are free grant the same slot,
 * and the vote does not split; a slot granted on a minority is given back by the caller at once.
 *
 * KEYS, for k slots: slot keys 1..k in the proposed order, their fence counters k+1..2k, the
 * semaphore's shared queue (2k+1), its lock key (2k+2: the marker of its use, `~permits:<k>`), the
 * lock key's fence counter (2k+3: present while the key is used as a mutex), then the restart-guard
 * marker (2k+4). All share the key's hash tag.
 * ARGV: value, settings, ttl ms, ticket ('' = do not queue), seed proposal (µs, or ''), permits.
 *
 * Replies: {1, index, token, free indices...} granted; {2, index, token, clock, free indices...}
 * granted under the clock guard (the settings ask for clock readings: settings.ts); {0, ms,
 * holder, clock, holder of each slot in the proposed order...} busy (queued by ticket); {-1, ms}
 * abstaining (restart guard); {-3, permits} the key is used with other permits (1: as a mutex, 0:
 * readers of a read-write lock hold it).
 */
export const SEMAPHORE_ACQUIRE_SCRIPT = luaScript(
  'semaphore-acquire',
  `
local k = (#KEYS - 4) / 2
local value = ARGV[1]
local lock_key = KEYS[2 * k + 2]
local marker = '${PERMITS_MARK}' .. ARGV[6]
local used = redis.call('GET', lock_key)
if used == '${READ_MARKER}' then return {-3, 0} end
if used and used ~= marker then
  local other = string.match(used, '^${PERMITS_MARK}(%d+)$')
  return {-3, tonumber(other or '1')}
end
if not used and redis.call('EXISTS', KEYS[2 * k + 3]) == 1 then return {-3, 1} end
redis.call('SET', lock_key, marker, 'PX', ${luaSetting('ARGV[2]', 'fenceIdleMs')})
local turn = '${TURN_MARK}' .. value
local slot = nil
local free = {}
local wait = -2
local holders = {}
for i = 1, k do
  local current = redis.call('GET', KEYS[i])
  if current == value or current == turn then
    slot = slot or i
    free[#free + 1] = i - 1
  elseif not current then
    free[#free + 1] = i - 1
  else
    holders[#holders + 1] = current
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl >= 0 and (wait < 0 or pttl < wait) then wait = pttl end
  end
end
slot = slot or (free[1] and free[1] + 1)
local queue = KEYS[2 * k + 1]
if not slot then
  if ARGV[4] ~= '' then
    redis.call('ZADD', queue, 'NX', ARGV[4], value)
    local queue_idle_ms = ${luaSetting('ARGV[2]', 'queueIdleMs')}
    if redis.call('PTTL', queue) < queue_idle_ms then redis.call('PEXPIRE', queue, queue_idle_ms) end
  end
  local now = redis.call('TIME')
  if wait == -2 then wait = -1 end
  return {0, wait, holders[1], tonumber(now[1]) * 1000000 + tonumber(now[2]), unpack(holders)}
end
redis.call('SET', KEYS[slot], value, 'PX', ARGV[3])
if ARGV[4] ~= '' then redis.call('ZREM', queue, value) end
local fence = KEYS[k + slot]${nextTokenLua({ fence: 'fence', marker: 'KEYS[#KEYS]', proposal: 'tonumber(ARGV[5])', settings: 'ARGV[2]' })}
if abstain then
  redis.call('DEL', KEYS[slot])
  return {-1, abstain, clock_behind}
end
if ${luaClockReadings('ARGV[2]')} then
  local now = redis.call('TIME')
  return {2, slot - 1, token, tonumber(now[1]) * 1000000 + tonumber(now[2]), unpack(free)}
end
return {1, slot - 1, token, unpack(free)}
`,
);

/** Reads the slot search's reply (see SEMAPHORE_ACQUIRE_SCRIPT). */
export function decodeSlotReply(reply: unknown): SlotVote {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected semaphore reply ${String(reply)}`);
  const tag = reply[0] as number;
  if (tag === 1) {
    const free = (reply as number[]).slice(3);
    return { kind: 'granted', index: reply[1] as number, token: reply[2] as number, free };
  }
  if (tag === 2) {
    const free = (reply as number[]).slice(4);
    const clockUs = reply[3] as number;
    return { kind: 'granted', index: reply[1] as number, token: reply[2] as number, free, clockUs };
  }
  if (tag === 0)
    return {
      kind: 'busy',
      retryAfterMs: reply[1] as number,
      holder: String(reply[2]),
      clockUs: reply[3] as number,
      holders: (reply as unknown[]).slice(4).map(String),
    };
  if (tag === -3) return { kind: 'conflict', permits: reply[1] as number };
  return abstaining(reply as unknown[]);
}
