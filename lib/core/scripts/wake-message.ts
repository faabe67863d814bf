/*
 * What a node publishes to a waiter's engine when a release hands it something (scripts/queue.ts
 * writes these; queue/wake-channel.ts reads them). Space-separated, first field a tag:
 *   H <value> <cause> <token> <clockUs>   the lock itself, with its fencing token and the node's
 *                                         clock (microseconds) when it handed it over;
 *   T <value> <cause>                     a turn to claim (a waiter for several resources).
 * `cause` is the value of the one whose release (or departure) handed it on.
 */

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

/** Writes a wake message (what the Lua expressions above build, for voters that are not Redis). */
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
  if (tag === 'H' && fields.length === 5) {
    const token = Number(fields[3]);
    const clockUs = Number(fields[4]);
    if (Number.isFinite(token) && Number.isFinite(clockUs)) {
      return { kind: 'handed', value, cause, token, clockUs };
    }
  }
  return undefined;
}
