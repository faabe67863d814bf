import type { RedlockLogger } from '../logger.js';
import type { Preflight } from '../preflight.js';
import {
  CLOCK_MARK_SLOTS,
  clockMarkSlotsArgs,
  decodeClockMarkReply,
  type ClockMark,
  type LuaScript,
} from '../scripts/index.js';
import { settleWithin } from '../timeouts.js';
import { reviewShards, type ShardServer } from './cluster-preflight.js';
import { assertOneSlot, keySlot, slotMarkerKey } from './ioredis-cluster/slots.js';
import type { ScriptClient } from './script-client.js';
import type { VoterContext } from './voter.js';

/**
 * The part of a {@link ScriptClient} that is the same for every client of a Redis Cluster
 * (ioredis Cluster, node-redis createCluster, Valkey GLIDE GlideClusterClient; the mapping of the
 * algorithm onto a cluster is told in ioredis-cluster/cluster-voter.ts):
 * - the restart-guard marker of the lock keys' slot, and the slots' markers seeded once, when the
 *   voter first connects (ioredis-cluster/slot-markers.ts), so that a new cluster abstains once
 *   for the guard, not once per slot;
 * - a key's slot (a watchdog's extensions go as one call per slot);
 * - `reorders`: a Cluster client may send a command again after later ones (MOVED, a slot map
 *   being refreshed), so a let-go waits for its acquire (script-voter.ts);
 * - `declaresEveryKey`: the lock scripts' builds that declare every key (CLUSTER_SCRIPTS);
 * - health: up, down and errors, logged once per distinct message;
 * - preflight of every master each time the cluster connects (cluster-preflight.ts): under
 *   `preflight: 'error'` a misconfigured cluster does not vote; acquires and `waitReady` wait for
 *   the review in flight.
 * A client adapter supplies the transport: running a script routed by its first key, whether it is
 * connected, loading the scripts on every master, its slots by shard, its masters for preflight,
 * and its subscriptions.
 */
export abstract class ClusterScriptClient implements ScriptClient {
  abstract readonly label: string;
  lastError: string | undefined;
  /** A command that meets MOVED or a slot refresh is sent again, after later ones. */
  readonly reorders = true;
  /**
   * Every key a script touches is declared, as Redis Cluster requires: the voter sends the
   * CLUSTER_SCRIPTS builds (scripts/key-layout.ts), which the adapters load on every master.
   */
  readonly declaresEveryKey = true;
  protected readonly guardKey: string;
  protected readonly guardMs: number;
  protected readonly logger: RedlockLogger;
  private up = false;
  private seeded = false;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly preflight: Preflight | undefined;
  private readonly reviewTimeoutMs: number;
  /** The voter this adapter serves (preflight reviews per voter). */
  private voter: object = this;
  /** Preflight's refusal (`preflight: 'error'`): the cluster does not vote while it stands. */
  private refusal: string | undefined;
  private reviewing: Promise<void> | undefined;
  /** Set when the adapter closes: the slots' seeding stops at its next chunk. */
  protected closing = false;
  /** The seeding of the slots' markers in flight, if any. */
  private seeding: Promise<void> | undefined;

  constructor(context: VoterContext) {
    this.guardKey = context.settings.guardKey;
    this.guardMs = context.settings.guardMs;
    this.logger = context.logger;
    this.preflight = context.preflight;
    this.reviewTimeoutMs = Math.max(context.connectTimeout, 1000);
  }

  /** Whether the client's connection to the cluster is up (before preflight's verdict). */
  protected abstract get transportUp(): boolean;
  /** Runs a script routed by its first key (EVALSHA, EVAL on NOSCRIPT). */
  protected abstract send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T>;
  /** Resolves once the client's connection is up, or `timeoutMs` passed: whether it is. */
  protected abstract waitTransport(timeoutMs: number): Promise<boolean>;
  /** The masters now, as preflight reads them. */
  protected abstract shardServers(): readonly ShardServer[] | Promise<readonly ShardServer[]>;
  abstract ping(): Promise<void>;
  abstract subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  abstract close(timeoutMs: number): Promise<void>;
  /**
   * Loads the scripts (CLUSTER_SCRIPTS.all) on every master, so that calls rarely meet NOSCRIPT
   * (each shard has its own cache).
   */
  protected abstract loadScripts(): void;
  /** Seeds the slots' restart-guard markers (ioredis-cluster/slot-markers.ts); never rejects. */
  protected abstract seedMarkers(): Promise<void>;
  /** The slots each master serves now, by its address (the client's slot map). */
  protected abstract slotsByShard(): ReadonlyMap<string, readonly number[]>;
  /** Runs a keyless script on the master that serves the slot of `routeKey` (one of its markers). */
  protected abstract runOnShard(
    script: LuaScript,
    routeKey: string,
    args: readonly string[],
    timeoutMs: number,
  ): Promise<unknown>;

