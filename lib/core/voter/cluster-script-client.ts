import type { RedlockLogger } from '../logger.js';
import type { LuaScript } from '../scripts/index.js';
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
 * - health: up, down and errors, logged once per distinct message.
 * A client adapter supplies the transport: running a script routed by its first key, whether it is
 * connected, loading the scripts on every master, its slots by shard, and its subscriptions.
 */
export abstract class ClusterScriptClient implements ScriptClient {
  abstract readonly label: string;
  abstract readonly connected: boolean;
  lastError: string | undefined;
  /** A command that meets MOVED or a slot refresh is sent again, after later ones. */
  readonly reorders = true;
  protected readonly guardKey: string;
  protected readonly guardMs: number;
  protected readonly logger: RedlockLogger;
  private up = false;
  private seeded = false;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];

  constructor(context: VoterContext) {
    this.guardKey = context.settings.guardKey;
    this.guardMs = context.settings.guardMs;
    this.logger = context.logger;
  }

  abstract run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T>;
  abstract waitReady(timeoutMs: number): Promise<boolean>;
  abstract ping(): Promise<void>;
  abstract subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  abstract close(timeoutMs: number): Promise<void>;
  /** Loads the scripts on every master, so that calls rarely meet NOSCRIPT (each shard has its own cache). */
  protected abstract loadScripts(): void;
  /** Seeds the slots' restart-guard markers (ioredis-cluster/slot-markers.ts); never rejects. */
  protected abstract seedMarkers(): Promise<void>;

  get connectionError(): string | undefined {
    return this.connected ? undefined : (this.lastError ?? 'not connected');
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
    if (!this.seeded) {
      this.seeded = true;
      void this.seedMarkers();
    }
    if (this.up) return;
    this.up = true;
    for (const listener of this.healthListeners) listener(true);
  }

  protected recordDown(): void {
    if (!this.up) return;
    this.up = false;
    for (const listener of this.healthListeners)
      listener(false, this.lastError ?? 'cluster connection closed');
  }
}
