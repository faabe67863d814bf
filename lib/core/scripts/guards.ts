import { FENCE_SUFFIX } from './keys.js';
import { luaScript } from './lua.js';

/*
 * The guards' maintenance scripts (the guards themselves: lib/core/guards/). They run on a
 * connection's check, after a step of a node's clock and when a Cluster voter first connects, never
 * on a lock's path. Unlike the lock's scripts they touch keys they do not declare: the identity
 * check and the clock marking delete the fence counters they find by SCAN, and the clock marking
 * and the seeding take a Cluster master's per-slot markers as arguments (declared keys of many
 * slots would be refused). docs/deploying.md names the proxies and services that refuse such
 * scripts.
 *
 * The identity record: beside the restart-guard marker, the `run_id` of the server that wrote it.
 * A client checks it on every new connection, before the node votes. Another run_id (a restart
 * with `appendfsync everysec`, a replica promoted by a failover) may have lost the newest lock keys
 * and counter increments: the marker is pushed to now + restartGuard and the counters are dropped,
 * so that they are seeded from the clock again after the guard, above every token issued before.
 * No marker at all: a new node, or one that lost everything; the guard starts now (the app's boot,
 * not the first lock). A marker without a record was written before the identity guard existed:
 * adopted without abstaining. A server that fsyncs every write (`appendonly yes`, `appendfsync
 * always`) and did not take over from another is trusted across its own restarts.
 */

/** Lua: deletes every key matching the SCAN pattern `pattern` (a Lua expression), counting `dropped`. */
function dropFenceCountersLua(pattern: string): string {
  return `local cursor, dropped = '0', 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ${pattern}, 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do dropped = dropped + redis.call('DEL', key) end
until cursor == '0'`;
}

/** The SCAN pattern of the fence counters under `keyPrefix`. */
export function fenceCounterPattern(keyPrefix: string): string {
  const prefix = keyPrefix;
  return `${prefix.replace(/[\\*?[\]]/g, (c) => `\\${c}`)}*${FENCE_SUFFIX}`;
}

/**
 * KEYS: marker, identity record. ARGV: run_id, trusted ('1'/'0'), restartGuard ms, the SCAN pattern
 * of the fence counters. Returns {ms to abstain, outcome, previous run_id or '', counters dropped}.
 */
export const IDENTITY_CHECK = luaScript(
  'identity-check',
  `
local run_id, trusted, guard = ARGV[1], ARGV[2], tonumber(ARGV[3])
local marker = redis.call('GET', KEYS[1])
local record = redis.call('GET', KEYS[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function left()
  if marker and marker ~= '0' and tonumber(marker) > now then return tonumber(marker) - now end
  return 0
end
local writer, writer_trusted = nil, nil
if record then writer, writer_trusted = string.match(record, '^(%S+) (%d)$') end
if writer == run_id then return {left(), 'same', '', 0} end
redis.call('SET', KEYS[2], run_id .. ' ' .. trusted)
if not marker then
  redis.call('SET', KEYS[1], string.format('%.0f', now + guard))
  return {guard, 'new', '', 0}
end
if not record then return {left(), 'adopted', '', 0} end
if writer_trusted == '1' and trusted == '1' then return {left(), 'trusted', writer, 0} end
if left() < guard then redis.call('SET', KEYS[1], string.format('%.0f', now + guard)) end
${dropFenceCountersLua('ARGV[4]')}
return {math.max(left(), guard), 'changed', writer or '', dropped}
`,
  { crossSlot: true },
);

/** How the identity check went on one node. */
export interface IdentityCheck {
  /** ms the node must abstain from now (0: it votes). */
  readonly abstainMs: number;
  /** same | new | adopted (a marker older than the guard) | trusted | changed (another server). */
  readonly outcome: 'same' | 'new' | 'adopted' | 'trusted' | 'changed';
  /** The run_id of the server that wrote the record, when it was another one. */
  readonly previous: string;
  /** Fence counters deleted (outcome `changed`). */
  readonly countersDropped: number;
}

