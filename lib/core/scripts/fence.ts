import { luaScript } from './lua.js';
import { luaSetting } from './settings.js';

/*
 * Fencing tokens on one node (lib/core/fencing/ settles them over a majority). Per resource, a
 * counter beside the lock key; a grant bumps it and returns it as the node's token.
 *
 * A missing counter is seeded from the node's clock in microseconds, so it starts above any token
 * issued before it was lost, or from the caller's proposal when that lies within seedWindowMs above
 * the node's clock (voters whose clocks agree within the window seed the same token, and the grant
 * needs no second fencing round; still above every earlier token, since a counter is lost and
 * seeded again no sooner than the restart guard or its idle expiry, both longer than the window).
 * The proposal is the voters' time as the caller knows it (the median of their clocks): a node
 * whose clock is behind it by more than half the restart guard abstains instead of seeding. Its
 * seed could fall below tokens issued before it lost the counter, raised on it from the clocks of
 * the others, ahead of its own by more than the guard it waited; a later majority without the
 * other holders of such a token would then issue a lower one (found by the simulator: CHANGELOG).
 * Its idle expiry is set when seeded and renewed every 64 grants.
 *
 * The restart guard: a node that lost its data lost every counter too, so the marker is read only
 * when the counter is missing. The marker has no expiry: missing, the node is new or lost its data,
 * and must not vote until every lease it may have granted and forgotten has run out; '0' means the
 * guard has passed. While it abstains no counter is left behind, so the next attempt checks again.
 * With the guard off (0), the node is marked '0' (trusted as it is). Every other push of the marker
 * (a change of server, a step of its clock: guards.ts) drops the counters too, so a counter present
 * means a marker passed.
 */

/** What a {@link nextTokenLua} block reads (Lua expressions). */
export interface NextTokenInputs {
  /** The fence counter's key (declared). */
  readonly fence: string;
  /**
   * The restart-guard marker's key (declared) when a missing counter consults the guard (a grant);
   * undefined for a hand-over, which then seeds no counter: `token` is nil.
   */
  readonly marker?: string;
  /** The seed the caller proposes (a number, or nil). */
  readonly proposal?: string;
  /** The settings argument (settings.ts). */
  readonly settings: string;
  /** A Lua variable (nil) where the block leaves the node's clock when it read it; default: its own. */
  readonly clock?: string;
}

/**
 * Lua block, inlined where a token is issued, declaring `token` (the next token), `abstain` (nil,
 * or the ms this node must abstain) and `clock_behind` (nil, or by how many ms its clock is behind
 * the proposal, when that is why it abstains). Inline, not a Lua function: a `local function` is a
 * closure created on every call of the script, and this runs on every grant.
 */
export function nextTokenLua({ fence, marker, proposal, settings, clock }: NextTokenInputs): string {
  const idle = luaSetting(settings, 'fenceIdleMs');
  if (marker === undefined) {
    return `
  local token = redis.call('INCR', ${fence})
  if token == 1 then
    redis.call('DEL', ${fence})
    token = nil
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', ${fence}, ${idle})
  end`;
  }
  const t = clock ?? 't';
  const seed =
    proposal === undefined
      ? ''
      : `
      local proposal = ${proposal}
      if proposal and proposal > token then
        local behind_ms = (proposal - token) / 1000
        local half_guard = ${luaSetting(settings, 'guardMs')} / 2
        if half_guard > 0 and behind_ms > half_guard then
          abstain = math.ceil(behind_ms - half_guard)
          clock_behind = math.floor(behind_ms)
        else
          token = math.min(proposal, token + ${luaSetting(settings, 'seedWindowMs')} * 1000)
        end
      end`;
  return `
  local token = redis.call('INCR', ${fence})
  local abstain = nil
  local clock_behind = nil
  if token == 1 then
    ${clock ? '' : 'local t = nil'}
    local ready = redis.call('GET', ${marker})
    if ready ~= '0' then
      local guard_ms = ${luaSetting(settings, 'guardMs')}
      if guard_ms <= 0 then
        redis.call('SET', ${marker}, '0')
      else
        ${t} = redis.call('TIME')
        local now = tonumber(${t}[1]) * 1000 + math.floor(tonumber(${t}[2]) / 1000)
        if ready then
          ready = tonumber(ready)
        else
          ready = now + guard_ms
          redis.call('SET', ${marker}, string.format('%.0f', ready))
        end
        if now < ready then abstain = ready - now else redis.call('SET', ${marker}, '0') end
      end
    end
    if not abstain then
      ${t} = ${t} or redis.call('TIME')
      token = tonumber(${t}[1]) * 1000000 + tonumber(${t}[2])${seed}
    end
    if abstain then
      redis.call('DEL', ${fence})
    else
      redis.call('SET', ${fence}, string.format('%.0f', token), 'PX', ${idle})
    end
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', ${fence}, ${idle})
  end`;
}

/**
 * Second fencing round: raises each counter to at least the token chosen by the client, but only
 * while this client still holds every lock key on the node, and every counter is still there (a
 * counter gone since the grant means the node may be under its guard: creating it would make the
 * node vote for every client before the guard passed).
 * KEYS: lock keys 1..n, fence counters n+1..2n. ARGV: value, settings, token1..tokenN.
 * Returns 1 when done, 0 when the lock is no longer held here or a counter is gone.
 */
export const RAISE_FENCE = luaScript(
  'raise-fence',
  `
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
local current = {}
for i = 1, n do
  current[i] = redis.call('GET', KEYS[n + i])
  if not current[i] then return 0 end
end
for i = 1, n do
  if tonumber(current[i]) < tonumber(ARGV[i + 2]) then
    redis.call('SET', KEYS[n + i], ARGV[i + 2], 'PX', ${luaSetting('ARGV[2]', 'fenceIdleMs')})
  end
end
return 1
`,
);
