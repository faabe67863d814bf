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
  };
}
