import { randomBytes } from 'node:crypto';

/*
 * A lock value names its holder in every lock key and queue: `<engine>:<counter>`, plus
 * MULTI_RESOURCE_MARK for an acquire over several resources. The `<engine>` part is random per
 * engine and names the channel on which the nodes tell that engine's waiters that a lock was
 * handed to them: the scripts derive the channel from the value (luaWakeChannelOf), the engine
 * subscribes to it (LockValues.channel). Both are built here, and nowhere else.
 */

/** Channel prefix that wakes an engine's waiters (+ the engine part of their values). */
const WAKE_CHANNEL_PREFIX = '__redlock_wake__:';

/**
 * Last character of the lock values of acquires over several resources. A release hands a lock to
 * a waiter for one resource directly, and gives a waiter with this mark a turn to claim instead.
 */
export const MULTI_RESOURCE_MARK = '*';

/**
 * Last character of the lock values of readers (`mode: 'read'`, scripts/read.ts). The voters tell a
 * reader from a writer by it: a reader's value never sits in a lock key (readers hold the key's
 * READ_MARKER together, each its own entry of the readers hash), and a release lets every reader
 * at the head of a queue in together.
 */
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

/** Whether `value` is a reader's (what luaIsReader checks). */
export function isReader(value: string): boolean {
  return value.charCodeAt(value.length - 1) === 94; // READ_MARK
}

/** Lua expression: whether the lock value in `value` is a reader's. */
export function luaIsReader(value: string): string {
  return `string.byte(${value}, -1) == 94`;
}

/** Whether `value` belongs to an acquire of several resources (what luaIsMultiResource checks). */
export function isMultiResource(value: string): boolean {
  return value.endsWith(MULTI_RESOURCE_MARK);
}

/** Lua expression: whether the lock value in `value` belongs to an acquire of several resources. */
export function luaIsMultiResource(value: string): string {
  return `string.sub(${value}, -1) == '${MULTI_RESOURCE_MARK}'`;
}

/** The lock values of one engine: unique without a syscall (a random prefix and a counter). */
export class LockValues {
  private readonly prefix = randomBytes(12).toString('base64url');
  private counter = 0;
  /** The channel on which nodes tell this engine's waiters about hand-overs. */
  readonly channel = WAKE_CHANNEL_PREFIX + this.prefix;

  /**
   * A new value; one for several resources is marked (it is given turns, see scripts/queue.ts), and
   * so is a reader's (`read`: READ_MARK, which wins: readers are given turns of their own).
   */
  next(multiResource: boolean, read = false): string {
    const value = `${this.prefix}:${(this.counter++).toString(36)}`;
    if (read) return value + READ_MARK;
    return multiResource ? value + MULTI_RESOURCE_MARK : value;
  }
}
