import { setMaxListeners } from 'node:events';
import { EngineClosedError } from '../errors.js';
import type { LockEvents } from '../events.js';
import type { RedlockOptions } from '../options.js';
import type { Preflight } from '../preflight.js';
import type { NodeStatus } from '../quorum/health.js';
import { attachTelemetry } from '../telemetry.js';
import { bootstrap } from './bootstrap.js';
import type { Leases } from './leases.js';
import type { EngineParts } from './parts.js';
import type { WakeChannel } from './wake-channel.js';

/*
 * The engine's start and end (redlock.ts): connecting its nodes, and the shutdown in order.
 */

/**
 * The acquires in flight: the engine's acquire counts them (redlock.ts, untilShutdown), calling
 * nothing here.
 */
export interface InFlight {
  /**
   * Their callers, by the function that rejects them: shutdown rejects them at once, and a grant
   * that lands for one of them afterwards is released.
   */
  readonly callers: Set<(err: Error) => void>;
  /** Acquires whose attempts still run (also those rejected by shutdown), and who waits for none. */
  attempting: number;
  onIdle: (() => void) | undefined;
}

/** Connects the engine's nodes and shuts the engine down (`Redlock.connect` and `Redlock.close`). */
export class Lifecycle {
  private readonly shutdown = new AbortController();
  /** Aborts with EngineClosedError when shutdown begins: waiting acquires end on it. */
  readonly signal: AbortSignal = this.shutdown.signal;
  /** The shutdown in progress or done (see {@link close}). */
  closing: Promise<void> | undefined;
  private detachTelemetry: Promise<(() => void) | undefined> | undefined;

  constructor(
    private readonly parts: EngineParts,
    /** Undefined when preflight is off. */
    private readonly preflight: Preflight | undefined,
    private readonly telemetry: RedlockOptions['telemetry'],
    private readonly events: LockEvents,
    private readonly leases: Leases,
    private readonly wakes: WakeChannel,
    private readonly inFlight: InFlight,
  ) {
    // Every waiting acquire listens for shutdown on it: more than Node's 10 is load, not a leak
    // (Node would print a MaxListenersExceededWarning at the 11th waiter).
    setMaxListeners(Infinity, this.shutdown.signal);
  }

  /** `Redlock.connect`; a failed bootstrap calls `close`. */
  async connect(close: () => Promise<void>): Promise<NodeStatus[]> {
    // OpenTelemetry providers are registered before the app boots: look for them now.
    this.detachTelemetry ??= attachTelemetry(this.events, this.parts.runtime, this.telemetry);
    await this.detachTelemetry;
    return bootstrap(this.parts, this.preflight, close);
  }

  /** `Redlock.close`: idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const reason = new EngineClosedError();
    this.shutdown.abort(reason);
    const { inFlight } = this;
    for (const reject of inFlight.callers) reject(reason);
    inFlight.callers.clear();
    await this.leases.drain(reason, this.parts.options.drainTimeout);
    // Attempts still running end within their round (waiters at once): their grants are released.
    if (inFlight.attempting > 0) await new Promise<void>((resolve) => (inFlight.onIdle = resolve));
    this.wakes.close();
    await this.parts.voters.close();
    (await this.detachTelemetry)?.();
    this.events.complete();
  }
}
