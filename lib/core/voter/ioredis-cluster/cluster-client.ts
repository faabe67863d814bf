import type { Cluster, Redis } from 'ioredis';
import { runScript, SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { settleWithin } from '../../timeouts.js';
import type { ShardServer } from '../cluster-preflight.js';
import { ClusterScriptClient } from '../cluster-script-client.js';
import { describeError } from '../describe-error.js';
import { quitConnection } from '../ioredis/connection.js';
import type { VoterContext } from '../voter.js';
import type { Corkable, WriteWindow } from '../write-batching.js';
import type { ClusterConnection } from './connection.js';
import { seedSlotMarkers } from './slot-markers.js';
import { ClusterSubscriber } from './subscriber.js';

/**
 * A Redis Cluster reached with an ioredis Cluster client, as the {@link ScriptClient} of a
 * ClusterVoter (cluster-voter.ts says how the algorithm maps onto a cluster): calls routed by
 * their first key, writes batched on every master, and a wake subscription on every master
 * (subscriber.ts); the slots' markers, let-gos kept behind their acquire and health are
 * ClusterScriptClient's (../cluster-script-client.ts).
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

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
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
    await Promise.all([this.subscriber?.close(), this.owned && quitConnection(this.client, timeoutMs)]);
    this.client.off('error', this.onError);
    this.client.off('node error', this.onNodeError);
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onDown);
    this.client.off('end', this.onDown);
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

  /** Loads the scripts on every master, so that calls rarely meet NOSCRIPT (each shard has its own cache). */
  protected loadScripts(): void {
    for (const node of this.client.nodes('master')) {
      for (const script of SCRIPTS.all) node.script('LOAD', script.source).catch(() => undefined);
    }
  }

  protected seedMarkers(): Promise<void> {
    return seedSlotMarkers(this.client, this.guardKey, this.guardMs).catch(() => undefined);
  }
}
