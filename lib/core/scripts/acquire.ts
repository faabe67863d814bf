import { nextTokenLua } from './fence.js';
import { luaScript } from './lua.js';
import { luaSetting } from './settings.js';
import { TURN_MARK } from './keys.js';

/** A node's answer to an acquire, decoded. */
export type AcquireVote =
  /** Granted: one token per lock key, and the node's clock (µs) under the clock guard. */
  | { readonly kind: 'granted'; readonly tokens: readonly number[]; readonly clockUs?: number }
  /**
   * Busy: `retryAfterMs` until it may be free (-1: a key without expiry), `holder` the value of the
   * first busy key, and the node's clock in µs (what a lock handed over later is timed against).
   */
  | {
      readonly kind: 'busy';
      readonly retryAfterMs: number;
      readonly holder: string;
      readonly clockUs: number;
    }
  /**
   * The node abstains under the restart guard for `forMs` more ms; on a Cluster voter, only its
   * `shard` (the one of the keys) does: the voter still votes for the other shards' slots.
   */
  | AbstainingVote;

/**
 * A node's abstention: under the restart guard, or (`clockBehindMs`) because its clock is too far
 * behind the fence seed proposed to seed a counter it lost from it (scripts/fence.ts).
 */
export interface AbstainingVote {
  readonly kind: 'abstaining';
  readonly forMs: number;
  readonly shard?: string;
  readonly clockBehindMs?: number;
}

/**
 * How far, in µs, a voter's clock may be from where the engine expects it (the acquire's sixth
 * argument) for a one-resource grant under the clock guard to reply with its token alone.
 */
export const CLOCK_WINDOW_US = 16_000;

/**
 * Acquire on one node, all or none of its resources.
 * KEYS, n resources: lock keys 1..n, fence counters n+1..2n, queues 2n+1..3n, the restart-guard
 * marker (the node's, or on a Cluster its slot's) last.
 * ARGV: value, settings, ttl ms, ticket ('' = do not queue: the caller will not wait), the seed
 * proposed for a missing counter (µs, or ''), and under the clock guard a sixth: where the engine
 * expects this node's clock (µs, or ''). The argument count tells the script the guard runs.
 *
 * A caller that will wait joins the queue of each busy resource by its ticket; a key already handed
 * to the caller (its value), or its turn, counts as free.
 * Replies: the token (one resource), {1, tokens...} (several), {2, tokens..., clock} under the
 * clock guard ({token, clock} for one resource, the token alone when the clock was within the
 * window of the expectation), {0, ms, holder, clock} busy, {-1, ms} abstaining
 * ({-1, ms, behind} when its clock is behind the proposal).
 */
export const ACQUIRE = luaScript(
  'acquire',
  `
local n = (#KEYS - 1) / 3
local value = ARGV[1]
local granted = n == 1 and redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[3])
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
    if ARGV[4] ~= '' then
      local idle = ${luaSetting('ARGV[2]', 'queueIdleMs')}
      for i = 1, n do
        local queue = KEYS[2 * n + i]
        redis.call('ZADD', queue, 'NX', ARGV[4], value)
        if redis.call('PTTL', queue) < idle then redis.call('PEXPIRE', queue, idle) end
      end
    end
    local now = redis.call('TIME')
    return {0, busy, holder, now[1] * 1000000 + now[2]}
  end
  for i = 1, n do
    redis.call('SET', KEYS[i], value, 'PX', ARGV[3])
    if ARGV[4] ~= '' then redis.call('ZREM', KEYS[2 * n + i], value) end
  end
end
local clock = #ARGV >= 6
local out = n > 1 and {1}
local time = nil
for i = 1, n do
  local fence = KEYS[n + i]${nextTokenLua({ fence: 'fence', marker: 'KEYS[#KEYS]', proposal: 'tonumber(ARGV[5])', settings: 'ARGV[2]', clock: 'time' })}
  if abstain then
    -- Abstaining: undo this grant, so that it counts for nobody.
    for j = 1, n do
      if redis.call('GET', KEYS[j]) == value then redis.call('DEL', KEYS[j]) end
    end
    return {-1, abstain, clock_behind}
  end
  if not out then
    if not clock then return token end
    local now = time or redis.call('TIME')
    local us = now[1] * 1000000 + now[2]
    if ARGV[6] ~= '' then
      local off = us - ARGV[6]
      if off >= -${CLOCK_WINDOW_US} and off <= ${CLOCK_WINDOW_US} then return token end
    end
    return {token, us}
  end
  out[i + 1] = token
end
if clock then
  local now = time or redis.call('TIME')
  out[1] = 2
  out[n + 2] = now[1] * 1000000 + now[2]
end
return out
`,
);

/** Reads the acquire script's reply (a reader's too: read.ts replies alike). */
export function decodeAcquireReply(reply: unknown): AcquireVote {
  if (typeof reply === 'number') return { kind: 'granted', tokens: [reply] };
  if (!Array.isArray(reply)) throw new TypeError(`unexpected acquire reply ${String(reply)}`);
  const tag = reply[0] as number;
  // {token, clock} is told from {-1, ms} by its sign; several resources make 3 or more.
  if (reply.length === 2 && tag > 0) return { kind: 'granted', tokens: [tag], clockUs: reply[1] as number };
  if (tag === 1) return { kind: 'granted', tokens: (reply as number[]).slice(1) };
  if (tag === 2) {
    return { kind: 'granted', tokens: (reply as number[]).slice(1, -1), clockUs: reply.at(-1) as number };
  }
  if (tag === 0) {
    return {
      kind: 'busy',
      retryAfterMs: reply[1] as number,
      holder: String(reply[2]),
      clockUs: reply[3] as number,
    };
  }
  return abstaining(reply);
}

/** `{-1, ms}` or `{-1, ms, ms behind}` (any script that issues tokens). */
export function abstaining(reply: readonly unknown[]): AbstainingVote {
  const forMs = reply[1] as number;
  return reply.length > 2
    ? { kind: 'abstaining', forMs, clockBehindMs: reply[2] as number }
    : { kind: 'abstaining', forMs };
}
