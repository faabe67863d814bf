import type { EventEmitter } from 'node:events';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { settleWithin, type Runtime } from '../../runtime.js';
import { keySlot } from '../../scripts/keys.js';
import { describeError } from '../../voter/describe-error.js';
import { ShardSubscribers } from '../subscribers.js';
import type { Route, Transport, TransportEvent } from '../transport.js';
import { openSubscriber, type IoredisSpec } from './open.js';

/*
 * ioredis (and iovalkey, its fork: the same API), a single server or a Sentinel-managed primary
 * (`Redis`) or a Redis Cluster (`Cluster`, a shard per master); what the library opens: open.ts.
 * Every new connection (ioredis' 'ready', a Cluster node's too) and every loss changes the shard's
 * epoch. A client passed in needs no package loaded here: its subscriber
 * connections are duplicates of its own (an app may have iovalkey and no ioredis).
 */

/** A listener as Node's EventEmitter takes it. */
type Listener = Parameters<EventEmitter['on']>[1];

/** An ioredis `Redis` or `Cluster` as a transport (see the top of this file). */
export class IoredisTransport implements Transport {
  readonly label: string;
  readonly clustered: boolean;
  readonly seesReconnects = true;
  lastError: string | undefined;
  private readonly client: Redis | Cluster;
  private readonly epochs = new Map<string, number>();
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  /** Our listeners on the client and its nodes, taken off at close. */
  private readonly attached: Array<[EventEmitter, string, Listener]> = [];
  private readonly subscribers: ShardSubscribers;
  private wasUp = false;
  /** A client passed in unconnected that this transport connected (closed with it). */
  private connectedHere = false;
  /** Subscriber connections not yet ended (close() ends them, also one still connecting). */
  private readonly subscriberConnections = new Set<Redis>();
  /** A single server's writes, batched per tick (WriteBatcher below). */
  private readonly batcher: WriteBatcher;

  constructor(
    private readonly spec: IoredisSpec,
    private readonly runtime: Runtime,
    private readonly connectTimeout: number,
  ) {
    this.client = spec.client;
    this.label = spec.label;
    this.clustered = (spec.client as Cluster).isCluster === true;
    this.batcher = new WriteBatcher(runtime);
    this.subscribers = new ShardSubscribers(
      runtime,
      () => [...this.shards().keys()],
      async (shard, channels, deliver) =>
        openSubscriber(this.subscriberSource(shard), channels, deliver, this.subscriberConnections, runtime),
    );
    const cluster = this.clustered ? (this.client as Cluster) : undefined;
    this.listen(this.client, 'error', (err: unknown) => this.failed(err));
    this.listen(this.client, 'ready', () => this.ready(cluster ? undefined : ''));
    this.listen(this.client, 'close', () => this.lost(cluster ? undefined : ''));
    if (cluster) {
      this.listen(cluster, 'end', () => this.lost(undefined));
      this.listen(cluster, 'node error', (err: unknown, address: string) => this.failed(err, address));
      this.listen(cluster, '+node', (node: Redis) => this.watch(node));
      for (const node of cluster.nodes('all')) this.watch(node);
    }
    if (this.client.status === 'ready') this.runtime.defer(() => this.ready(cluster ? undefined : ''));
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
    if (!this.clustered) return SINGLE;
    const bySlot = new Map<string, number[]>();
    (this.client as Cluster).slots.forEach((owners, slot) => {
      const master = owners[0];
      if (master === undefined) return;
      const slots = bySlot.get(master);
      if (slots) slots.push(slot);
      else bySlot.set(master, [slot]);
    });
    return bySlot;
  }

  shardOf(key: string): string | undefined {
    return this.clustered ? (this.client as Cluster).slots[keySlot(key)]?.[0] : '';
  }

  epoch(shard: string): number {
    return this.epochs.get(shard) ?? 0;
  }

  send(route: Route, command: readonly string[]): Promise<unknown> {
    const [name, ...args] = command as [string, ...string[]];
    if (route && 'shard' in route && this.clustered) {
      const node = this.master(route.shard);
      return node
        ? node.call(name, ...args)
        : Promise.reject(new Error(`no master ${route.shard} in the cluster`));
    }
    if (!this.clustered) this.batcher.beforeWrite(corkable((this.client as Redis).stream));
    return this.client.call(name, ...args);
  }

  written(): Promise<void> | undefined {
    return this.batcher.pending();
  }