/** IDENTITY_CHECK's reply. */
export function decodeIdentityReply(reply: unknown): IdentityCheck {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected identity-check reply ${String(reply)}`);
  const [abstainMs, outcome, previous, countersDropped] = reply as [
    number,
    IdentityCheck['outcome'],
    string,
    number,
  ];
  return { abstainMs, outcome, previous: String(previous), countersDropped };
}

/**
 * The server's run_id (new on every start of the process). Keyless: a client that reconnects without
 * a word (GLIDE) sends it right behind a vote, on the same connection, to learn which server ran it.
 */
export const RUN_ID = luaScript(
  'run-id',
  "return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')",
  { readOnly: true },
);

/**
 * The clock guard's marking for every client, on one server or one Cluster master: an engine saw
 * its clock step forward, ahead of a quorum of the other voters. A server whose clock is past
 * ARGV[3] (ms, the voters' time plus the clock guard as that engine reads it; '' = mark anyway)
 * pushes its markers (ARGV[4..]) to now + ARGV[1] and drops its fence counters (pattern ARGV[2]),
 * as a change of server does: every grant then reads its marker and abstains until the guard has
 * passed, on every client. Returns {ms it abstains for from now (0: not the one that stepped),
 * counters dropped}.
 */
export const CLOCK_MARK = luaScript(
  'clock-mark',
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
  { crossSlot: true },
);

/** What a marking did: the ms the node abstains for from now, the counters it dropped. */
export interface ClockMark {
  readonly abstainMs: number;
  readonly countersDropped: number;
}

/** CLOCK_MARK's reply. */
export function decodeClockMarkReply(reply: unknown): ClockMark {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected clock-mark reply ${String(reply)}`);
  return { abstainMs: Number(reply[0]), countersDropped: Number(reply[1]) };
}

/**
 * Seeds a Cluster master's per-slot restart-guard markers (ARGV[2..]) where missing: now + the
 * guard (ARGV[1]), or '0' with the guard off. Run when a Cluster voter first connects, in chunks of
 * a shard's slots, so that a new cluster abstains once, not once per slot at its first lock. A chunk
 * whose first and last markers are in place was seeded before and costs two GETs.
 */
export const SEED_SLOT_MARKERS = luaScript(
  'seed-slot-markers',
  `
local guard = tonumber(ARGV[1])
local t = redis.call('TIME')
local value = guard <= 0 and '0' or string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + guard)
local function settled(ready) return (guard <= 0 and ready == '0') or (guard > 0 and ready) end
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
  { crossSlot: true },
);

/**
 * Records that a node is fresh (guards/fresh-node.ts): when the database holds no key but the
 * guards' own (names containing ARGV[2], the marker's name, under any prefix), the marker (KEYS[1])
 * is set to '0' and the identity record (KEYS[2]) to this server's run_id, read here, in the same
 * atomic step: the identity check then lets this very server vote at once, and any other server
 * (this one restarted) abstains as usual. ARGV[1]: trusted across restarts ('1'/'0'), ARGV[3]: the
 * most keys looked at before refusing. Returns {'marked', run_id} or {'not-empty', run_id, number of
 * other keys (at least), JSON array of up to 3 of them}.
 */
export const FRESH_NODE = luaScript(
  'fresh-node',
  `
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local size, most = redis.call('DBSIZE'), tonumber(ARGV[3])
if size > most then return {'not-empty', run_id, size, '[]'} end
local others, named, cursor = 0, {}, '0'
repeat
  local page = redis.call('SCAN', cursor, 'COUNT', most)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    if not string.find(key, ARGV[2], 1, true) then
      others = others + 1
      if #named < 3 then named[#named + 1] = key end
    end
  end
until cursor == '0'
if others > 0 then return {'not-empty', run_id, others, cjson.encode(named)} end
redis.call('SET', KEYS[1], '0')
redis.call('SET', KEYS[2], run_id .. ' ' .. ARGV[1])
return {'marked', run_id}
`,
);
