import { dropFenceCountersLua, fenceCounterPattern } from './identity.js';
import { luaScript } from './lua-script.js';

/*
 * The clock guard's marking for every client: an engine that saw a voter's clock step forward,
 * ahead of a quorum of the other voters read in the same round (quorum/voter-clocks.ts), puts that
 * voter under the restart guard, the way a restart without persistence does. The step may have
 * expired locks there early, and an engine that never read the voter before the step cannot tell.
 *
 * The mechanism is the restart guard's own (fence.ts), so the grant path pays nothing for it: the
 * marker is set to now + the guard (the voter's clock), and this engine's fence counters are
 * dropped (SCAN for `<prefix>*:fence`, as the identity guard does: identity.ts). Every grant then
 * finds its counter missing, reads the marker and abstains until it has passed, on every client,
 * whatever it heard of the voter before; a client that connects meanwhile abstains from its
 * identity check (it reads the marker). After the guard, counters are seeded from the voter's
 * clock again, and the tokens stay increasing (a token is the maximum over a majority).
 *
 * Several engines see the same step: a marker still running means a marking (or a restart) already
 * dropped the counters, so a later one only pushes the marker out, without scanning again.
 */

/**
 * KEYS: marker. ARGV: ms to abstain for, the SCAN pattern of the fence counters.
 * Returns {ms the node abstains for from now, counters dropped (0: the marker was running)}.
 */
export const CLOCK_MARK = luaScript(
  'clock-mark',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ready = now + tonumber(ARGV[1])
local marker = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if marker > now then
  if marker < ready then redis.call('SET', KEYS[1], string.format('%.0f', ready)) else ready = marker end
  return {ready - now, 0}
end
redis.call('SET', KEYS[1], string.format('%.0f', ready))
${dropFenceCountersLua('ARGV[2]')}
return {ready - now, dropped}
`,
);

/**
 * CLOCK_MARK for the masters of a Redis Cluster voter, one call per master (sent to it): its
 * markers are one per slot, and its masters keep one clock each. KEYS: none (the markers of the
 * master's slots travel in ARGV, as SEED_SLOT_MARKERS's do: seed-slot-markers.ts). ARGV: ms to
 * abstain for, the SCAN pattern of the fence counters, the instant (ms, in the voters' time as
 * the marking engine reads it) past which this master's clock counts as stepped ('' = mark
 * anyway), then the markers. A master whose clock is not past that instant is not the one that
 * stepped: it marks nothing and replies {0, 0}. Otherwise every marker is pushed to now + the
 * guard and the master's fence counters are dropped (SCAN on the master: every slot it serves),
 * so that every grant on its slots reads its slot's marker, as on a single server. A marking
 * is rare (once per step and engine), so the markers go in one call: atomic on the master.
 * Returns {ms the master abstains for from now, counters dropped}.
 */
export const CLOCK_MARK_SLOTS = luaScript(
  'clock-mark-slots',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[3] ~= '' and now <= tonumber(ARGV[3]) then return {0, 0} end
local ready = now + tonumber(ARGV[1])
local value = string.format('%.0f', ready)
for i = 4, #ARGV do
  if (tonumber(redis.call('GET', ARGV[i]) or '0') or 0) < ready then redis.call('SET', ARGV[i], value) end
end
${dropFenceCountersLua('ARGV[2]')}
return {ready - now, dropped}
`,
);

/** CLOCK_MARK's arguments; `markerKey` is `<keyPrefix>__restart_guard__`. */
export function clockMarkArgs(forMs: number, markerKey: string): string[] {
  return [String(Math.ceil(forMs)), fenceCounterPattern(markerKey)];
}

/** CLOCK_MARK's reply. */
export interface ClockMark {
  /** ms the node abstains for from now, on every client. */
  readonly abstainMs: number;
  /** Fence counters dropped (0: a marker was already running, the counters were gone). */
  readonly countersDropped: number;
}

/**
 * CLOCK_MARK_SLOTS's arguments: the guard (`forMs`), the fence counters' pattern of `guardKey`
 * (`<keyPrefix>__restart_guard__`), the instant past which the master's clock counts as stepped
 * (undefined: mark anyway), and the master's slot `markers`.
 */
export function clockMarkSlotsArgs(
  forMs: number,
  guardKey: string,
  steppedPastMs: number | undefined,
  markers: readonly string[],
): string[] {
  const past = steppedPastMs === undefined ? '' : String(Math.floor(steppedPastMs));
  return [String(Math.ceil(forMs)), fenceCounterPattern(guardKey), past, ...markers];
}

/** Reads CLOCK_MARK's reply (and CLOCK_MARK_SLOTS's). */
export function decodeClockMarkReply(reply: unknown): ClockMark {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected clock-mark reply ${String(reply)}`);
  return { abstainMs: Number(reply[0]), countersDropped: Number(reply[1]) };
}