  async connect(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    if (this.client.status === 'wait') {
      // A client passed in unconnected (lazyConnect) that we connect is ours to close too.
      this.connectedHere = !this.spec.owned;
      this.client.connect().catch(() => undefined);
    }
    let onReady: (() => void) | undefined;
    const ready = new Promise<void>((resolve) => this.client.once('ready', (onReady = resolve)));
    await settleWithin(this.runtime, ready, timeoutMs);
    this.client.off('ready', onReady!);
    return this.up;
  }

  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.subscribers.subscribe(channel, onMessage);
  }

  async close(timeoutMs: number): Promise<void> {
    // Bounded: a subscriber still connecting to a node that is down has nobody to say goodbye to.
    await settleWithin(this.runtime, this.subscribers.close(), timeoutMs);
    for (const connection of this.subscriberConnections) connection.disconnect();
    for (const [emitter, event, listener] of this.attached.splice(0)) emitter.off(event, listener);
    if (!(this.spec.owned || this.connectedHere) || this.client.status === 'end') return;
    const ended = new Promise((resolve) => this.client.once('end', resolve));
    const quit = this.client.status === 'ready' ? this.client.quit().catch(() => undefined) : undefined;
    if (quit) await settleWithin(this.runtime, quit, timeoutMs);
    this.client.disconnect();
    await settleWithin(this.runtime, ended, timeoutMs); // closed by the time close() resolves
  }

  private listen(emitter: EventEmitter, event: string, listener: Listener): void {
    emitter.on(event, listener);
    this.attached.push([emitter, event, listener]);
  }

  /** A Cluster node: each new connection of a master is a new epoch of its shard. */
  private watch(node: Redis): void {
    const address = `${node.options.host}:${node.options.port}`;
    this.listen(node, 'ready', () => this.bump(address, true));
    this.listen(node, 'close', () => this.bump(address, false));
  }

  private bump(shard: string, connected: boolean): void {
    this.epochs.set(shard, this.epoch(shard) + 1);
    if (connected) this.emit({ type: 'connected', shard });
  }

  private ready(shard: string | undefined): void {
    if (shard !== undefined) this.bump(shard, true);
    this.lastError = undefined;
    if (!this.wasUp) this.emit({ type: 'up' });
    this.wasUp = true;
  }

  private lost(shard: string | undefined): void {
    if (shard !== undefined) this.bump(shard, false);
    if (this.wasUp) this.emit({ type: 'down', reason: this.lastError ?? 'connection closed' });
    this.wasUp = false;
  }

  private failed(err: unknown, shard?: string): void {
    this.lastError = shard === undefined ? describeError(err) : `shard ${shard}: ${describeError(err)}`;
    this.emit({ type: 'error', error: err });
  }

  private emit(event: TransportEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** The connection a subscriber to `shard` duplicates, with the options it is duplicated with. */
  private subscriberSource(shard: string): [Redis, RedisOptions] {
    if (!this.clustered) return [this.client as Redis, SINGLE_SUBSCRIBER];
    const master = this.master(shard);
    if (!master) throw new Error(`no master ${shard} in the cluster`);
    // The Cluster's connection to that master, with its settings (credentials, TLS, family), but
    // connected now, to the master, and never reconnected (ShardSubscribers opens another).
    return [master, { ...CLUSTER_SUBSCRIBER, connectTimeout: this.connectTimeout }];
  }

  private master(address: string): Redis | undefined {
    return (this.client as Cluster)
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === address);
  }
}

const SINGLE: ReadonlyMap<string, readonly number[]> = new Map([['', []]]);
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

  /** Called right before each command is written to `stream` (undefined: no socket to cork). */
  beforeWrite(stream: Corkable | undefined): void {
    if (!this.open) {
      this.open = true;
      this.lastCommands = this.commands;
      this.commands = 0;
      this.runtime.endOfTick(this.close);
    }
    this.commands++;
    if (this.corked !== undefined || stream === undefined) return;
    if (this.commands === 1 && this.lastCommands <= 1) return; // a lone caller's command: out at once
    stream.cork();
    this.corked = stream;
  }

  /** Resolves once the commands written so far have left for the socket; undefined: they have. */
  pending(): Promise<void> | undefined {
    if (this.corked === undefined) return undefined;
    if (!this.written) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.written = { promise, resolve };
    }
    return this.written.promise;
  }

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
