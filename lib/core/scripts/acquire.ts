import { TURN_MARK } from './lock-value.js';
import { DECLARED_KEYS, DERIVED_KEYS, type KeyLayout } from './key-layout.js';
import { luaScript, type LuaScript } from './lua-script.js';
import { nextTokenLua } from './fence.js';
import { LOCK_SETTINGS, luaSetting } from './settings.js';

/** A node's answer to an acquire, decoded. */
export type AcquireVote =
  /**
   * Granted: one fencing token per lock key, in key order, and the node's clock in microseconds
   * when the engine runs the clock guard (settings `clockReadings`).
   */
  | { readonly kind: 'granted'; readonly tokens: readonly number[]; readonly clockUs?: number }
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
 * How far, in µs, a voter's clock may be from where the engine expects it (ARGV[6] of the acquire
 * script) for a one-resource grant under the clock guard to reply with its token alone: that
 * reply says the clock was within this of the expectation (quorum/voter-clocks.ts, expectedUs).
 */
export const CLOCK_WINDOW_US = 16_000;

/**
 * Acquire on one node, all-or-none over its resources.
 * KEYS, for n resources: lock keys 1..n, then on a Redis Cluster their fence counters n+1..2n and
 * queues 2n+1..3n (key-layout.ts: a single server derives those from the lock keys), then the
 * restart-guard marker (the node's, or on a Redis Cluster the marker of the lock keys' slot; a
 * single server derives it too where the key prefix allows: key-layout.ts).
 * ARGV: value, settings (settings.ts), ttl ms, ticket ('' = do not queue: the caller will not
 * wait), the seed the caller proposes for a missing fence counter (microseconds, see fence.ts; ''
 * for none, and may be left out when no argument follows) and, when the engine runs the clock
 * guard, a sixth: where the engine expects this node's clock (microseconds, see CLOCK_WINDOW_US;
 * '' when it has no expectation). The argument count says whether the guard runs (six
 * arguments): a length, where reading a flag from the settings would be a string function call
 * on every grant.
 *
 * A caller that will wait joins the queue of each busy resource, by its ticket. A lock released
 * while someone waits goes to the first waiter in line (see queue.ts), so a release wakes one
 * waiter instead of all of them, and they do not split the vote. A key already handed to the
 * caller (it holds the caller's value), or its turn, counts as free.
 *
 * Replies (decodeAcquireReply reads them): the token when one resource is granted (an integer:
 * the usual grant builds no table), {1, token1..tokenN} when several are, {2, token1..tokenN,
 * clock} when the engine runs the clock guard (its six arguments ask for the node's clock with
 * every grant; {token, clock} when one resource is granted, the token alone when the clock was
 * where the engine expected it), {0, ms, holder, clock} when busy, {-1, ms} when the node abstains
 * under the restart guard.
 */
function acquireScript(keys: KeyLayout): LuaScript {
  return luaScript(
    keys === DERIVED_KEYS ? 'acquire' : `acquire-${keys.name}`,
    `
${keys.head(true)}
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
      local queue_idle_ms = ${luaSetting('ARGV[2]', 'queueIdleMs', LOCK_SETTINGS)}
      for i = 1, n do${keys.queue('queue', 'i')}
        redis.call('ZADD', queue, 'NX', ARGV[4], value)
        if redis.call('PTTL', queue) < queue_idle_ms then
          redis.call('PEXPIRE', queue, queue_idle_ms)
        end
      end
    end
    local now = redis.call('TIME')
    return {0, busy, holder, now[1] * 1000000 + now[2]}
  end
  -- Every key is free, our turn, or already handed to us.
  for i = 1, n do
    redis.call('SET', KEYS[i], value, 'PX', ARGV[3])
    if ARGV[4] ~= '' then${keys.queue('queue', 'i')}
      redis.call('ZREM', queue, value)
    end
  end
end
-- The clock guard (a sixth argument) wants the node's clock with every grant.
local clock = #ARGV >= 6
local out = n > 1 and {1}
-- The node's clock, once read (a missing counter is seeded from it): the grant's reading too.
local time = nil
for i = 1, n do
  -- A missing counter: a new resource, its idle expiry, or a node that lost its data.
  local fence = ${keys.fence('i')}${nextTokenLua({ fence: 'fence', marker: keys.marker, proposal: 'tonumber(ARGV[5])', settings: 'ARGV[2]', fields: LOCK_SETTINGS, clock: 'time' })}
  if abstain then
    -- Abstaining: undo this grant, so that it counts for nobody.
    for j = 1, n do
      if redis.call('GET', KEYS[j]) == value then redis.call('DEL', KEYS[j]) end
    end
    return {-1, abstain}
  end
  if not out then
    if not clock then return token end
    -- One resource under the clock guard. Arithmetic converts TIME's strings itself (two tonumber
    -- calls cost more). Within ${CLOCK_WINDOW_US} us of where the engine expects this clock (ARGV[6]; ''
    -- for none), the token alone says so: no table to build and convert (quorum/voter-clocks.ts,
    -- expectedUs).
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
}

/** The acquire script of one Redis server (fence counters and queues derived: key-layout.ts). */
export const ACQUIRE_SCRIPT = acquireScript(DERIVED_KEYS);
/** The acquire script of a Redis Cluster voter (every key declared: key-layout.ts). */
export const CLUSTER_ACQUIRE_SCRIPT = acquireScript(DECLARED_KEYS);

/** Reads the acquire script's reply (see acquireScript). */
export function decodeAcquireReply(reply: unknown): AcquireVote {
  if (typeof reply === 'number') return new Granted([reply]);
  if (!Array.isArray(reply)) throw new TypeError(`unexpected acquire reply ${String(reply)}`);
  const tag = reply[0] as number;
  // One resource under the clock guard (nearly every lock then): {token, clock}. Told apart by its
  // length and sign: {-1, ms} is the only other pair, and several resources make 3 or more.
  if (reply.length === 2 && tag > 0) return new Granted([tag], reply[1] as number);
  if (tag === 1) return new Granted((reply as number[]).slice(1));
  if (tag === 2) {
    const clockUs = reply[reply.length - 1] as number;
    // One resource (a reader's grant: read.ts): no slice.
    return new Granted(reply.length === 3 ? [reply[1] as number] : (reply as number[]).slice(1, -1), clockUs);
  }
  if (tag === 0) return new Busy(reply[1] as number, String(reply[2]), reply[3] as number);
  return new Abstaining(reply[1] as number);
}

// The votes are class instances, not object literals: one is built per voter per acquire, and
// literals are what V8 may start allocating straight in the old generation (see the Pending
// time-out in timeouts.ts for what that cost).

class Granted {
  readonly kind = 'granted';
  constructor(
    readonly tokens: readonly number[],
    readonly clockUs?: number,
  ) {}
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
