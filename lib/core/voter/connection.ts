import { IdentityGuard } from '../guards/identity.js';
import { settleWithin } from '../runtime.js';
import {
  CLOCK_MARK,
  decodeClockMarkReply,
  fenceCounterPattern,
  RUN_ID,
  type ClockMark,
} from '../scripts/guards.js';
import { keyPrefixOf, slotMarkerKey, wakeChannelOf } from '../scripts/keys.js';
import { LOCK_SCRIPTS } from '../scripts/library.js';
import type { Transport } from '../transport/transport.js';
import { describeError, isFinalFault, nodeErrorLine, nodeFault } from './describe-error.js';
import { seedSlotMarkers } from './batches.js';
import { runScript } from './send.js';
import { type ScriptMode } from './server.js';
import type { VoterContext } from './voter-api.js';

/**
 * The voter's connection side, which TransportVoter (voter.ts: the lock's operations) extends: the
 * identity guard and preflight per shard (guards/identity.ts), what the transport's events mean
 * (health and abstention listeners, one log line per kind of fault, final refusals), readiness,
 * the guard maintenance run on every shard (seeding a Cluster's slot markers, the clock guard's
 * marking), and close.
 */
export class VoterConnection {
  protected readonly guard: IdentityGuard;
  protected readonly scripts: ScriptMode;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly abstentionListeners: Array<(forMs: number, why: string, shard?: string) => void> = [];
  private reported: string | undefined;
  /** Waiters of waitReady, told of a final refusal (credentials, ACL) from the transport. */
  private readonly refusedListeners = new Set<() => void>();
  private seeding: Promise<void> | undefined;
  private closing = false;

  constructor(
    readonly transport: Transport,
    protected readonly context: VoterContext,
  ) {
    this.scripts = context.scripts ?? 'eval';
    const { settings, runtime, logger } = context;
    this.guard = new IdentityGuard(transport, this, {
      runtime,
      logger,
      guardMs: settings.guardMs,
      timeoutMs: Math.max(context.connectTimeout, 1000),
      preflight: context.preflight,
      scripts: this.scripts,
      wakeChannel: wakeChannelOf('preflight'),
      keyPrefix: keyPrefixOf(settings.guardKey),
      markerOf: (shard) => this.shardMarker(shard),
      onAbstention: (shard, forMs, why) => {
        for (const listener of this.abstentionListeners)
          listener(forMs, why, transport.clustered ? shard : undefined);
      },
      onCheckFailed: (err) => this.reportError(err),
      prepare: (shard) => {
        // Functions: the identity guard's check made sure that the library is there.
        if (this.scripts === 'functions') return;
        // A transport that does not see reconnections reads the run_id behind its votes: load it too.
        const scripts = transport.seesReconnects ? LOCK_SCRIPTS : [...LOCK_SCRIPTS, RUN_ID];
        for (const script of scripts)
          transport.send({ shard }, ['SCRIPT', 'LOAD', script.source]).catch(() => undefined);
      },
    });
    transport.on((event) => {
      if (event.type === 'error') {
        if (isFinalFault(nodeFault(event.error))) for (const refused of this.refusedListeners) refused();
        return this.reportError(event.error);
      }
      if (event.type === 'up') {
        if (this.reported === 'auth')
          logger.log(`Redis node ${this.label} accepts the credentials now: connected again`);
        else if (this.reported !== undefined) logger.log(`Redis node ${this.label} is reachable again`);
        this.reported = undefined;
        if (transport.clustered && !this.seeding) this.seeding = this.seed();
      }
      if (event.type === 'connected') return;
      for (const listener of this.healthListeners)
        listener(event.type === 'up', event.type === 'down' ? event.reason : undefined);
    });
  }

  get label(): string {
    return this.transport.label;
  }

  get connected(): boolean {
    if (!this.transport.up || this.guard.refusal() !== undefined) return false;
    return this.transport.clustered || this.guard.readiness('').reason === undefined;
  }

  get server(): string | undefined {
    return this.guard.software();
  }

  get serverIds(): readonly string[] {
    return this.guard.serverIds();
  }

  get pending(): boolean {
    if (this.guard.refusal() !== undefined) return false;
    if (!this.transport.up) return this.transport.lastError === undefined;
    if (this.guard.checking !== undefined) return true;
    // Up: pending until every shard it reaches was checked (a check that failed is tried again).
    return [...this.transport.shards().keys()].some(
      (shard) => this.guard.readiness(shard).reason !== undefined,
    );
  }

