import { FENCE_SUFFIX } from '../keys.js';
import { luaScript, luaString } from './lua-script.js';
import type { ScriptSettings } from './settings.js';

/**
 * Lua functions shared by the scripts that issue fencing tokens (acquire, and the hand-over in
 * queue.ts). Each takes what it works on as arguments: no script relies on another's locals.
 *
 * restart_guard(): how long this node must abstain (0: it votes), and the TIME reply it read.
 *   The marker key has no expiry: it is missing only on a node that lost its data (or is new),
 *   and such a node must not vote until every lease it may have granted and forgotten has run
 *   out. '0' means the guard has passed on this node.
 *
 * next_token(fence, guarded, proposal): the next token of the counter `fence`. A missing counter
 *   is seeded from the node's clock in microseconds, so it starts above any token issued before
 *   it was lost, or from the caller's `proposal` when that lies within seedWindowMs above the
 *   node's clock (still above every earlier token: a counter is lost and seeded again no sooner
 *   than the restart guard or its idle expiry, both longer than the window); its idle expiry is set when seeded and renewed every 64 grants (a counter that
 *   expires anyway is seeded again, above every earlier token). A node that lost its data has
 *   lost every counter too, so with `guarded` the restart guard is read only when the counter is
 *   missing: the usual grant reads neither the marker nor the clock. Returns nil, ms (and leaves
 *   no counter behind, so that the next attempt checks again) while the node abstains.
 */
export function fenceFunctionsLua({ guardMs, guardKey, fenceIdleMs, seedWindowMs }: ScriptSettings): string {
  const guard =
    guardMs <= 0
      ? `
local function restart_guard()
  -- Off: the nodes are trusted as they are. Mark this one as such, so that an engine that runs
  -- with the guard on later does not take it for a node that lost its data.
  if redis.call('GET', ${luaString(guardKey)}) ~= '0' then redis.call('SET', ${luaString(guardKey)}, '0') end
  return 0, nil
end`
      : `
local function restart_guard()
  local ready = redis.call('GET', ${luaString(guardKey)})
  if ready == '0' then return 0, nil end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if ready then
    ready = tonumber(ready)
  else
    ready = now + ${guardMs}
    redis.call('SET', ${luaString(guardKey)}, string.format('%.0f', ready))
  end
  if now < ready then return ready - now, t end
  redis.call('SET', ${luaString(guardKey)}, '0')
  return 0, t
end`;
  return `${guard}
local function next_token(fence, guarded, proposal)
  local token = redis.call('INCR', fence)
  if token == 1 then
    local t = nil
    if guarded then
      local abstain
      abstain, t = restart_guard()
      if abstain > 0 then
        redis.call('DEL', fence)
        return nil, abstain
      end
    end
    t = t or redis.call('TIME')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    -- The caller's proposal, the same on every voter of its attempt, within the window above this
    -- voter's clock: voters whose clocks agree within the window seed the same token, and the
    -- grant needs no second fencing round.
    if proposal and proposal > token then token = math.min(proposal, token + ${seedWindowMs * 1000}) end
    redis.call('SET', fence, string.format('%.0f', token), 'PX', ${fenceIdleMs})
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', fence, ${fenceIdleMs})
  end
  return token
end
`;
}

/**
 * Second fencing round: raise each counter to at least the token chosen by the client, but only
 * while this client still holds every lock key on the node.
 * KEYS: lock keys. ARGV: value, fence idle ttl ms, token1..tokenN.
 * Returns 1 when done, 0 when the lock is no longer held here.
 */
export const RAISE_FENCE = luaScript(
  'raise-fence',
  `
-- Only a holder may raise: a late call must not lift the counter for a lock it lost.
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

/** RAISE_FENCE's arguments. */
export function raiseFenceArgs(value: string, fenceIdleMs: number, tokens: readonly number[]): string[] {
  return [value, String(Math.ceil(fenceIdleMs)), ...tokens.map(String)];
}

/** RAISE_FENCE's reply: whether the node raised its counters (it still held the lock). */
export function decodeRaiseFenceReply(reply: unknown): boolean {
  return reply === 1;
}
