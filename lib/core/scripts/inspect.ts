import { luaScript } from './lua.js';

/** One voter's view of a lock key, read-only. */
export interface KeyView {
  /** The holder's value (or a turn), null when free. */
  readonly holder: string | null;
  /** Remaining lease, ms; null when free. */
  readonly ttlMs: number | null;
  /** The voter's fence counter: the highest token it issued for the resource; null when none. */
  readonly fence: number | null;
  /** The voter's clock when it answered, microseconds (what the clock guard compares at connect). */
  readonly clockUs?: number;
}

/**
 * Reads a lock key, its remaining lease and its fence counter in one atomic step; writes nothing.
 * KEYS: lock key, its fence counter. Returns {holder or false, pttl, fence or false, clock in us}.
 */
export const INSPECT = luaScript(
  'inspect',
  `
local holder = redis.call('GET', KEYS[1])
local fence = redis.call('GET', KEYS[2])
local now = redis.call('TIME')
return {holder, redis.call('PTTL', KEYS[1]), fence, tonumber(now[1]) * 1000000 + tonumber(now[2])}
`,
  { readOnly: true },
);

/** INSPECT's reply. */
export function decodeInspectReply(reply: unknown): KeyView {
  const [holder, pttl, fence, clock] = Array.isArray(reply) ? reply : [];
  const held = typeof holder === 'string' || Buffer.isBuffer(holder);
  return {
    holder: held ? String(holder) : null,
    ttlMs: held && typeof pttl === 'number' && pttl >= 0 ? pttl : null,
    fence: fence === null || fence === undefined || fence === false ? null : Number(fence),
    ...(typeof clock === 'number' ? { clockUs: clock } : {}),
  };
}