  get connectionError(): string | undefined {
    if (this.connected) return undefined;
    if (!this.transport.up) return this.transport.lastError ?? 'not connected';
    return this.guard.refusal() ?? this.guard.readiness('').reason;
  }

  async waitReady(timeoutMs: number): Promise<boolean> {
    const started = this.context.runtime.now();
    // A refused login or permission is final until someone changes the node: no use waiting for it.
    let onRefused!: () => void;
    const refused = new Promise<false>((resolve) =>
      this.refusedListeners.add((onRefused = () => resolve(false))),
    );
    const up = await Promise.race([this.transport.connect(timeoutMs), refused]);
    this.refusedListeners.delete(onRefused);
    if (!up) return false;
    const left = timeoutMs - (this.context.runtime.now() - started);
    for (const shard of this.transport.shards().keys()) this.guard.readiness(shard);
    const checking = this.guard.checking;
    if (checking) await settleWithin(this.context.runtime, checking, left);
    return this.connected;
  }

  markClockStep(forMs: number, steppedPastMs?: number): Promise<ClockMark> {
    const pattern = fenceCounterPattern(keyPrefixOf(this.context.settings.guardKey));
    const past =
      steppedPastMs === undefined || !this.transport.clustered ? '' : String(Math.floor(steppedPastMs));
    const shards = this.transport.clustered ? [...this.transport.shards()] : [['', [] as number[]] as const];
    const marks = shards.map(([shard, slots]) => {
      const markers = this.transport.clustered
        ? slots.map((slot) => slotMarkerKey(this.context.settings.guardKey, slot))
        : [this.context.settings.guardKey];
      const send = (command: readonly string[]) => this.transport.send({ shard }, command);
      return runScript(send, CLOCK_MARK, [], [String(Math.ceil(forMs)), pattern, past, ...markers], {
        mode: this.scripts,
        bySource: true,
      }).then(decodeClockMarkReply);
    });
    return Promise.all(marks).then((all) => ({
      abstainMs: Math.max(0, ...all.map((m) => m.abstainMs)),
      countersDropped: all.reduce((sum, m) => sum + m.countersDropped, 0),
    }));
  }

  /** The ms the shard of `keys` abstains for from now under the identity guard (0: it votes). */
  abstainingForMs(keys: readonly string[]): number {
    const shard = this.transport.shardOf(keys[0]!);
    return shard === undefined ? 0 : this.guard.abstainingForMs(shard);
  }

  async ping(): Promise<void> {
    await this.transport.send(undefined, ['PING']);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.transport.subscribe(channel, onMessage);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  onAbstention(listener: (forMs: number, why: string, shard?: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  /** Why a command failed, log-safe; while the transport is down, its own last error says more. */
  failureReason(err: unknown): string {
    const message = describeError(err);
    const { lastError, up } = this.transport;
    return !up && lastError !== undefined && lastError !== message ? `not connected: ${lastError}` : message;
  }

  async close(timeoutMs: number): Promise<void> {
    this.closing = true;
    await Promise.all([
      this.guard.close(timeoutMs),
      this.seeding && settleWithin(this.context.runtime, this.seeding, timeoutMs),
    ]);
    await this.transport.close(timeoutMs);
  }

  /** The marker beside which `shard`'s identity record sits: the server's, or its lowest slot's. */
  private shardMarker(shard: string): string {
    const { guardKey } = this.context.settings;
    if (!this.transport.clustered) return guardKey;
    const slots = this.transport.shards().get(shard) ?? [0];
    return slotMarkerKey(guardKey, Math.min(...slots));
  }

  private seed(): Promise<void> {
    const { guardKey, guardMs } = this.context.settings;
    return seedSlotMarkers(this.transport, guardKey, guardMs, () => this.closing, this.scripts).catch(
      () => undefined,
    );
  }

  /**
   * A transport error: logged once per kind of fault in a row. Losing a node is one kind whatever
   * its messages (a kill is the dropped socket, then each refused reconnection): one line until it
   * is reachable again.
   */
  private reportError(err: unknown): void {
    const kind = nodeFault(err) ?? 'unavailable';
    if (kind !== this.reported) this.context.logger.warn(nodeErrorLine(this.label, err));
    this.reported = kind;
  }
}
