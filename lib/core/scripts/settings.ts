/**
 * An engine's settings for its scripts. The scripts are the same for every engine (one SHA each,
 * whatever the options): the settings travel with each call as ONE argument with the same layout
 * for every script that reads any (`guardMs fenceIdleMs seedWindowMs queueIdleMs turnMs clock`,
 * whole milliseconds, space-separated), parsed in Lua only on the paths that need a field.
 */
export interface ScriptSettings {
  /** Restart guard in ms, 0 when off. */
  readonly guardMs: number;
  /** The restart-guard marker of a single server, `<keyPrefix>__restart_guard__` (a Cluster's are per slot). */
  readonly guardKey: string;
  /** Idle expiry of the fence counters, ms. */
  readonly fenceIdleMs: number;
  /**
   * How far above its own clock a voter may seed a missing fence counter to agree with the
   * caller's proposal, ms (fence.ts). Below the restart guard and the counters' idle expiry.
   */
  readonly seedWindowMs: number;
  /**
   * Idle expiry of a queue, ms: every attempt of a waiter renews it, and waiters try at least this
   * often, so it only ends queues whose waiters are all gone.
   */
  readonly queueIdleMs: number;
  /** How long a node hands a lock (or a turn) to the first waiter for, ms. */
  readonly turnMs: number;
  /** Whether grants carry the node's clock (the engine's clock guard is on). */
  readonly clockReadings?: boolean;
}

/** The fields of the settings argument, in order (the last, `clock`, is 1 or 0). */
export const SETTING_FIELDS = ['guardMs', 'fenceIdleMs', 'seedWindowMs', 'queueIdleMs', 'turnMs'] as const;

/** One of the settings the scripts read. */
export type ScriptSetting = (typeof SETTING_FIELDS)[number];

/** The settings argument (seedWindowMs rounded down, the rest up: the safe side of each). */
export function settingsArg(settings: ScriptSettings): string {
  const ms = SETTING_FIELDS.map((field) =>
    Math.max(0, field === 'seedWindowMs' ? Math.floor(settings[field]) : Math.ceil(settings[field])),
  );
  return `${ms.join(' ')} ${settings.clockReadings ? 1 : 0}`;
}

/** Lua expression: setting `field` of the settings argument in `arg` (a Lua expression such as `ARGV[2]`). */
export function luaSetting(arg: string, field: ScriptSetting): string {
  return `tonumber(string.match(${arg}, '^${'%d+ '.repeat(SETTING_FIELDS.indexOf(field))}(%d+)'))`;
}

/** Lua expression: whether the settings argument in `arg` asks for clock readings (its last byte is '1'). */
export function luaClockReadings(arg: string): string {
  return `string.byte(${arg}, -1) == 49`;
}
