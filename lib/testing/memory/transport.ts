import { realRuntime, settleWithin, type Runtime } from '../../core/runtime.js';
import { keySlot, SLOT_COUNT } from '../../core/scripts/keys.js';
import type { Route, Transport, TransportEvent } from '../../core/transport/transport.js';
import { TransportVoter } from '../../core/voter/voter.js';
import type { VoterFactory } from '../../core/voter/voter-api.js';
import type { MemoryServer } from './server.js';

/**
 * The network between one client connection and a {@link MemoryServer}: the simulator's hook. It
 * is handed each command (and each message published to a subscriber, as `['message', channel,
 * message]`) and `arrive`, which applies it on the server and returns the reply (or throws the
 * error reply). It may call `arrive` late (a delay), never (lost on the way), or call it and never
 * settle (the reply lost: the effect stays); it keeps each connection's order. Rejecting with a
 * {@link ConnectionDropped} drops the connection (after the effect or not): the client reconnects at
 * once, on a new epoch. The default delivers both at once, on the next microtask. A simulator gives
 * each engine's `memoryNode` entries networks of their own, which know the client (partitions).
 */
export type MemoryNetwork = (
  server: MemoryServer,
  command: readonly string[],
  arrive: () => unknown,
) => Promise<unknown>;

/** What a {@link MemoryNetwork} rejects with to drop the connection a command was sent on. */
export class ConnectionDropped extends Error {
  constructor() {
    super('Connection is closed (dropped by the network).');
    this.name = 'ConnectionDropped';
  }
}

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
 * per server, named after it). Connected on creation; a server that stops drops the connection, and
 * its start is a reconnection (a new epoch, 'connected'): the identity guard then checks it. Its
 * subscriptions listen on every server (a Cluster's PUBLISH reaches every node's subscribers) and
 * hear nothing while their server's connection is down.
 */
export class MemoryTransport implements Transport {
  readonly label: string;
  readonly clustered: boolean;
  readonly seesReconnects = true;
  readonly username = undefined;
  lastError: string | undefined;
  private readonly ids: string[];
  private readonly epochs = new Map<string, number>();
  private readonly open = new Set<string>();
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  private readonly hangUps: Array<() => void>;
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
    this.ids = servers.map((server) => (this.clustered ? server.name : ''));
    this.hangUps = servers.map((server, i) => server.attach((up) => this.changed(this.ids[i], up)));
    // Connected from the start (an engine may send before it listens), and says so once it listens.
    servers.forEach((server, i) => {
      if (!server.up) return;
      this.open.add(this.ids[i]!);
      this.epochs.set(this.ids[i]!, 1);
    });
    runtime.defer(() => {
      for (const shard of this.closed ? [] : this.open) this.emit({ type: 'connected', shard });
      if (this.up) this.emit({ type: 'up' });
    });
  }

  get up(): boolean {
    return this.open.size > 0;
  }

  shards(): ReadonlyMap<string, readonly number[]> {
    const first = (i: number) => Math.ceil((i * SLOT_COUNT) / this.servers.length);
    const slots = (i: number) => Array.from({ length: first(i + 1) - first(i) }, (_, s) => first(i) + s);
    return new Map(this.ids.map((id, i) => [id, this.clustered ? slots(i) : []]));
  }

  shardOf(key: string): string {
    if (!this.clustered) return '';
    return this.ids[Math.floor((keySlot(key) * this.servers.length) / SLOT_COUNT)];
  }

  epoch(shard: string): number {
    return this.epochs.get(shard) ?? 0;
  }

  send(route: Route, command: readonly string[]): Promise<unknown> {
    const shard = !route ? this.ids[0] : 'shard' in route ? route.shard : this.shardOf(route.key);
    const server = this.servers[this.ids.indexOf(shard)];
    if (!server || !this.open.has(shard))
      return Promise.reject(new Error(`Connection is closed (${this.label} ${shard})`));
    const epoch = this.epoch(shard);
    const arrive = () => {
      if (this.epoch(shard) !== epoch) throw new Error('Connection is closed.'); // it dropped on the way
      return server.call(command);
    };
    return this.network(server, command, arrive).catch((err: unknown) => {
      if (err instanceof ConnectionDropped && this.epoch(shard) === epoch) {
        this.changed(shard, false);
        if (server.up) this.changed(shard, true);
      }
      throw err;
    });
  }

  async connect(timeoutMs: number): Promise<boolean> {
    const up = new Promise<void>((resolve) => this.on((event) => event.type === 'up' && resolve()));
    if (!this.up && !this.closed) await settleWithin(this.runtime, up, timeoutMs);
    return this.up;
  }

  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.servers.forEach((server, i) => {
      const shard = this.ids[i];
      const hear = (message: string) => {
        const epoch = this.epoch(shard);
        if (!this.open.has(shard)) return false;
        const arrive = () => void (this.epoch(shard) === epoch && onMessage(message));
        this.network(server, ['message', channel, message], arrive).catch(() => undefined);
        return true;
      };
      this.hangUps.push(server.subscribe(channel, hear));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.open.clear();
    for (const hangUp of this.hangUps) hangUp();
  }

  /** A server stopped (the connection dropped) or started (a reconnection): a new epoch either way. */
  private changed(shard: string, up: boolean): void {
    if (this.closed) return;
    const wasUp = this.up;
    this.epochs.set(shard, this.epoch(shard) + 1);
    if (up) this.open.add(shard);
    else this.open.delete(shard);
    this.lastError = up ? undefined : `${shard || this.label} stopped`;
    if (up) this.emit({ type: 'connected', shard });
    if (this.up !== wasUp) this.emit(up ? { type: 'up' } : { type: 'down', reason: this.lastError! });
  }

  private emit(event: TransportEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

/**
 * A `nodes` entry (a {@link VoterFactory}): each engine gets the library's own voter over a
 * {@link MemoryTransport} of its own to `servers` (one: a standalone voter; several: a Cluster
 * voter). The same voter, guards, decoding and routing as on Redis; only the scripts are emulated.
 */
export function memoryNode(
  servers: MemoryServer | MemoryServer[],
  options: MemoryTransportOptions = {},
): VoterFactory {
  const list = Array.isArray(servers) ? servers : [servers];
  return {
    createVoter: (context) =>
      new TransportVoter(new MemoryTransport(list, context.runtime, options), context),
  };
}
