import { realRuntime, settleWithin, type Runtime } from '../../core/runtime.js';
import { keySlot, SLOT_COUNT } from '../../core/scripts/keys.js';
import { ShardSubscribers, type ShardSubscription } from '../../core/transport/subscribers.js';
import type { Route, Transport, TransportEvent } from '../../core/transport/transport.js';
import { TransportVoter } from '../../core/voter/voter.js';
import type { VoterFactory } from '../../core/voter/voter-api.js';
import type { MemoryServer } from './server.js';

/**
 * The network between one client connection and a {@link MemoryServer}: the simulator's hook. It
 * is handed each command (and each message published to a subscriber, as `['message', channel,
 * message]`) and `arrive`, which applies it on the server and returns the reply (or throws the
 * error reply). It may call `arrive` late (a delay), never (lost on the way), or call it and never
 * settle (the reply lost: the effect stays); it keeps each connection's order. The default
 * delivers both at once, on the next microtask.
 */
export type MemoryNetwork = (
  server: MemoryServer,
  command: readonly string[],
  arrive: () => unknown,
) => Promise<unknown>;

const direct: MemoryNetwork = (_server, _command, arrive) => Promise.resolve().then(arrive);

/** Options of a {@link MemoryTransport} (and of {@link memoryNode}). */
export interface MemoryTransportOptions {
  /** Log-safe name (default `memory://<server names>`). */
  label?: string;
  /** The network its commands and messages cross (default: direct). */
  network?: MemoryNetwork;
}

/**
 * One client's connection to in-memory servers, as a {@link Transport}: one server is a standalone
 * voter (shard ''); several are a Cluster whose slots are split among them in equal ranges (a shard
 * per server, named after it). Connects on creation; a server that stops drops the connection, and
 * its start is a reconnection (a new epoch, 'connected'): the identity guard then checks it.
 */
export class MemoryTransport implements Transport {
  readonly label: string;
  readonly clustered: boolean;
  readonly seesReconnects = true;
  readonly username = undefined;
  lastError: string | undefined;
  private readonly epochs = new Map<string, number>();
  private readonly open = new Set<string>();
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  private readonly hangUps: Array<() => void>;
  private readonly subscribers: ShardSubscribers;
  private readonly network: MemoryNetwork;
  private closed = false;

  constructor(
    private readonly servers: readonly MemoryServer[],
    private readonly runtime: Runtime = realRuntime,
    options: MemoryTransportOptions = {},
  ) {
    this.clustered = servers.length > 1;
    this.label = options.label ?? `memory://${servers.map((s) => s.name).join(',')}`;
    this.network = options.network ?? direct;
    const ids = servers.map((_, i) => this.shardId(i));
    this.subscribers = new ShardSubscribers(
      runtime,
      () => ids,
      (shard, channels, deliver) => this.subscription(shard, channels, deliver),
    );
    this.hangUps = servers.map((server, i) => server.attach((up) => this.changed(ids[i]!, up)));
    runtime.defer(() => servers.forEach((server, i) => server.up && this.changed(ids[i]!, true)));
  }

  get up(): boolean {
    return this.open.size > 0;
  }

  shards(): ReadonlyMap<string, readonly number[]> {
    const first = (i: number) => Math.ceil((i * SLOT_COUNT) / this.servers.length);
    const slots = (i: number) =>
      this.clustered ? Array.from({ length: first(i + 1) - first(i) }, (_, s) => first(i) + s) : [];
    return new Map(this.servers.map((_, i) => [this.shardId(i), slots(i)]));
  }

  shardOf(key: string): string | undefined {
    return this.clustered ? this.shardId(Math.floor((keySlot(key) * this.servers.length) / SLOT_COUNT)) : '';
  }

  epoch(shard: string): number {
    return this.epochs.get(shard) ?? 0;
  }

  send(route: Route, command: readonly string[]): Promise<unknown> {
    const shard =
      route && 'shard' in route ? route.shard : route ? this.shardOf(route.key)! : this.shardId(0);
    const server = this.server(shard);
    if (!server || !this.open.has(shard))
      return Promise.reject(new Error(`Connection is closed (${this.label}, shard '${shard}')`));
    const epoch = this.epoch(shard);
    return this.network(server, command, () => {
      if (this.epoch(shard) !== epoch) throw new Error('Connection is closed.'); // it dropped on the way
      return server.call(command);
    });
  }

  async connect(timeoutMs: number): Promise<boolean> {
    if (!this.up && !this.closed) {
      await settleWithin(
        this.runtime,
        new Promise<void>((resolve) => this.on((e) => e.type === 'up' && resolve())),
        timeoutMs,
      );
    }
    return this.up;
  }

  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.subscribers.subscribe(channel, onMessage);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.open.clear();
    for (const hangUp of this.hangUps) hangUp();
    await this.subscribers.close();
  }

  /** A server stopped (the connection dropped) or started (a reconnection): a new epoch either way. */
  private changed(shard: string, up: boolean): void {
    if (this.closed) return;
    const wasUp = this.up;
    this.epochs.set(shard, this.epoch(shard) + 1);
    if (up) this.open.add(shard);
    else this.open.delete(shard);
    this.lastError = up ? undefined : `${this.server(shard)!.name} stopped`;
    if (up) this.emit({ type: 'connected', shard });
    if (this.up !== wasUp) this.emit(up ? { type: 'up' } : { type: 'down', reason: this.lastError! });
  }

  private emit(event: TransportEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  private shardId(index: number): string {
    return this.clustered ? this.servers[index]!.name : '';
  }

  private server(shard: string): MemoryServer | undefined {
    return this.clustered ? this.servers.find((s) => s.name === shard) : this.servers[0];
  }

  /** A subscriber connection to `shard`'s server: it ends when the server stops (ShardSubscribers opens another). */
  private async subscription(
    shard: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const server = this.server(shard)!;
    if (!server.up) throw new Error(`${server.name} is stopped`);
    const runId = server.runId;
    // A Cluster's PUBLISH reaches every node's subscribers (over its bus), so each subscription
    // listens on every server: ShardSubscribers passes on one shard's copy.
    const listen = (channel: string) => {
      const hear = (message: string) => {
        if (!healthy()) return false;
        const arrive = () => void (healthy() && deliver(channel, message));
        this.network(server, ['message', channel, message], arrive).catch(() => undefined);
        return true;
      };
      const unsubscribes = this.servers.map((each) => each.subscribe(channel, hear));
      return () => unsubscribes.forEach((unsubscribe) => unsubscribe());
    };
    const healthy = () => server.up && server.runId === runId && !this.closed;
    const unsubscribes = channels.map(listen);
    return {
      get healthy() {
        return healthy();
      },
      get ended() {
        return !healthy();
      },
      subscribe: async (more) => void unsubscribes.push(...more.map(listen)),
      close: async () => unsubscribes.forEach((unsubscribe) => unsubscribe()),
    };
  }
}

/**
 * A `nodes` entry (a {@link VoterFactory}): each engine gets the library's own voter over a
 * {@link MemoryTransport} of its own to `servers` (one: a standalone voter; several: a Cluster
 * voter). The same voter, guards, decoding and routing as on Redis; only the scripts are emulated.
 */
export function memoryNode(
  servers: MemoryServer | readonly MemoryServer[],
  options: MemoryTransportOptions = {},
): VoterFactory {
  const list = Array.isArray(servers) ? servers : [servers as MemoryServer];
  return {
    createVoter: (context) =>
      new TransportVoter(new MemoryTransport(list, context.runtime, options), context),
  };
}
