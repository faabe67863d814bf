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
  /**
   * Whether grants carry the node's clock (the clock guard of the engine is on): the settings
   * argument then ends with ` c`, which a semaphore's slot search and a reader's acquire read as
   * its last character (the acquire script, on every lock's path, counts its arguments instead:
   * acquire.ts).
   */
  readonly clockReadings?: boolean;
}

/**
 * The settings of the scripts that grant (acquire, a semaphore's slot search), in the order of
 * their settings argument ({@link lockSettingsArg}).
 */
export const LOCK_SETTINGS = ['guardMs', 'fenceIdleMs', 'seedWindowMs', 'queueIdleMs'] as const;
/**
 * The settings of the let-go scripts, which hand a lock over (queue.ts's promote), in the order of
 * their settings argument ({@link handOverSettingsArg}). fenceIdleMs is second in both lists, so
 * that the token block (fence.ts) reads it from either.
 */
export const HAND_OVER_SETTINGS = ['turnMs', 'fenceIdleMs'] as const;
/**
 * The settings of a reader's acquire (read.ts), which grants and may hand a lock over too (a free
 * key with a line): {@link LOCK_SETTINGS}, then turnMs ({@link readSettingsArg}).
 */
export const READ_SETTINGS = [...LOCK_SETTINGS, 'turnMs'] as const;

/** One of the settings the scripts read. */
export type ScriptSetting = (typeof LOCK_SETTINGS)[number] | (typeof HAND_OVER_SETTINGS)[number];
/** The fields of one settings argument, in order. */
export type SettingsFields = typeof LOCK_SETTINGS | typeof HAND_OVER_SETTINGS | typeof READ_SETTINGS;

/** A setting as the scripts read it: whole milliseconds (seedWindowMs rounded down, the rest up). */
function wholeMs(settings: ScriptSettings, field: ScriptSetting): number {
  const ms = settings[field];
  return Math.max(0, field === 'seedWindowMs' ? Math.floor(ms) : Math.ceil(ms));
}

/*
 * A settings argument holds whole milliseconds, space-separated, in the order of its fields
 * (e.g. `60000 604800000 200 10400`). One argument rather than one per setting: every argument
 * costs an encoding on the client, a parse on the server and a Lua string, on every call, and the
 * usual grant and release read none of them. Not JSON: Lua would parse it on every call. Each
 * script gets only the settings it reads: the argument travels with every lock and release, to
 * every voter (B2: 31 bytes per call when every script got all five).
 */

/** The settings argument of the granting scripts ({@link LOCK_SETTINGS}; ` c` at the end: clock readings). */
export function lockSettingsArg(settings: ScriptSettings): string {
  const text = LOCK_SETTINGS.map((field) => wholeMs(settings, field)).join(' ');
  return settings.clockReadings ? `${text} c` : text;
}

/** The settings argument of a reader's acquire ({@link READ_SETTINGS}; ` c` at the end: clock readings). */
export function readSettingsArg(settings: ScriptSettings): string {
  const text = READ_SETTINGS.map((field) => wholeMs(settings, field)).join(' ');
  return settings.clockReadings ? `${text} c` : text;
}

/** The settings argument of the let-go scripts ({@link HAND_OVER_SETTINGS}). */
export function handOverSettingsArg(settings: ScriptSettings): string {
  return HAND_OVER_SETTINGS.map((field) => wholeMs(settings, field)).join(' ');
}

/**
 * Lua expression: the number `field` of the settings argument held in `arg` (a Lua expression
 * such as `ARGV[2]`) whose fields are `fields`. Parsed where it is used, on the rare paths (a
 * missing fence counter, a queue, a hand-over), so the usual grant and release never parse it.
 */
export function luaSetting(arg: string, field: ScriptSetting, fields: SettingsFields): string {
  const index = (fields as readonly ScriptSetting[]).indexOf(field);
  if (index < 0) throw new Error(`the settings argument ${fields.join(' ')} has no ${field}`);
  return `tonumber(string.match(${arg}, '^${'%d+ '.repeat(index)}(%d+)'))`;
}
