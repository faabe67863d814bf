import { settleWithin, TIMED_OUT } from '../../runtime.js';
import { keySlot } from '../../scripts/keys.js';
import { describeError } from '../../voter/describe-error.js';
import type { VoterContext } from '../../voter/voter-api.js';
import { ShardSubscribers, type ShardSubscription } from '../subscribers.js';
import type { Route, Transport, TransportEvent } from '../transport.js';
import {
  closeNodeRedis,
  type Emitter,
  type Listener,
  type MasterNode,
  type NodeRedisClientApi,
  type NodeRedisClusterApi,
  type NodeRedisSpec,
} from './node-redis.js';

/*
 * Epochs: node-redis reconnects by itself, and its client says 'ready' on every new connection (after
 * the handshake), 'error' when one fails: both change the shard's epoch (a Cluster's: each master's
 * client, followed as the cluster replaces it), 'ready' with a 'connected' event (the identity guard
 * checks the server before the shard votes again). A loss changes it at once: a command the client
 * queued meanwhile runs on the next connection before its 'ready', and its reply must not count.
 */

/** How soon a cluster that found none of its root nodes (or a client that gave up) connects again, ms. */
const CONNECT_RETRY_MS = 1000;

/** A node-redis client (one shard '') or cluster (a shard per master) as a transport. */
export class NodeRedisTransport implements Transport {
  readonly label: string;
  readonly clustered: boolean;
  readonly seesReconnects = true;
  lastError: string | undefined;
  private readonly epochs = new Map<string, number>();
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  /** Our listeners on the client, the cluster and its masters' clients, taken off at close. */
  private attached: Array<[Emitter, string, Listener]> = [];
  /** The client whose connections each shard's epoch follows (a single server: the client itself). */
  private readonly watched = new Map<string, NodeRedisClientApi>();
  private readonly subscribers: ShardSubscribers;
  /** Where a client queues commands while disconnected, they leave the queue after nodeTimeout. */
  private readonly commandOptions: { timeout: number } | undefined;
  private wasUp = false;
  private closed = false;
  /** A client or cluster passed in unconnected, connected here: its connections are the library's. */
  private connectedHere = false;
  private cancelRetry: (() => void) | undefined;

  constructor(
    private readonly spec: NodeRedisSpec,
    private readonly context: VoterContext,
  ) {
    this.label = spec.label;
    this.clustered = spec.clustered;
    const queues = spec.clustered || !spec.client.options?.disableOfflineQueue;
    this.commandOptions = queues ? { timeout: context.nodeTimeout } : undefined;
    this.subscribers = new ShardSubscribers(
      context.runtime,
      () => [...this.shards().keys()],
      (shard, channels, deliver) => this.openSubscriber(shard, channels, deliver),
    );
    if (spec.clustered) {
      const cluster = spec.client;
      this.listen(cluster, 'error', (err: unknown) => this.failed(err));
      this.listen(cluster, 'node-error', (err: unknown, node?: { host?: string; port?: number }) =>
        this.failed(err, `${node?.host}:${node?.port}`),
      );
      this.listen(cluster, 'node-connect', () => this.sync());
      this.listen(cluster, 'connect', () => this.ready());
      this.listen(cluster, 'disconnect', () => this.lost());
    } else {
      this.watch('', spec.client);
    }
    if (spec.owned) this.startConnecting();
    // Connected already: as on a new connection (a cluster's masters' clients are found by ready()).
    if (this.up)
      context.runtime.defer(() => this.closed || (spec.clustered ? this.ready() : this.connected('')));
  }

  get up(): boolean {
    const { client, clustered } = this.spec;
    // (A cluster of node-redis 5 has no isReady: it is up once it found its masters.)
    return clustered ? client.isOpen && client.masters.length > 0 : client.isReady;
  }

  get username(): string | undefined {
    const { spec } = this;
    return spec.clustered ? spec.client._options?.defaults?.username : spec.client.options?.username;
  }

  shards(): ReadonlyMap<string, readonly number[]> {
    if (!this.spec.clustered) return SINGLE;
    this.sync();
    const bySlot = new Map<string, number[]>();
    this.spec.client.slots.forEach((shard, slot) => {
      const master = shard?.master?.address;
      if (master === undefined) return;
      const slots = bySlot.get(master);
      if (slots) slots.push(slot);
      else bySlot.set(master, [slot]);
    });
    return bySlot;
  }

  shardOf(key: string): string | undefined {
    return this.spec.clustered ? masterOf(this.spec.client, { key })?.address : '';
  }

  epoch(shard: string): number {
    return this.epochs.get(shard) ?? 0;
  }

  /**
   * Sends on the connection of the shard, failing at once while it is down: a client that queues
   * commands meanwhile (one passed in) could run them after the lock's decision, and before its
   * server was checked. A keyless command goes to one master (node-redis 6 would send it to all).
   */
  send(route: Route, command: readonly string[]): Promise<unknown> {
    const { spec, commandOptions: options } = this;
    const master = spec.clustered ? masterOf(spec.client, route) : undefined;
    const client = spec.clustered ? master?.client : spec.client;
    if (!client?.isReady)
      return Promise.reject(new Error(`not connected to ${master?.address ?? this.label}`));
    if (!spec.clustered || !route || !('key' in route)) return client.sendCommand(command, options);
    return spec.client.sendCommand(route.key, false, command, options);
  }

