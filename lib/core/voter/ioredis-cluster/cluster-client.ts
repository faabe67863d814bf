import type { Cluster, Redis } from 'ioredis';
import { CLUSTER_SCRIPTS, runScript, type LuaScript } from '../../scripts/index.js';
import { settleWithin, TIMED_OUT } from '../../timeouts.js';
import type { ShardServer } from '../cluster-preflight.js';
import { ClusterScriptClient } from '../cluster-script-client.js';
import { describeError } from '../describe-error.js';
import { quitConnection } from '../ioredis/connection.js';
import type { VoterContext } from '../voter.js';
import type { Corkable, WriteWindow } from '../write-batching.js';
import type { ClusterConnection } from './connection.js';
import { ShardIdentities } from './shard-identities.js';
import { seedSlotMarkers, slotsByMaster } from './slot-markers.js';
import { keySlot } from './slots.js';
import { ClusterSubscriber } from './subscriber.js';

/**
 * A Redis Cluster reached with an ioredis Cluster client, as the {@link ScriptClient} of a
 * ClusterVoter (cluster-voter.ts says how the algorithm maps onto a cluster): calls routed by
 * their first key, writes batched on every master, the identity guard per master
 * (shard-identities.ts), and a wake subscription on every master (subscriber.ts); the slots'
 * markers, let-gos kept behind their acquire, preflight, health and the declare-every-key script
 * builds are ClusterScriptClient's (../cluster-script-client.ts).
 */
export class IoredisClusterClient extends ClusterScriptClient {
  readonly client: Cluster;
  readonly label: string;
  /** Receives wake messages (ours, also for a client passed in). */
  subscriber: ClusterSubscriber | undefined;
  private readonly connectTimeout: number;
  /** The engine's batching window, and the one in which the masters' sockets were last corked. */
  private readonly writes: WriteWindow;
  private corkedWindow = 0;
  private readonly owned: boolean;
  private readonly abstentionListeners: Array<(forMs: number, why: string) => void> = [];
  /** The identity guard, per master (ioredis only: it watches ioredis' own node connections). */
  private readonly identities: ShardIdentities;
  private readonly onNode = (node: Redis) => this.identities.watch(node);
  private readonly onError = (err: Error) => this.recordError(describeError(err));
  private readonly onNodeError = (err: Error, address: string) =>
    this.recordError(`shard ${address}: ${describeError(err)}`);
  private readonly onReady = () => this.recordReady();
  private readonly onDown = () => this.recordDown();

  constructor(connection: ClusterConnection, context: VoterContext) {
    super(context);
    this.client = connection.client;
    this.label = connection.label;
    this.owned = connection.owned;
    this.writes = context.writes;
    this.connectTimeout = Math.max(context.connectTimeout, 500);
    this.identities = new ShardIdentities(
      this.client,
      this.label,
      {
        preflight: undefined,
        guardMs: this.guardMs,
        markerKey: this.guardKey,
        timeoutMs: Math.max(context.connectTimeout, 1000),
        logger: this.logger,
      },
      (forMs, why) => {
        for (const listener of this.abstentionListeners) listener(forMs, why);
      },
    );
    this.client.on('+node', this.onNode);
    this.client.on('error', this.onError);
    this.client.on('node error', this.onNodeError);
    this.client.on('ready', this.onReady);
    this.client.on('close', this.onDown);
    this.client.on('end', this.onDown);
  }

  override attach(voter: object): void {
    super.attach(voter);
    if (this.client.status === 'ready') this.recordReady(); // a client passed in already connected
  }

  protected get transportUp(): boolean {
    return this.client.status === 'ready';
  }

  override get connectionError(): string | undefined {
    return this.transportUp ? super.connectionError : (this.lastError ?? this.client.status);
  }

  /**
   * What an acquire waits for: preflight's review in flight (ClusterScriptClient) and the identity
   * checks in flight on masters (new connections).
   */
  override get checking(): Promise<void> | undefined {
    const review = super.checking;
    const identities = this.identities.checking;
    if (!review) return identities;
    return identities ? Promise.all([review, identities]).then(() => undefined) : review;
  }

