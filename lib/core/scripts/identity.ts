import { FENCE_SUFFIX, GUARD_MARKER_NAME } from '../keys.js';
import { luaScript } from './lua-script.js';

/*
 * The identity guard: the restart guard (fence.ts) for servers that come back with their data but
 * not all of it.
 *
 * The restart guard sees a node that lost everything: its marker key is missing, and so is every
 * fence counter, which the acquire script reads on the grant path. It cannot see a node whose
 * marker came back but whose newest lock keys and counter increments did not:
 * - a restart with `appendfsync everysec` (the last second of writes may never reach the disk);
 * - a replica promoted by a failover (replication is asynchronous: the replica may lag).
 * Both are a different server process than the one that wrote the marker, so beside the marker
 * the node keeps the `run_id` of that server (the "identity record"). Every client checks it on
 * every (re)connection, before the node votes for it (voter/ioredis/admission.ts; on a Redis
 * Cluster, every master's: voter/ioredis-cluster/shard-identities.ts), with the run_id
 * the server reported on that connection. A different run_id means the newest writes may be gone:
 * the script pushes the marker to now + restartGuard (server clock) and records the new run_id;
 * the client then abstains locally until the marker, without any I/O on the acquire path.
 *
 * Waiting is not enough for the fencing counters: the ones that came back may be behind tokens
 * already issued, and a majority of such nodes would issue a smaller token after the guard. So the
 * same script deletes this engine's counters (SCAN for `<prefix>*:fence`, once, atomically, while
 * the node abstains anyway): a missing counter is seeded from the node's clock in microseconds,
 * above every token issued before (fence.ts), exactly as after a restart without persistence. The
 * scan blocks the node for as long as it takes (measured: 10 ms for 20,000 keys, 132 ms for
 * 200,000), once per event.
 *
 * Why every client sees it: a client connected before the event cannot still be connected after
 * it (the restart or failover dropped its connection), so it checks again on reconnecting; a
 * client that connects for the first time checks too; and one that finds the record already
 * updated by another still finds the marker in the future and abstains until it. A FLUSHALL
 * removes marker, record and counters without dropping connections: the acquire script's guard
 * sees the missing counters, as after a restart without persistence.
 *
 * Trust: a server that fsyncs every write before acknowledging it (appendonly yes + appendfsync
 * always) loses nothing in its own restart. When the record says the old server was such a one,
 * and the new server is too and did not take over from another (it is no promoted replica),
 * only the record is updated.
 *
 * A marker without a record was written by a version of this library without the identity guard:
 * the record is written without abstaining (that version would not have abstained either).
 * No marker at all is a new node or one that lost everything: the record is written and the
 * marker set to now + restartGuard, so that the guard counts from the first connection (the
 * application's boot), not from the first lock; the acquire script's guard, which sets the same
 * marker when it finds none, covers a FLUSHALL on a live connection.
 */

/** Suffix of the identity record's key, after the marker's key. */
export const IDENTITY_SUFFIX = ':id';

/**
 * Lua that deletes every key matching `pattern` (a Lua expression, e.g. `ARGV[4]`) and counts them
 * in `dropped`: how a voter that may have lost writes forgets its fence counters, so that they are
 * seeded from the clock again (the identity guard here, the clock guard's marking in clock-mark.ts).
 */
export function dropFenceCountersLua(pattern: string): string {
  return `local cursor, dropped = '0', 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ${pattern}, 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do dropped = dropped + redis.call('DEL', key) end
until cursor == '0'`;
}

/**
 * KEYS: marker, identity record. ARGV: run_id, trusted ('1' / '0'), restartGuard ms, the SCAN
 * pattern of the fence counters. Returns {ms to abstain, outcome, previous run_id or '', counters
 * deleted}.
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
  -- New, or lost everything: the guard starts now, on connecting, not at the first grant.
  redis.call('SET', KEYS[1], string.format('%.0f', now + guard))
  return {guard, 'new', '', 0}
end
if not record then return {left(), 'adopted', '', 0} end
if writer_trusted == '1' and trusted == '1' then return {left(), 'trusted', writer, 0} end
-- Another server: its newest lock keys and counters may be gone. Abstain for the guard, and
-- drop the counters that may lag, so that they are seeded from the clock again.
local ready = now + guard
if left() < guard then redis.call('SET', KEYS[1], string.format('%.0f', ready)) end
${dropFenceCountersLua('ARGV[4]')}
return {math.max(left(), guard), 'changed', writer or '', dropped}
`,
);

/** How the identity check went on one node. */
export interface IdentityCheck {
  /** ms the node must abstain from now (0: it votes). */
  readonly abstainMs: number;
  /**
   * same: the server that wrote the record; new: a node without a marker (new, or flushed);
   * adopted: a marker from before the identity guard; trusted: a trusted restart; changed:
   * another server (restart or failover) whose newest writes may be lost.
   */
  readonly outcome: 'same' | 'new' | 'adopted' | 'trusted' | 'changed';
  /** The run_id of the server that wrote the record, when it was another one. */
  readonly previous: string;
  /** Fence counters deleted (outcome `changed`). */
  readonly countersDropped: number;
}

/** IDENTITY_CHECK's arguments; `markerKey` is `<keyPrefix>__restart_guard__`. */
export function identityArgs(runId: string, trusted: boolean, guardMs: number, markerKey: string): string[] {
  return [runId, trusted ? '1' : '0', String(Math.ceil(guardMs)), fenceCounterPattern(markerKey)];
}

/** The SCAN MATCH pattern of the fence counters under the key prefix of `markerKey`. */
export function fenceCounterPattern(markerKey: string): string {
  const prefix = markerKey.slice(0, markerKey.length - GUARD_MARKER_NAME.length);
  return `${escapeGlob(prefix)}*${FENCE_SUFFIX}`;
}

/** A literal for a SCAN MATCH pattern. */
function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]]/g, (c) => `\\${c}`);
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
  return { abstainMs, outcome, previous, countersDropped };
}

/**
 * The server's run_id (INFO server; the ACL user needs +info, as the identity guard does): new on
 * every start of the server process. Keyless: a client that reconnects without a word (Valkey
 * GLIDE; node-redis and GLIDE clusters) sends it right behind an acquire, on the same connection,
 * to learn which server ran the acquire.
 */
export const RUN_ID = luaScript(
  'run-id',
  "return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')",
);
