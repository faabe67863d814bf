import type { Cluster, Redis } from 'ioredis';
import type { RedlockLogger } from '../../logger.js';
import { clusterAcquireScript } from '../../scripts/cluster-scripts.js';
import { compileSettings } from '../../scripts/settings.js';
import {
  decodeAcquireReply,
  decodeExtendManyReply,
  decodeExtendReply,
  decodeInspectReply,
  decodeRaiseFenceReply,
  acquireArgs,
  extendArgs,
  extendManyCall,
  letGoArgs,
  letGoScript,
  raiseFenceArgs,
  runScript,
  type AcquireVote,
  type EngineScripts,
  type ExtendRequest,
  type KeyView,
  type LetGo,
  type LuaScript,
} from '../../scripts/index.js';
import { settleWithin } from '../../timeouts.js';
import { ClusterSubscriber } from './subscriber.js';
import { seedSlotMarkers } from './slot-markers.js';
import { clusterConnection, type ClusterConnection, type ClusterVoterNode } from './connection.js';
import { assertClusterPrefix, assertOneSlot, keySlot, slotMarkerKey } from './slots.js';
import { describeError, quitConnection } from '../ioredis/connection.js';
import type { Voter, VoterContext } from '../voter.js';
import type { Corkable, WriteWindow } from '../write-batching.js';

/**
 * A Redis Cluster as ONE voter of the quorum: the cluster holds one copy of the lock state,
 * spread over its shards by slot. Use it when one Redis process per voter is not enough
 * (throughput, memory); the quorum still needs 3 or 5 independent voters.
 *
 * How the algorithm maps onto a cluster:
 * - Every script touches the keys of one hash tag (the resource's: `<prefix>{<resource>}`, its
 *   fence counter and queue), so each call is one EVALSHA that ioredis routes by its first key.
 * - Multi-resource locks must keep their keys in one slot: a lock whose resources hash to
 *   different slots is refused before anything is sent (CrossSlotLockError, slots.ts).
 *   Taking the slots one by one and undoing the granted ones on a refusal would make the vote
 *   non-atomic: two acquirers could each win one slot and undo, over and over, on every voter
 *   (the split the requeue script exists to avoid), a turn claimed in one slot would be given
 *   away on the undo, and other clients would see half-taken locks. A common hash tag costs
 *   nothing and keeps the one-script, all-or-none vote.
 * - The restart guard: a shard that lost its data must abstain, the others must not, and a
 *   script may only touch its own slot. So the marker is per slot
 *   (`<prefix>__restart_guard__{<tag of the slot>}`, 16384 small keys, seeded when the voter
 *   first connects) and goes to the acquire script as its last key. A marker travels with its
 *   slot's keys when a slot is resharded, so it always vouches for exactly the data beside it.
 * - Wake-ups: the scripts PUBLISH on the cluster, which delivers to subscribers on any node
 *   (cluster-wide pub/sub), but counts only the shard's own subscribers in its reply, which the
 *   hand-over reads to skip waiters whose engine is gone: so the voter subscribes on every master
 *   (subscriber.ts).
 * - Health: the voter is connected while the cluster client is ready. A shard that is down makes
 *   the voter partly unavailable: operations on that shard's slots fail, which counts as a failed
 *   vote for those resources only, and the quorum decides with the other voters.
 *
 * Not done on a cluster (yet): the preflight checks and the identity guard of single servers.
 */
export class ClusterVoter implements Voter {
  readonly client: Cluster;
  readonly label: string;
  /** Receives wake messages (ours, also for a client passed in). */
  subscriber: ClusterSubscriber | undefined;
  private readonly connectTimeout: number;
  private lastError: string | undefined;
  private up = false;
  private seeded = false;
  /** The engine's batching window, and the one in which the masters' sockets were last corked. */
  private readonly writes: WriteWindow;
  private corkedWindow = 0;
  /** This voter's acquires in flight, by lock value (see letGo). */
  private readonly acquiring = new Map<string, Promise<unknown>>();
  private readonly owned: boolean;
  private readonly scripts: EngineScripts;
  /** The acquire script with the slot's marker as its last key (scripts/cluster-scripts.ts). */
  private readonly acquireScript: LuaScript;
  private readonly guardKey: string;
  private readonly guardMs: number;
  private readonly fenceIdleMs: number;
  private readonly logger: RedlockLogger;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly onError = (err: Error) => this.recordError(describeError(err));
  private readonly onNodeError = (err: Error, address: string) =>
    this.recordError(`shard ${address}: ${describeError(err)}`);
  private readonly onReady = () => this.recordReady();
  private readonly onDown = () => this.recordDown();