  /** The identity guard of the master that serves `lockKeys`' slot (shard-identities.ts). */
  abstainingForMs(lockKeys: readonly string[]): number {
    return this.identities.abstainingForMs(lockKeys);
  }

  onAbstention(listener: (forMs: number, why: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    // A master on a connection not checked yet (the identity guard) does not vote, as a single
    // server's does not: its answers could come from a server that changed.
    // A check in flight is waited for (bounded by the engine's rounds), as admission is elsewhere.
    const unchecked = this.identities.uncheckedFor(keys);
    if (unchecked !== undefined) {
      const checking = this.identities.checking;
      if (!checking) return Promise.reject(new Error(unchecked));
      return checking.then(() =>
        this.identities.uncheckedFor(keys) === undefined
          ? this.run(script, keys, args, decode) // preflight's refusal, too, may have come meanwhile
          : Promise.reject(new Error(this.identities.uncheckedFor(keys))),
      );
    }
    this.coalesceWrites();
    // A Cluster has the same evalsha / eval as one connection, routed by the first key.
    return runScript(this.client as unknown as Redis, script, keys, args, decode);
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

  protected waitTransport(timeoutMs: number): Promise<boolean> {
    if (this.transportUp) return Promise.resolve(true);
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    let onReady: (() => void) | undefined;
    const ready = new Promise<void>((resolve) => this.client.once('ready', (onReady = resolve)));
    return settleWithin(ready, timeoutMs).then(() => {
      this.client.off('ready', onReady!);
      return this.transportUp;
    });
  }

  protected shardServers(): ShardServer[] {
    return this.client.nodes('master').map((node) => ({
      address: `${node.options.host}:${node.options.port}`,
      server: node,
    }));
  }

  /** Closes the clusters we opened (bounded by `timeoutMs`); detaches from a client passed in. */
  async close(timeoutMs: number): Promise<void> {
    this.identities.close();
    await this.stopSeeding(timeoutMs);
    await Promise.all([this.subscriber?.close(), this.owned && quitConnection(this.client, timeoutMs)]);
    this.client.off('error', this.onError);
    this.client.off('node error', this.onNodeError);
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onDown);
    this.client.off('end', this.onDown);
    this.client.off('+node', this.onNode);
  }

  /**
   * As the single-server client does (../ioredis/ioredis-client.ts): everything sent to a shard in
   * the current tick leaves in one socket write. A command's shard is known only once ioredis
   * routes it, so the first command of a tick corks every master's socket, until the shared end of
   * the tick (write-batching.ts). Without it each command costs a write and a read on both sides;
   * ioredis' enableAutoPipelining batches too, but waits for setImmediate.
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

  /** The cluster is (again) ready: ClusterScriptClient's part, then every master's identity check. */
  protected override recordReady(): void {
    super.recordReady();
    this.identities.checkMasters();
  }

  /** Loads the scripts on every master, so that calls rarely meet NOSCRIPT (each shard has its own cache). */
  protected loadScripts(): void {
    for (const node of this.client.nodes('master')) {
      for (const script of CLUSTER_SCRIPTS.all) node.script('LOAD', script.source).catch(() => undefined);
    }
  }

  protected seedMarkers(): Promise<void> {
    return seedSlotMarkers(this.client, this.guardKey, this.guardMs, () => this.closing).catch(
      () => undefined,
    );
  }

  protected slotsByShard(): ReadonlyMap<string, readonly number[]> {
    return slotsByMaster(this.client);
  }

  /** Runs `script` on the master node that serves `routeKey`'s slot (by its slot map). */
  protected runOnShard(script: LuaScript, routeKey: string, args: readonly string[], timeoutMs: number) {
    const owner = this.client.slots[keySlot(routeKey)]?.[0];
    const node = this.client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    if (!node) return Promise.reject(new Error(`no master serves the slot of ${routeKey}`));
    return settleWithin(runScript(node, script, [], args), timeoutMs).then((reply) => {
      if (reply === TIMED_OUT) throw new Error(`master ${owner} did not answer within ${timeoutMs} ms`);
      return reply;
    });
  }
}
