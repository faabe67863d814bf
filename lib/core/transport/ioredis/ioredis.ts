import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { settleWithin, type Runtime } from '../../runtime.js';
import { keySlot } from '../../scripts/keys.js';
import { SINGLE, slotsByMaster, TransportBase } from '../base.js';
import type { ShardSubscription } from '../subscribers.js';
import type { Route, Transport } from '../transport.js';
import { openSubscriber, type IoredisSpec } from './open.js';

/*
 * ioredis (and iovalkey, its fork: the same API), a single server or a Sentinel-managed primary
 * (`Redis`) or a Redis Cluster (`Cluster`, a shard per master); what the library opens: open.ts.
 * Every new connection (ioredis' 'ready', a Cluster node's too) and every loss changes the shard's
 * epoch. A client passed in needs no package loaded here: its subscriber
 * connections are duplicates of its own (an app may have iovalkey and no ioredis).
 */

/** An ioredis `Redis` or `Cluster` as a transport (see the top of this file). */
export class IoredisTransport extends TransportBase implements Transport {
  readonly seesReconnects = true;
  private readonly client: Redis | Cluster;
  /** A client passed in unconnected that this transport connected (closed with it). */
  private connectedHere = false;
  /** Subscriber connections not yet ended (close() ends them, also one still connecting). */
  private readonly subscriberConnections = new Set<Redis>();
  /** A single server's writes, batched per tick (WriteBatcher below). */
  private readonly batcher: WriteBatcher;
  /** Transport.written: the batcher's (a Cluster's writes are not batched: it has none pending). */
  readonly written: () => Promise<void> | undefined;

  constructor(
    private readonly spec: IoredisSpec,
    runtime: Runtime,
    private readonly connectTimeout: number,
  ) {
    super(spec.label, (spec.client as Cluster).isCluster === true, runtime);
    this.client = spec.client;
    this.batcher = new WriteBatcher(runtime);
    this.written = this.batcher.pending;
    const cluster = this.clustered ? (this.client as Cluster) : undefined;
    this.listen(this.client, 'error', (err: unknown) => this.failed(err));
    this.listen(this.client, 'ready', () => this.markUp(cluster ? undefined : ''));
    this.listen(this.client, 'close', () => this.markDown(cluster ? undefined : ''));
    if (cluster) {
      this.listen(cluster, 'end', () => this.markDown());
      this.listen(cluster, 'node error', (err: unknown, address: string) => this.failed(err, address));
      this.listen(cluster, '+node', (node: Redis) => this.watch(node));
      for (const node of cluster.nodes('all')) this.watch(node);
    }
    if (this.client.status === 'ready') this.runtime.defer(() => this.markUp(cluster ? undefined : ''));
  }

  get up(): boolean {
    return this.client.status === 'ready';
  }

  get username(): string | undefined {
    return this.clustered
      ? (this.client as Cluster).options.redisOptions?.username
      : (this.client as Redis).options.username;
  }

  shards(): ReadonlyMap<string, readonly number[]> {
    return this.clustered ? slotsByMaster((this.client as Cluster).slots, (owners) => owners[0]) : SINGLE;
  }

  shardOf(key: string): string | undefined {
    return this.clustered ? (this.client as Cluster).slots[keySlot(key)]?.[0] : '';
  }

  send(route: Route, command: readonly string[]): Promise<unknown> {
    const [name, ...args] = command as [string, ...string[]];
    if (route && 'shard' in route && this.clustered) {
      const node = this.master(route.shard);
      return node
        ? node.call(name, ...args)
        : Promise.reject(new Error(`no master ${route.shard} in the cluster`));
    }
    if (!this.clustered) this.batcher.beforeWrite((this.client as Redis).stream);
    return this.client.call(name, ...args);
  }

  async connect(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    if (this.client.status === 'wait') {
      // A client passed in unconnected (lazyConnect) that we connect is ours to close too.
      this.connectedHere = !this.spec.owned;
      this.client.connect().catch(() => undefined);
    }
    return this.upAfter(this.client, 'ready', timeoutMs);
  }

  async close(timeoutMs: number): Promise<void> {
    await Promise.all([this.subscribers.close(timeoutMs), this.endClient(timeoutMs)]);
    for (const connection of this.subscriberConnections) connection.disconnect();
    this.detach();
  }

