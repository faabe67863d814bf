import {
  FENCE_SUFFIX,
  GUARD_MARKER_NAME,
  PERMIT_INFIX,
  PERMITS_QUEUE_SUFFIX,
  QUEUE_SUFFIX,
} from '../keys.js';

/**
 * How the lock scripts that run on every lock (acquire and the three let-go scripts) find the keys
 * kept beside a lock key: its fence counter and its queue. Each of those scripts is built twice from
 * one Lua text, once per layout; both builds are constants (one SHA each for every engine).
 *
 * - `derived` (one Redis server): KEYS holds the lock keys only, and the script derives each
 *   counter's and queue's name from its lock key, as keys.ts does. The acquire script's restart-
 *   guard marker follows them only when the key prefix holds a '{' ({@link markerDerivable});
 *   otherwise the script derives it too: the lock key up to its first '{' is the prefix, and the
 *   marker is the prefix + GUARD_MARKER_NAME (KeySpace). A lock key ends with '}' or a slot's
 *   number, the marker with GUARD_MARKER_NAME's '_': the last key's last byte tells which, read
 *   only when there are two keys or more (one lock key alone, the usual acquire, calls no string
 *   function: string.sub of the whole suffix cost 1.2k of the 85.7k instructions of an acquire +
 *   release under callgrind, on every acquire). A server that is not a cluster node has no slots
 *   to route by, so undeclared keys cost nothing there; and the names share the lock key's hash
 *   tag, so on a cluster node given as a plain node (preflight refuses it, unless it is off) they
 *   are still in the declared key's slot, which Redis 7 allows. Declaring them cost B2 2/3 more
 *   bytes per operation (3,379 instead of 2,001) and 14 % of its throughput.
 * - `declared` (a Redis Cluster voter): every key the script touches is declared, lock keys
 *   1..n, fence counters n+1..2n, queues 2n+1..3n, as Redis Cluster's contract requires
 *   (scripts/calls.ts builds the list).
 */
export interface KeyLayout {
  /** Which layout: part of the scripts' names. */
  readonly name: 'derived' | 'declared';
  /**
   * Lua statements: declare `local n`, the number of resources, and with `marker` also `local
   * marker`, the restart-guard marker's key or false (then {@link marker} derives it).
   */
  head(marker: boolean): string;
  /** Lua expression: the restart-guard marker's key (after `head(true)`); read on rare paths only. */
  readonly marker: string;
  /** Lua expression: the fence counter of resource `i` (a Lua expression), `n` resources. */
  fence(i: string): string;
  /** Lua statements: declare `local <name>` as the queue of resource `i`. */
  queue(name: string, i: string): string;
}

/** Secondary keys derived in Lua from the lock keys (one Redis server). */
export const DERIVED_KEYS: KeyLayout = {
  name: 'derived',
  head: (marker) =>
    marker
      ? `local n = #KEYS
local marker = false
if n > 1 and string.byte(KEYS[n], -1) == ${GUARD_MARKER_NAME.charCodeAt(GUARD_MARKER_NAME.length - 1)} then marker = KEYS[n]; n = n - 1 end`
      : 'local n = #KEYS',
  marker: `(marker or string.match(KEYS[1], '^[^{]*') .. '${GUARD_MARKER_NAME}')`,
  fence: (i) => `KEYS[${i}] .. '${FENCE_SUFFIX}'`,
  // keys.ts queueKeyOf: a semaphore's slot key (no '}' at the end, PERMIT_INFIX after the last
  // '}') shares its semaphore's queue; every other lock key has its own.
  queue: (name, i) => `
  local ${name} = KEYS[${i}] .. '${QUEUE_SUFFIX}'
  if string.byte(KEYS[${i}], -1) ~= 125 then
    local base = string.match(KEYS[${i}], '^(.+)${PERMIT_INFIX}[^}]*$')
    if base then ${name} = base .. '${PERMITS_QUEUE_SUFFIX}' end
  end`,
};

/** Every key declared (a Redis Cluster): lock keys, fence counters, queues, in that order. */
export const DECLARED_KEYS: KeyLayout = {
  name: 'declared',
  head: (marker) =>
    marker ? 'local n = (#KEYS - 1) / 3\nlocal marker = KEYS[#KEYS]' : 'local n = #KEYS / 3',
  marker: 'marker',
  fence: (i) => `KEYS[n + ${i}]`,
  queue: (name, i) => `
  local ${name} = KEYS[2 * n + ${i}]`,
};

/**
 * Whether a single server's acquire script derives the restart-guard marker `guardKey` (the
 * engine's: `<prefix>__restart_guard__`) from the lock keys, so that it is not sent: when the
 * prefix holds no '{' (see {@link DERIVED_KEYS}).
 */
export function markerDerivable(guardKey: string): boolean {
  return guardKey.endsWith(GUARD_MARKER_NAME) && !guardKey.slice(0, -GUARD_MARKER_NAME.length).includes('{');
}
