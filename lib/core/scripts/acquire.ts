import { FENCE_SUFFIX, QUEUE_SUFFIX } from '../keys.js';
import { TURN_MARK } from './lock-value.js';
import { luaScript, type LuaScript } from './lua-script.js';
import { nextTokenLua } from './fence.js';
import type { ScriptSettings } from './settings.js';

/** A node's answer to an acquire, decoded. */
export type AcquireVote =
  /** Granted: one fencing token per lock key, in key order. */
  | { readonly kind: 'granted'; readonly tokens: readonly number[] }
  /**
   * Busy: `retryAfterMs` until it may be free (the longest remaining lease or turn; -1 if a key has
   * no expiry), `holder` the value of the first busy key (a holder's value, or a turn), and the
   * node's clock in microseconds (what a lock handed over later is timed against).
   */
  | {
      readonly kind: 'busy';
      readonly retryAfterMs: number;
      readonly holder: string;
      readonly clockUs: number;
    }
  /** The node abstains under the restart guard for `forMs` more ms. */
  | { readonly kind: 'abstaining'; readonly forMs: number };

/**
 * Acquire on one node, all-or-none over its resources.
 * KEYS: lock keys. ARGV: value, ttl ms, ticket ('' = do not queue: the caller will not wait), and
 * optionally the seed the caller proposes for a missing fence counter (microseconds, see fence.ts).
 *
 * A caller that will wait joins the queue of each busy resource, by its ticket. A lock released
 * while someone waits goes to the first waiter in line (see queue.ts), so a release wakes one
 * waiter instead of all of them, and they do not split the vote. A key already handed to the
 * caller (it holds the caller's value), or its turn, counts as free.
 *
 * Replies (decodeAcquireReply reads them): the token when one resource is granted (an integer:
 * the usual grant builds no table), {1, token1..tokenN} when several are, {0, ms, holder, clock}
 * when busy, {-1, ms} when the node abstains under the restart guard.
 */
export function acquireScript(settings: ScriptSettings): LuaScript {
  return luaScript(
    'acquire',
    `
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
        if redis.call('PTTL', queue) < ${settings.queueIdleMs} then
          redis.call('PEXPIRE', queue, ${settings.queueIdleMs})
        end
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
  local fence = KEYS[i] .. '${FENCE_SUFFIX}'${nextTokenLua(settings, { fence: 'fence', guarded: true, proposal: 'tonumber(ARGV[4])' })}
  if abstain then
    -- Abstaining: undo this grant, so that it counts for nobody.
    for j = 1, n do
      if redis.call('GET', KEYS[j]) == value then redis.call('DEL', KEYS[j]) end
    end
    return {-1, abstain}
  end
  if not out then return token end
  out[i + 1] = token
end
return out
`,
  );
}

/** The last arguments built: an attempt asks every voter with the same ones, in a row. */
let last:
  { value: string; ttlMs: number; ticket: string; seedUs?: number; args: readonly string[] } | undefined;

/**
 * The acquire script's arguments: the same for every voter of an attempt, so they are built once
 * and shared (read-only) by the voters asked in a row, instead of once per voter on the hot path.
 */
export function acquireArgs(
  value: string,
  ttlMs: number,
  ticket: string,
  seedUs?: number,
): readonly string[] {
  if (
    last &&
    last.value === value &&
    last.ttlMs === ttlMs &&
    last.ticket === ticket &&
    last.seedUs === seedUs
  ) {
    return last.args;
  }
  const args = [value, String(Math.ceil(ttlMs)), ticket];
  if (seedUs !== undefined) args.push(seedUs.toFixed(0));
  last = { value, ttlMs, ticket, seedUs, args };
  return args;
}

/** Reads the acquire script's reply (see acquireScript). */
export function decodeAcquireReply(reply: unknown): AcquireVote {
  if (typeof reply === 'number') return new Granted([reply]);
  if (!Array.isArray(reply)) throw new TypeError(`unexpected acquire reply ${String(reply)}`);
  const tag = reply[0] as number;
  if (tag === 1) return new Granted((reply as number[]).slice(1));
  if (tag === 0) return new Busy(reply[1] as number, String(reply[2]), reply[3] as number);
  return new Abstaining(reply[1] as number);
}

// The votes are class instances, not object literals: one is built per voter per acquire, and
// literals are what V8 may start allocating straight in the old generation (see the Pending
// time-out in timeouts.ts for what that cost).

class Granted {
  readonly kind = 'granted';
  constructor(readonly tokens: readonly number[]) {}
}

class Busy {
  readonly kind = 'busy';
  constructor(
    readonly retryAfterMs: number,
    readonly holder: string,
    readonly clockUs: number,
  ) {}
}

class Abstaining {
  readonly kind = 'abstaining';
  constructor(readonly forMs: number) {}
}
