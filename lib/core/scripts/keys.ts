import type { Runtime } from '../runtime.js';

/*
 * Key names (lock values, their marks and wake messages: below). Each resource gets its own hash tag, so every key kept beside its lock key (fence
 * counter, queue, readers) hashes to the same slot as the lock key: a script that touches them all
 * reaches one slot, as Redis Cluster requires, and declares them all. On a Cluster the restart-guard
 * marker is one per slot (a shard that lost its data must abstain while the others vote), named
 * with a hash tag that falls in that slot; a single server has one marker.
 */

/** Suffixes of the keys kept beside a lock key, under its hash tag. */
export const FENCE_SUFFIX = ':fence';
export const QUEUE_SUFFIX = ':queue';
/** A read-write lock's readers: a hash, reader value -> the voter's clock (ms) at which its lease ends. */
export const READERS_SUFFIX = ':readers';
/**
 * A semaphore's slot keys are its lock key + PERMIT_INFIX + the permit's number; every slot shares
 * one queue, the lock key + PERMITS_QUEUE_SUFFIX.
 */
export const PERMIT_INFIX = ':permit:';
export const PERMITS_QUEUE_SUFFIX = ':permits:queue';
/** The prefix of the marker a semaphore keeps in its lock key: the marker is this + its permits. */
export const PERMITS_MARK = '~permits:';
/** What a lock key holds while readers hold it ('~' and no ':': never a lock value or a turn). */
export const READ_MARKER = '~read';
/** The restart-guard marker's name after the prefix. */
export const GUARD_MARKER_NAME = '__restart_guard__';

/** The key prefix of a single server's restart-guard marker `guardKey`. */
export function keyPrefixOf(guardKey: string): string {
  return guardKey.slice(0, guardKey.length - GUARD_MARKER_NAME.length);
}
/** The identity record's suffix, after a marker's key (scripts/guards.ts). */
export const IDENTITY_SUFFIX = ':id';

/** The lock key of `resource` under `prefix`. */
export function lockKeyOf(prefix: string, resource: string): string {
  return `${prefix}{${resource}}`;
}

/** The key of slot `permit` of the semaphore whose lock key is `lockKey`. */
export function slotKey(lockKey: string, permit: number): string {
  return lockKey + PERMIT_INFIX + permit;
}

/**
 * The queue of a lock key: its own for a plain lock's key, the semaphore's shared one for a slot
 * key (its lock key + PERMIT_INFIX + a number). A plain lock's key ends with its hash tag's '}'.
 */
export function queueKeyOf(key: string): string {
  if (key.charCodeAt(key.length - 1) !== 125) {
    const at = key.lastIndexOf(PERMIT_INFIX);
    if (at > 0 && at > key.lastIndexOf('}')) return key.slice(0, at) + PERMITS_QUEUE_SUFFIX;
  }
  return key + QUEUE_SUFFIX;
}

/** Number of hash slots of a Redis Cluster. */
export const SLOT_COUNT = 16384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** CRC16-XMODEM, the checksum Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/**
 * The slot of `key`, as Redis computes it: with a `{` followed later by a `}` and something between
 * them, only the text between the FIRST `{` and the first `}` after it is hashed (the hash tag).
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key, 'utf8')) % SLOT_COUNT;
}

let tags: string[] | undefined;

/** A short string that hashes to `slot` (the same in every process); the table is built on first use. */
function slotTag(slot: number): string {
  if (!tags) {
    const table = new Array<string>(SLOT_COUNT);
    for (let i = 0, found = 0; found < SLOT_COUNT; i++) {
      const candidate = i.toString(36);
      const s = crc16(Buffer.from(candidate, 'latin1')) % SLOT_COUNT;
      if (table[s] === undefined) {
        table[s] = candidate;
        found++;
      }
    }
    tags = table;
  }
  return tags[slot]!;
}

/** The restart-guard marker of `slot`: `<prefix>__restart_guard__{<a tag of that slot>}`. */
export function slotMarkerKey(guardKey: string, slot: number): string {
  return `${guardKey}{${slotTag(slot)}}`;
}

/*
 * A lock value names its holder in every lock key and queue: `<engine>:<counter>`, plus a mark for
 * an acquire over several resources or a reader. The `<engine>` part is random per engine and names
 * the channel on which the nodes tell that engine's waiters that a lock was handed to them: the
 * scripts derive the channel from the value (luaWakeChannelOf), the engine subscribes to it.
 * What a node publishes there (queue.ts writes it, the engine reads it), space-separated:
 *   H <value> <cause> <token> <clockUs>   the lock itself, with its fencing token and the node's
 *                                         clock (microseconds) when it handed it over;
 *   T <value> <cause>                     a turn to claim (a waiter for several resources, a reader).
 * `cause` is the value of the one whose release (or departure) handed it on.
 */