  async connect(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    this.startConnecting();
    const { client } = this.spec;
    const event = this.spec.clustered ? 'connect' : 'ready';
    let onUp: (() => void) | undefined;
    const up = new Promise<void>((resolve) => client.on(event, (onUp = resolve)));
    await settleWithin(this.context.runtime, up, timeoutMs);
    client.off(event, onUp!);
    return this.up;
  }

  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.subscribers.subscribe(channel, onMessage);
  }

  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    await this.subscribers.close();
    if (this.spec.owned || this.connectedHere) {
      await closeNodeRedis(this.context.runtime, this.spec.client, timeoutMs, [...this.watched.values()]);
    }
    for (const [emitter, event, listener] of this.attached.splice(0)) emitter.off(event, listener);
    this.watched.clear();
  }

  /**
   * Connects a client or cluster not yet open: one the library opened, or one passed in unconnected
   * (then the library's to close). A cluster that reached none of its root nodes is closed again by
   * node-redis, and asked again here.
   */
  private startConnecting(): void {
    const { client, owned } = this.spec;
    if (client.isOpen || this.closed) return;
    this.connectedHere ||= !owned;
    client.connect().catch(() => {
      if (client.isOpen || this.closed) return;
      this.cancelRetry = this.context.runtime.setTimeout(() => this.startConnecting(), CONNECT_RETRY_MS);
    });
  }

  private listen(emitter: Emitter, event: string, listener: Listener): void {
    emitter.on(event, listener);
    this.attached.push([emitter, event, listener]);
  }

  /** Follows the connections of `client` as `shard`'s epochs (see the top of this file). */
  private watch(shard: string, client: NodeRedisClientApi): void {
    this.watched.set(shard, client);
    this.listen(client, 'ready', () => this.connected(shard));
    this.listen(client, 'error', (err: unknown) => {
      if (!this.clustered) this.failed(err); // a cluster reports its nodes' errors itself
      if (!client.isReady) this.dropped(shard);
    });
    this.listen(client, 'end', () => this.dropped(shard));
  }

  /** A cluster: follows the client of every master, as the cluster discovers and replaces them. */
  private sync(): void {
    if (!this.spec.clustered || this.closed) return;
    const clients = new Map(this.spec.client.masters.map((m) => [m.address, m.client]));
    for (const [shard, client] of this.watched) {
      if (clients.get(shard) === client) continue;
      this.watched.delete(shard);
      for (const [emitter, event, listener] of this.attached)
        if (emitter === client) emitter.off(event, listener);
      this.attached = this.attached.filter(([emitter]) => emitter !== client);
      this.bump(shard, false);
    }
    for (const [shard, client] of clients) {
      if (!client || this.watched.has(shard)) continue;
      this.watch(shard, client);
      this.bump(shard, client.isReady);
    }
  }

  private bump(shard: string, connected: boolean): void {
    this.epochs.set(shard, this.epoch(shard) + 1);
    if (connected) this.emit({ type: 'connected', shard });
  }

  private connected(shard: string): void {
    this.bump(shard, true);
    if (!this.clustered) this.ready();
  }

  private dropped(shard: string): void {
    this.bump(shard, false);
    if (!this.clustered) this.lost();
  }

  private ready(): void {
    this.sync();
    this.lastError = undefined;
    if (!this.wasUp) this.emit({ type: 'up' });
    this.wasUp = true;
  }

  private lost(): void {
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

  /**
   * A subscriber connection of `shard` (a subscribed connection can run nothing else): a duplicate
   * of its client, with an offline queue so that SUBSCRIBE waits for the connection it opens, and
   * re-subscribed by node-redis after a reconnection.
   */
  private async openSubscriber(
    shard: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const { runtime, nodeTimeout } = this.context;
    const { spec } = this;
    const base = spec.clustered ? masterOf(spec.client, { shard })?.client : spec.client;
    if (!base) throw new Error(`no client of master ${shard}`);
    const connection = base.duplicate({ disableOfflineQueue: false });
    connection.on('error', () => undefined); // the transport's own connections report health
    const bound = 2 * Math.max(nodeTimeout, 1000);
    const listener = (message: string, channel: string) => deliver(channel, message);
    const subscribe = async (more: readonly string[]) =>
      void (await Promise.all(more.map((channel) => connection.subscribe(channel, listener))));
    const subscribing = connection.connect().then(() => subscribe(channels));
    try {
      if ((await settleWithin(runtime, subscribing, bound)) === TIMED_OUT)
        throw new Error(`no subscription to ${shard || this.label} within ${bound} ms`);
    } catch (err) {
      await closeNodeRedis(runtime, connection, 1000);
      throw err;
    }
    let answers = true;
    // A paused master keeps its connections open: it is asked through the cluster's own client.
    const ping = () => this.send({ shard }, ['PING']).catch(() => TIMED_OUT);
    const probe = async () => void (answers = (await settleWithin(runtime, ping(), bound / 2)) !== TIMED_OUT);
    return {
      get healthy() {
        return connection.isReady && answers;
      },
      get ended() {
        return !connection.isOpen;
      },
      ...(spec.clustered ? { probe } : {}),
      subscribe,
      close: () => closeNodeRedis(runtime, connection, 1000),
    };
  }
}

/** The master of a key's slot, of a shard by its address, or any (a connected one first). */
function masterOf({ masters, slots }: NodeRedisClusterApi, route: Route): MasterNode | undefined {
  if (!route) return masters.find((m) => m.client?.isReady) ?? masters[0];
  return 'key' in route ? slots[keySlot(route.key)]?.master : masters.find((m) => m.address === route.shard);
}

const SINGLE: ReadonlyMap<string, readonly number[]> = new Map([['', []]]);