  constructor(connection: ClusterConnection, context: VoterContext) {
    this.client = connection.client;
    this.label = connection.label;
    this.owned = connection.owned;
    this.scripts = context.scripts;
    this.acquireScript = clusterAcquireScript(compileSettings(context.settings));
    this.guardKey = context.settings.guardKey;
    this.guardMs = context.settings.guardMs;
    this.fenceIdleMs = context.settings.fenceIdleMs;
    this.logger = context.logger;
    this.writes = context.writes;
    this.connectTimeout = Math.max(context.connectTimeout, 500);
    this.client.on('error', this.onError);
    this.client.on('node error', this.onNodeError);
    this.client.on('ready', this.onReady);
    this.client.on('close', this.onDown);
    this.client.on('end', this.onDown);
    if (this.client.status === 'ready') this.recordReady(); // a client passed in already connected
  }

  /** A voter for a Cluster client or `{ cluster: [...], options? }`. */
  static from(
    node: Cluster | ClusterVoterNode,
    context: VoterContext,
    option = 'a nodes entry',
  ): ClusterVoter {
    assertClusterPrefix(context.settings.guardKey, option);
    return new ClusterVoter(clusterConnection(node, context.connectTimeout), context);
  }

  get connected(): boolean {
    return this.client.status === 'ready';
  }

  get connectionError(): string | undefined {
    return this.connected ? undefined : (this.lastError ?? this.client.status);
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
  ): Promise<AcquireVote> {
    const slot = keys.length === 1 ? keySlot(keys[0]!) : assertOneSlot(keys, keys, this.label);
    const withMarker = [...keys, slotMarkerKey(this.guardKey, slot)];
    const args = acquireArgs(value, ttlMs, ticket, seedUs); // shared, read-only
    const sent = this.run(this.acquireScript, withMarker, args);
    this.acquiring.set(value, sent);
    try {
      return decodeAcquireReply(await sent);
    } finally {
      if (this.acquiring.get(value) === sent) this.acquiring.delete(value);
    }
  }

  async raiseFence(keys: readonly string[], value: string, tokens: readonly number[]): Promise<boolean> {
    const args = raiseFenceArgs(value, this.fenceIdleMs, tokens);
    return decodeRaiseFenceReply(await this.run(this.scripts.raiseFence, keys, args));
  }

  /** One EXTEND_MANY per slot of the batch (a script cannot reach across slots), in parallel. */
  async extend(batch: readonly ExtendRequest[]): Promise<boolean[]> {
    if (batch.length === 1) {
      const only = batch[0]!;
      return [decodeExtendReply(await this.run(this.scripts.extend, only.keys, extendArgs(only)))];
    }
    const bySlot = new Map<number, number[]>();
    batch.forEach((request, i) => {
      const slot = keySlot(request.keys[0]!);
      const group = bySlot.get(slot);
      if (group) group.push(i);
      else bySlot.set(slot, [i]);
    });
    const answers = new Array<boolean>(batch.length).fill(false);
    await Promise.all(
      [...bySlot.values()].map(async (indices) => {
        const { keys, args } = extendManyCall(indices.map((i) => batch[i]!));
        const reply = decodeExtendManyReply(
          await this.run(this.scripts.extendMany, keys, args),
          indices.length,
        );
        indices.forEach((i, j) => (answers[i] = reply[j]!));
      }),
    );
    return answers;
  }

  async letGo(keys: readonly string[], value: string, how: LetGo): Promise<void> {
    const script = letGoScript(this.scripts, how);
    // The engine frees a late grant by sending this after the acquire, trusting one connection to
    // keep the order. A cluster client does not always: a command that meets MOVED, or a slot map
    // being refreshed, is sent again later, after what followed it (seen here: the acquire of a
    // fresh client landing 80 ms after its own release, a key left held for its whole lease).
    // So a let-go waits for this voter's acquire of the same value to settle first.
    const acquiring = this.acquiring.get(value);
    if (acquiring) await acquiring.catch(() => undefined);
    await this.run(script, keys, letGoArgs(value, how));
  }