/** Channel prefix that wakes an engine's waiters (+ the engine part of their values). */
const WAKE_CHANNEL_PREFIX = '__redlock_wake__:';
/** Last character of the values of acquires over several resources: they are given turns. */
export const MULTI_RESOURCE_MARK = '*';
/** Last character of a reader's values (`mode: 'read'`): readers share a key (read.ts). */
export const READ_MARK = '^';
/** Prefix of a lock key's value while it waits for the waiter named after it ('~' is no value's). */
export const TURN_MARK = '~';

/** Lua expression: the wake channel of the engine that owns the lock value in `value`. */
export function luaWakeChannelOf(value: string): string {
  return `'${WAKE_CHANNEL_PREFIX}' .. string.match(${value}, '^[^:]*')`;
}

/** The wake channel of the engine that owns `value` (what luaWakeChannelOf computes in Lua). */
export function wakeChannelOf(value: string): string {
  const colon = value.indexOf(':');
  return WAKE_CHANNEL_PREFIX + (colon < 0 ? value : value.slice(0, colon));
}

/** Whether `value` is a reader's. */
export function isReader(value: string): boolean {
  return value.charCodeAt(value.length - 1) === 94; // READ_MARK
}

/** Lua expression: whether the lock value in `value` is a reader's. */
export function luaIsReader(value: string): string {
  return `string.byte(${value}, -1) == 94`;
}

/** Whether `value` belongs to an acquire of several resources. */
export function isMultiResource(value: string): boolean {
  return value.endsWith(MULTI_RESOURCE_MARK);
}

/** Lua expression: whether the lock value in `value` belongs to an acquire of several resources. */
export function luaIsMultiResource(value: string): string {
  return `string.sub(${value}, -1) == '${MULTI_RESOURCE_MARK}'`;
}

/** The lock values of one engine: unique without a syscall (a random prefix and a counter). */
export class LockValues {
  private readonly prefix: string;
  private counter = 0;
  /** The channel on which nodes tell this engine's waiters about hand-overs. */
  readonly channel: string;

  constructor(runtime: Runtime) {
    this.prefix = runtime.randomText(12);
    this.channel = WAKE_CHANNEL_PREFIX + this.prefix;
  }

  /** A new value: marked for several resources (turns), or for a reader (which wins). */
  next(multiResource: boolean, read = false): string {
    const value = `${this.prefix}:${(this.counter++).toString(36)}`;
    if (read) return value + READ_MARK;
    return multiResource ? value + MULTI_RESOURCE_MARK : value;
  }
}

/** A decoded wake message. */
export type WakeMessage =
  | {
      readonly kind: 'handed';
      readonly value: string;
      readonly cause: string;
      readonly token: number;
      readonly clockUs: number;
    }
  | { readonly kind: 'turn'; readonly value: string; readonly cause: string };

/** Lua expression: the message handing the lock to `head` (Lua locals: head, cause, token, now). */
export const LUA_HANDED_MESSAGE = `'H ' .. head .. ' ' .. cause .. ' ' .. string.format('%.0f', token) .. ' ' .. now[1] .. string.format('%06d', tonumber(now[2]))`;
/** Lua expression: the message giving `head` its turn (Lua locals: head, cause). */
export const LUA_TURN_MESSAGE = `'T ' .. head .. ' ' .. cause`;

/** Writes a wake message (as the Lua expressions above do: the in-memory transport's). */
export function encodeWakeMessage(message: WakeMessage): string {
  return message.kind === 'turn'
    ? `T ${message.value} ${message.cause}`
    : `H ${message.value} ${message.cause} ${message.token.toFixed(0)} ${message.clockUs.toFixed(0)}`;
}

/** Reads a wake message; undefined for anything else (a foreign publisher on the channel). */
export function decodeWakeMessage(message: string): WakeMessage | undefined {
  const fields = message.split(' ');
  const [tag, value, cause] = fields;
  if (value === undefined || cause === undefined) return undefined;
  if (tag === 'T' && fields.length === 3) return { kind: 'turn', value, cause };
  if (tag !== 'H' || fields.length !== 5) return undefined;
  const token = Number(fields[3]);
  const clockUs = Number(fields[4]);
  return Number.isFinite(token) && Number.isFinite(clockUs)
    ? { kind: 'handed', value, cause, token, clockUs }
    : undefined;
}
