/**
 * An engine's settings for its scripts. The scripts are the same for every engine (one SHA each,
 * whatever the options): the settings travel with each call, as one short argument
 * ({@link settingsArg}), and are read in Lua only on the paths that need them.
 */
export interface ScriptSettings {
  /** Restart guard in ms, 0 when off. */
  readonly guardMs: number;
  /**
   * The restart-guard marker key: passed to the acquire script as its last key (a Redis Cluster
   * voter passes the marker of the lock keys' slot instead, see voter/ioredis-cluster/slots.ts).
   */
  readonly guardKey: string;
  /** Idle expiry of the fence counters, ms. */
  readonly fenceIdleMs: number;
  /** How long a node hands a lock (or a turn) to the first waiter for, ms. */
  readonly turnMs: number;
  /**
   * Idle expiry of a queue, ms: every attempt of a waiter renews it, and waiters try at least
   * this often (they re-check every second), so it only ends queues whose waiters are all gone.
   */
  readonly queueIdleMs: number;
  /**
   * How far above its own clock a voter may seed a missing fence counter to agree with the
   * caller's proposal, ms (see fence.ts). Below the restart guard and the counters' idle expiry:
   * a counter is never lost and seeded again sooner than that.
   */
  readonly seedWindowMs: number;
}

/** The settings the scripts read, in the order of the settings argument. */
const FIELDS = ['guardMs', 'fenceIdleMs', 'seedWindowMs', 'queueIdleMs', 'turnMs'] as const;

/** One of the settings the scripts read. */
export type ScriptSetting = (typeof FIELDS)[number];

/**
 * The settings argument of the scripts: whole milliseconds, space-separated, in FIELDS order
 * (e.g. `60000 604800000 100 10800 200`). One argument rather than five: every argument costs an
 * encoding on the client, a parse on the server and a Lua string, on every call, and the usual
 * grant and release read none of them. Not JSON: Lua would parse it on every call.
 */
export function settingsArg(settings: ScriptSettings): string {
  const whole = (ms: number) => Math.max(0, Math.ceil(ms));
  return [
    whole(settings.guardMs),
    whole(settings.fenceIdleMs),
    Math.max(0, Math.floor(settings.seedWindowMs)),
    whole(settings.queueIdleMs),
    whole(settings.turnMs),
  ].join(' ');
}

/**
 * Lua expression: the number `field` of the settings argument held in `arg` (a Lua expression
 * such as `ARGV[2]`). Parsed where it is used, on the rare paths (a missing fence counter, a
 * queue, a hand-over), so the usual grant and release never parse the argument.
 */
export function luaSetting(arg: string, field: ScriptSetting): string {
  return `tonumber(string.match(${arg}, '^${'%d+ '.repeat(FIELDS.indexOf(field))}(%d+)'))`;
}
