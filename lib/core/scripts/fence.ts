import { luaScript } from './lua-script.js';
import { luaSetting, type SettingsFields } from './settings.js';

/** What a {@link nextTokenLua} block reads. */
export interface NextTokenInputs {
  /** Lua expression: the fence counter's key (a declared key of the script). */
  readonly fence: string;
  /**
   * Lua expression: the restart-guard marker's key (a declared key), when a missing counter
   * consults the restart guard first (acquire: yes). Undefined for a hand-over (queue.ts), which
   * cannot read the marker: there a missing counter is not seeded, and `token` is nil.
   */
  readonly marker?: string;
  /** Lua expression: the seed the caller proposes (a number, or nil). */
  readonly proposal?: string;
  /** Lua expression: the settings argument (settings.ts), e.g. `ARGV[2]`. */
  readonly settings: string;
  /** The fields of that settings argument. */
  readonly fields: SettingsFields;
  /**
   * Lua variable, declared by the caller (nil): where the block leaves the node's clock (TIME's
   * reply) when it read it, so that the caller reads it once per script. Default: a local of the block.
   */
  readonly clock?: string;
}

/**
 * Lua block, inlined where a token is issued (acquire, and the hand-over in queue.ts): it reads
 * only what {@link NextTokenInputs} names and declares two locals, `token` (the next fencing token
 * of the counter) and `abstain` (nil, or the ms this node must abstain). Inline, not a Lua
 * function: a `local function` is a closure created on every call of the script, and this runs
 * on every grant, on every node. Built once, when this module loads: the scripts are constants.
 *
 * A missing counter is seeded from the node's clock in microseconds, so it starts above any token
 * issued before it was lost, or from the caller's proposal when that lies within seedWindowMs
 * above the node's clock (voters whose clocks agree within the window then seed the same token,
 * and the grant needs no second fencing round; still above every earlier token, since a counter
 * is lost and seeded again no sooner than the restart guard or its idle expiry, both longer than
 * the window). Its idle expiry is set when seeded and renewed every 64 grants: a counter that
 * expires anyway is seeded again, above every earlier token. The settings are parsed on those two
 * paths only: the usual grant reads none of them.
 *
 * The restart guard (`marker`): a node that lost its data has lost every counter too, so the
 * guard is read only when the counter is missing, and the usual grant reads neither the marker nor
 * the clock. The marker key has no expiry: it is missing only on a node that lost its data (or is
 * new), and such a node must not vote until every lease it may have granted and forgotten has run
 * out; '0' means the guard has passed on this node. While it abstains, the block leaves no counter
 * behind, so that the next attempt checks again. With the guard off (0), the node is marked '0'
 * (trusted as it is), so that an engine that runs with the guard on later does not take it for a
 * node that lost its data.
 *
 * Without a `marker` (a hand-over, whose script does not have it among its keys), a missing
 * counter is not seeded and `token` is nil: the counters go missing when a node may have lost
 * writes (a change of server, or the clock guard's marking: identity.ts, clock-mark.ts), with its
 * marker running, and a token seeded there would count for the waiter and, the counter back, make
 * the node vote for every client before its guard has passed. The hand-over then gives a turn
 * instead (queue.ts), whose claim is an acquire: that reads the marker.
 */
export function nextTokenLua({ fence, marker, proposal, settings, fields, clock }: NextTokenInputs): string {
  const t = clock ?? 't';
  const guard =
    marker === undefined
      ? ''
      : `
    local ready = redis.call('GET', ${marker})
    if ready ~= '0' then
      local guard_ms = ${luaSetting(settings, 'guardMs', fields)}
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
    end`;
  const seedFromProposal =
    proposal === undefined
      ? ''
      : `
      local proposal = ${proposal}
      if proposal and proposal > token then
        token = math.min(proposal, token + ${luaSetting(settings, 'seedWindowMs', fields)} * 1000)
      end`;
  if (marker === undefined) {
    // A hand-over: a missing counter means this node lost its counters (a change of server, a
    // marking by the clock guard: identity.ts, clock-mark.ts), and its marker may be running.
    return `
  local token = redis.call('INCR', ${fence})
  if token == 1 then
    redis.call('DEL', ${fence})
    token = nil
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', ${fence}, ${luaSetting(settings, 'fenceIdleMs', fields)})
  end`;
  }
  return `
  local token = redis.call('INCR', ${fence})
  local abstain = nil
  if token == 1 then
    ${clock ? '' : 'local t = nil'}${guard}
    if abstain then
      redis.call('DEL', ${fence})
    else
      ${t} = ${t} or redis.call('TIME')
      token = tonumber(${t}[1]) * 1000000 + tonumber(${t}[2])${seedFromProposal}
      redis.call('SET', ${fence}, string.format('%.0f', token), 'PX', ${luaSetting(settings, 'fenceIdleMs', fields)})
    end
  elseif token % 64 == 0 then
    redis.call('PEXPIRE', ${fence}, ${luaSetting(settings, 'fenceIdleMs', fields)})
  end`;
}

/**
 * Second fencing round: raise each counter to at least the token chosen by the client, but only
 * while this client still holds every lock key on the node, and every counter is still there.
 * KEYS: lock keys 1..n, then their fence counters n+1..2n. ARGV: value, fence idle ttl ms,
 * token1..tokenN. Returns 1 when done, 0 when the lock is no longer held here or a counter is gone.
 *
 * A counter gone since the grant means the node lost its counters (a change of server, or the
 * clock guard's marking: identity.ts, clock-mark.ts) and may be under its restart guard: creating
 * it here would make the node vote for every client (a grant that finds a counter reads no
 * marker) before its guard has passed. So nothing is raised there, and the node does not count
 * toward the majority that holds the token.
 */
export const RAISE_FENCE = luaScript(
  'raise-fence',
  `
local n = #KEYS / 2
-- Only a holder may raise: a late call must not lift the counter for a lock it lost.
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
    redis.call('SET', KEYS[n + i], ARGV[i + 2], 'PX', ARGV[2])
  end
end
return 1
`,
);

/** RAISE_FENCE's reply: whether the node raised its counters (it still held the lock). */
export function decodeRaiseFenceReply(reply: unknown): boolean {
  return reply === 1;
}
