/** Engine settings compiled into its scripts, so that no call has to send them. */
export interface ScriptSettings {
  /** Restart guard in ms, 0 when off. */
  readonly guardMs: number;
  /** The restart-guard marker key. */
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

/** Settings rounded to whole milliseconds, as Lua receives them. */
export function compileSettings(settings: ScriptSettings): ScriptSettings {
  const exact = (ms: number) => Math.max(0, Math.ceil(ms));
  return {
    guardMs: exact(settings.guardMs),
    guardKey: settings.guardKey,
    fenceIdleMs: exact(settings.fenceIdleMs),
    turnMs: exact(settings.turnMs),
    queueIdleMs: exact(settings.queueIdleMs),
    seedWindowMs: Math.max(0, Math.floor(settings.seedWindowMs)),
  };
}
