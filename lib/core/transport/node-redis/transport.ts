import { setMaxListeners } from 'node:events';
import { settleWithin, TIMED_OUT } from '../../runtime.js';
import { keySlot } from '../../scripts/keys.js';
import type { VoterContext } from '../../voter/voter-api.js';
import { SINGLE, slotsByMaster, TransportBase } from '../base.js';
import type { ShardSubscription } from '../subscribers.js';
import type { Route, Transport } from '../transport.js';
import {
  closeNodeRedis,
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
export class NodeRedisTransport extends TransportBase implements Transport {
  readonly seesReconnects = true;
  /** The client whose connections each shard's epoch follows (a single server: the client itself). */
  private readonly watched = new Map<string, NodeRedisClientApi>();
  /** Where a client queues commands while disconnected, they leave the queue after nodeTimeout. */
  private readonly queues: boolean;
  /** The signal of this tick's commands while its bound is not yet set (see `queueBound`). */
  private tickSignal: { abortSignal: AbortSignal } | undefined;
  private closed = false;
  /** A client or cluster passed in unconnected, connected here: its connections are the library's. */
  private connectedHere = false;
  private cancelRetry: (() => void) | undefined;

  constructor(
    private readonly spec: NodeRedisSpec,
    private readonly context: VoterContext,
  ) {
    super(spec.label, spec.clustered, context.runtime);
    this.queues = spec.clustered || !spec.client.options?.disableOfflineQueue;
    if (spec.clustered) {
      const cluster = spec.client;
      this.listen(cluster, 'error', (err: unknown) => this.failed(err));
      this.listen(cluster, 'node-error', (err: unknown, node?: { host?: string; port?: number }) =>
        this.failed(err, `${node?.host}:${node?.port}`),
      );
      this.listen(cluster, 'node-connect', () => this.sync());
      this.listen(cluster, 'connect', () => this.ready());
      this.listen(cluster, 'disconnect', () => this.markDown());
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
    return slotsByMaster(this.spec.client.slots, (shard) => shard?.master?.address);
  }

  shardOf(key: string): string | undefined {
    return this.spec.clustered ? masterOf(this.spec.client, { key })?.address : '';
  }

  /**
   * Sends on the connection of the shard, failing at once while it is down: a client that queues
   * commands meanwhile (one passed in) could run them after the lock's decision, and before its
   * server was checked. A keyless command goes to one master (node-redis 6 would send it to all).
   */
  send(route: Route, command: readonly string[]): Promise<unknown> {
    const { spec } = this;
    const master = spec.clustered ? masterOf(spec.client, route) : undefined;
    const client = spec.clustered ? master?.client : spec.client;
    if (!client?.isReady)
      return Promise.reject(new Error(`not connected to ${master?.address ?? this.label}`));
    const options = this.queues ? this.queueBound() : undefined;
    if (!spec.clustered || !route || !('key' in route)) return client.sendCommand(command, options);
    return spec.client.sendCommand(route.key, false, command, options);
  }

  /**
   * The bound on the time a command may wait in the client's queue: nodeTimeout from the turn that
   * writes it, one signal for a tick's commands. node-redis' own `timeout` starts at the call: a stall
   * of this process before the client's write (an immediate) would drop commands on a healthy
   * connection, and a vote so dropped never reaches its server.
   */
  private queueBound(): { abortSignal: AbortSignal } {
    if (this.tickSignal) return this.tickSignal;
    const controller = new AbortController();
    setMaxListeners(Infinity, controller.signal); // a listener per command of the tick, until written
    const { runtime, nodeTimeout } = this.context;
    runtime.defer(() => {
      this.tickSignal = undefined;
      runtime.setTimeout(() => controller.abort(), nodeTimeout);
    });
    return (this.tickSignal = { abortSignal: controller.signal });
  }

  async connect(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    this.startConnecting();
    return this.upAfter(this.spec.client, this.spec.clustered ? 'connect' : 'ready', timeoutMs);
  }

  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    const { runtime } = this.context;
    await Promise.all([
      this.subscribers.close(timeoutMs),
      (this.spec.owned || this.connectedHere) &&
        closeNodeRedis(runtime, this.spec.client, timeoutMs, [...this.watched.values()]),
    ]);
    this.detach();
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
      this.detach(client);
      this.bump(shard, false);
    }
    for (const [shard, client] of clients) {
      if (!client || this.watched.has(shard)) continue;
      this.watch(shard, client);
      this.bump(shard, client.isReady);
    }
  }

  /** A new connection of `shard`: on a single server, the transport is up. */
  private connected(shard: string): void {
    if (this.clustered) this.bump(shard, true);
    else this.markUp(shard);
  }

  private dropped(shard: string): void {
    if (this.clustered) this.bump(shard, false);
    else this.markDown(shard);
  }

  /** A cluster is up: its masters' clients are followed first. */
  private ready(): void {
    this.sync();
    this.markUp();
  }

  /**
   * A subscriber connection of `shard` (a subscribed connection can run nothing else): a duplicate
   * of its client, with an offline queue so that SUBSCRIBE waits for the connection it opens, and
   * re-subscribed by node-redis after a reconnection.
   */
  protected async openSubscriber(
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