  async inspect(lockKey: string): Promise<KeyView> {
    return decodeInspectReply(await this.run(this.scripts.inspect, [lockKey], []));
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.subscriber ??= new ClusterSubscriber(this.client, this.connectTimeout);
    this.subscriber.onMessage((from, message) => {
      if (from === channel) onMessage(message);
    });
    await this.subscriber.subscribe(channel);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  failureReason(err: unknown): string {
    const message = describeError(err);
    if (!this.connected && this.lastError !== undefined && this.lastError !== message) {
      return `not connected: ${this.lastError}`;
    }
    return message;
  }

  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    let onReady: (() => void) | undefined;
    const ready = new Promise<void>((resolve) => this.client.once('ready', (onReady = resolve)));
    return settleWithin(ready, timeoutMs).then(() => {
      this.client.off('ready', onReady!);
      return this.connected;
    });
  }

  /** Closes the clusters we opened (bounded by `timeoutMs`); detaches from a client passed in. */
  async close(timeoutMs: number): Promise<void> {
    await Promise.all([this.subscriber?.close(), this.owned && quitConnection(this.client, timeoutMs)]);
    this.client.off('error', this.onError);
    this.client.off('node error', this.onNodeError);
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onDown);
    this.client.off('end', this.onDown);
  }

  private run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    this.coalesceWrites();
    // A Cluster has the same evalsha / eval as one connection, routed by the first key.
    return runScript(this.client as unknown as Redis, script, keys, args);
  }

  /**
   * As the single-server voter does (../ioredis/redis-voter.ts): everything sent to a shard in the current
   * tick leaves in one socket write. A command's shard is known only once ioredis routes it, so
   * the first command of a tick corks every master's socket, until the shared end of the tick
   * (write-batching.ts). Without it each command costs a write and a read on both sides; ioredis'
   * enableAutoPipelining batches too, but waits for setImmediate.
   */
  private coalesceWrites(): void {
    const current = this.writes.current();
    if (this.corkedWindow === current) return;
    this.corkedWindow = current;
    for (const node of this.client.nodes('master')) {
      const stream = (node as unknown as { stream?: Partial<Corkable> }).stream;
      if (node.status === 'ready' && stream?.cork && stream.uncork)
        this.writes.corkUntilClose(stream as Corkable);
    }
  }

  private recordError(message: string): void {
    if (message !== this.lastError)
      this.logger.warn(`Redis Cluster ${this.label} is unavailable: ${message}`);
    this.lastError = message;
  }

  private recordReady(): void {
    if (this.lastError !== undefined) this.logger.log(`Redis Cluster ${this.label} is reachable again`);
    this.lastError = undefined;
    this.loadScripts();
    if (!this.seeded) {
      this.seeded = true;
      void seedSlotMarkers(this.client, this.guardKey, this.guardMs);
    }
    if (this.up) return;
    this.up = true;
    for (const listener of this.healthListeners) listener(true);
  }

  private recordDown(): void {
    if (!this.up) return;
    this.up = false;
    for (const listener of this.healthListeners)
      listener(false, this.lastError ?? 'cluster connection closed');
  }

  /** Loads our scripts on every master, so that calls rarely meet NOSCRIPT (each shard has its own cache). */
  private loadScripts(): void {
    for (const node of this.client.nodes('master')) {
      for (const script of [...this.scripts.all, this.acquireScript]) {
        node.script('LOAD', script.source).catch(() => undefined);
      }
    }
  }
}

/**
 * Throws CrossSlotLockError when a multi-resource lock's keys do not share one slot and a voter
 * is a Redis Cluster: called by the engine before an attempt, so the caller learns at once.
 * (`resources` are in the order of `lockKeys`.)
 */
export function assertLockFitsVoters(
  voters: readonly Voter[],
  resources: readonly string[],
  lockKeys: readonly string[],
): void {
  const cluster = voters.find((voter) => voter instanceof ClusterVoter);
  if (cluster) assertOneSlot(resources, lockKeys, cluster.label);
}