  attach(voter: object): void {
    this.voter = voter;
  }

  get connected(): boolean {
    return this.transportUp && this.refusal === undefined;
  }

  get connectionError(): string | undefined {
    if (this.connected) return undefined;
    return this.transportUp ? this.refusal : (this.lastError ?? 'not connected');
  }

  /** Preflight's review in flight: an acquire waits for it (it may yet refuse the cluster). */
  get checking(): Promise<void> | undefined {
    return this.reviewing;
  }

  run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    if (this.refusal !== undefined) return Promise.reject(new Error(this.refusal));
    return this.send(script, keys, args, decode);
  }

  waitReady(timeoutMs: number): Promise<boolean> {
    const started = performance.now();
    return this.waitTransport(timeoutMs).then(async () => {
      const reviewing = this.reviewing;
      if (reviewing) await settleWithin(reviewing, timeoutMs - (performance.now() - started));
      return this.connected;
    });
  }

  /**
   * The marker of the lock keys' slot (ioredis-cluster/slots.ts): a script may only touch the keys
   * of one slot, and a shard that lost its data must abstain while the others vote.
   * @throws CrossSlotLockError for keys of several slots.
   */
  markerKey(lockKeys: readonly string[]): string {
    const slot =
      lockKeys.length === 1 ? keySlot(lockKeys[0]!) : assertOneSlot(lockKeys, lockKeys, this.label);
    return slotMarkerKey(this.guardKey, slot);
  }

  keySlot(key: string): number {
    return keySlot(key);
  }

  /**
   * The clock guard's marking for every client (scripts/clock-mark.ts), master by master: each
   * master whose own clock is past `steppedPastMs` (the voters' time at the marking plus the clock
   * guard, as the marking engine reads it; undefined: every master) puts all of its slots under the
   * restart guard and drops its fence counters (CLOCK_MARK_SLOTS, one atomic call per master). The
   * engine knows one clock per voter, read in replies that come from whichever master serves the
   * lock's slot; the masters tell which of them stepped, by their own clocks, so that the others
   * keep voting. Resolves with the longest abstention and the counters dropped in all.
   */
  markClockStep(forMs: number, steppedPastMs?: number): Promise<ClockMark> {
    const marks = [...this.slotsByShard().values()].map((slots) => {
      const markers = slots.map((slot) => slotMarkerKey(this.guardKey, slot));
      const args = clockMarkSlotsArgs(forMs, this.guardKey, steppedPastMs, markers);
      return this.runOnShard(CLOCK_MARK_SLOTS, markers[0]!, args, this.reviewTimeoutMs).then(
        decodeClockMarkReply,
      );
    });
    return Promise.all(marks).then((all) => ({
      abstainMs: Math.max(0, ...all.map((m) => m.abstainMs)),
      countersDropped: all.reduce((sum, m) => sum + m.countersDropped, 0),
    }));
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  /** An error of the cluster or one of its shards: logged once per distinct message. */
  protected recordError(message: string): void {
    if (message !== this.lastError)
      this.logger.warn(`Redis Cluster ${this.label} is unavailable: ${message}`);
    this.lastError = message;
  }

  /** The cluster is (again) ready: scripts loaded, markers seeded once, health up. */
  protected recordReady(): void {
    if (this.lastError !== undefined) this.logger.log(`Redis Cluster ${this.label} is reachable again`);
    this.lastError = undefined;
    this.loadScripts();
    this.review();
    if (!this.seeded) {
      this.seeded = true;
      this.seeding = this.seedMarkers();
    }
    if (this.up) return;
    this.up = true;
    for (const listener of this.healthListeners) listener(true);
  }

  /** Preflight of every master (on each connection of the cluster); no-op with preflight off. */
  private review(): void {
    const preflight = this.preflight;
    if (!preflight) return;
    const review: Promise<void> = Promise.resolve(this.shardServers())
      .then((shards) => reviewShards(preflight, this.voter, this.label, shards, this.reviewTimeoutMs))
      .then(
        (refusal) => {
          this.refusal = refusal?.message;
        },
        () => undefined, // the masters could not be listed: reviewed on the next connection
      )
      .finally(() => {
        if (this.reviewing === review) this.reviewing = undefined;
      });
    this.reviewing = review;
  }

  /**
   * The adapter closes: the seeding stops, and what is in flight of it ends first, at most
   * `timeoutMs` (nothing of ours may reach a client passed in after close).
   */
  protected async stopSeeding(timeoutMs: number): Promise<void> {
    this.closing = true;
    if (this.seeding) await settleWithin(this.seeding, timeoutMs);
  }

  protected recordDown(): void {
    if (!this.up) return;
    this.up = false;
    for (const listener of this.healthListeners)
      listener(false, this.lastError ?? 'cluster connection closed');
  }
}
