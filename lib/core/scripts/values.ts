import type { Runtime } from '../runtime.js';

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