  /** Quits the client the library opened or connected (at most `timeoutMs`), then drops what is left. */
  private async endClient(timeoutMs: number): Promise<void> {
    if (!(this.spec.owned || this.connectedHere) || this.client.status === 'end') return;
    const ended = new Promise((resolve) => this.client.once('end', resolve));
    const quit = this.client.status === 'ready' ? this.client.quit().catch(() => undefined) : undefined;
    if (quit) await settleWithin(this.runtime, quit, timeoutMs);
    this.client.disconnect();
    await settleWithin(this.runtime, ended, timeoutMs); // closed by the time close() resolves
  }

  /** A Cluster node: each new connection of a master is a new epoch of its shard. */
  private watch(node: Redis): void {
    const address = `${node.options.host}:${node.options.port}`;
    this.listen(node, 'ready', () => this.bump(address, true));
    this.listen(node, 'close', () => this.bump(address, false));
  }

  /** A subscriber to `shard`: a duplicate of our connection to it (open.ts). */
  protected async openSubscriber(
    shard: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const source = this.clustered ? this.master(shard) : (this.client as Redis);
    if (!source) throw new Error(`no master ${shard} in the cluster`);
    // A Cluster's: with the settings of its connection to that master (credentials, TLS, family),
    // but connected now, to the master, and never reconnected (ShardSubscribers opens another).
    const options = this.clustered
      ? { ...CLUSTER_SUBSCRIBER, connectTimeout: this.connectTimeout }
      : SINGLE_SUBSCRIBER;
    return openSubscriber([source, options], channels, deliver, this.subscriberConnections, this.runtime);
  }

  private master(address: string): Redis | undefined {
    return (this.client as Cluster)
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === address);
  }
}

const SINGLE_SUBSCRIBER: RedisOptions = {
  enableOfflineQueue: true,
  maxRetriesPerRequest: null,
  lazyConnect: false,
};
const CLUSTER_SUBSCRIBER: RedisOptions = { ...SINGLE_SUBSCRIBER, readOnly: false, retryStrategy: () => null };

/** ioredis' socket (undefined before its first connection), when it can be corked. */
function corkable(stream: unknown): Corkable | undefined {
  const socket = stream as Partial<Corkable> | undefined;
  return typeof socket?.cork === 'function' && typeof socket.uncork === 'function'
    ? (socket as Corkable)
    : undefined;
}

/** A socket that can hold its writes back and send them in one syscall (a net.Socket). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Batching one connection's writes per tick. ioredis writes each command to its socket at once:
 * with many locks taken at once, a syscall per command on both sides, each waking the other process.
 * Commands sent in one tick should leave in one write; but a lone command, a sequential caller's
 * usual case, gains nothing from waiting for the end of the tick, and a corked write costs Node's
 * stream more. So the socket is corked only when commands come in batches: from a tick's second
 * command, or from its first when the last tick this connection was used in had more than one
 * (steady load). It is uncorked at the end of the tick (the runtime's `endOfTick`: after the promise
 * continuations, before the event loop reads replies or fires timers).
 */
export class WriteBatcher {
  /** A tick is open: its end is scheduled. */
  private open = false;
  private commands = 0;
  private lastCommands = 0;
  private corked: Corkable | undefined;
  private written: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(private readonly runtime: Runtime) {}

  /**
   * Called right before each command is written to `stream`, ioredis' socket (looked at only when
   * it is to be corked: undefined before the first connection).
   */
  beforeWrite(stream: unknown): void {
    if (!this.open) {
      this.open = true;
      this.lastCommands = this.commands;
      this.commands = 0;
      this.runtime.endOfTick(this.close);
    }
    this.commands++;
    if (this.corked !== undefined) return;
    if (this.commands === 1 && this.lastCommands <= 1) return; // a lone caller's command: out at once
    const socket = corkable(stream);
    if (socket === undefined) return;
    socket.cork();
    this.corked = socket;
  }

  /**
   * Resolves once the commands written so far have left for the socket; undefined: they have.
   * Bound: the transport passes it on as its own `written`.
   */
  readonly pending = (): Promise<void> | undefined => {
    if (this.corked === undefined) return undefined;
    if (!this.written) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.written = { promise, resolve };
    }
    return this.written.promise;
  };

  private readonly close = (): void => {
    this.open = false;
    const stream = this.corked;
    this.corked = undefined;
    stream?.uncork();
    const written = this.written;
    this.written = undefined;
    written?.resolve();
  };
}
