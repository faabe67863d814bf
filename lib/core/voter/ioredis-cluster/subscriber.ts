import type { Cluster, Redis } from 'ioredis';
import { ioredisModule } from '../../clients/load.js';
import { startTimeout } from '../../timeouts.js';

/** Pause before re-opening a subscription whose node went away (or was not known yet). */
const RESUBSCRIBE_DELAY_MS = 500;

/**
 * The wake-up subscription of a cluster voter: one plain connection to EVERY master of the
 * cluster, subscribed to the engine's channel.
 *
 * Why every master: a release hands a lock to the first waiter only if PUBLISH reports that
 * someone heard it (scripts/queue.ts); otherwise the waiter's engine is gone and the next waiter
 * gets the lock. In a cluster PUBLISH reaches subscribers on every node (cluster-wide pub/sub),
 * but its reply counts only the subscribers of the shard that ran the script. With a connection
 * on every master, that count means what it means on one server: this engine is alive.
 *
 * Every connection receives every message (cluster-wide delivery), so only one of them, the
 * primary, delivers; the others only make the count right. When the primary's node goes away,
 * another connection takes over (wake-ups in between are lost: waiters fall back on their timers,
 * as after any reconnect).
 *
 * Why not ioredis' own cluster subscriber: it holds one connection, and re-selects its node when
 * the cluster client refreshes, not carrying over a SUBSCRIBE acknowledged just before.
 */
export class ClusterSubscriber {
  /** By node key (`host:port`). */
  private readonly connections = new Map<string, Redis>();
  private primary: Redis | undefined;
  private readonly channels = new Set<string>();
  private readonly listeners: Array<(channel: string, message: string) => void> = [];
  private retry: (() => void) | undefined;
  private closed = false;
  private readonly onTopologyChange = () => this.schedule();

  constructor(
    private readonly cluster: Cluster,
    private readonly connectTimeout: number,
  ) {
    // A new master (failover, resharding) needs a connection of its own.
    cluster.on('+node', this.onTopologyChange);
    cluster.on('ready', this.onTopologyChange);
  }

  /** Calls `listener` for every message on the subscribed channels. */
  onMessage(listener: (channel: string, message: string) => void): void {
    this.listeners.push(listener);
  }

  /** Subscribes `channel` on every master; resolves once each confirmed (or failed). */
  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    if (this.cluster.status !== 'ready') await new Promise((resolve) => this.cluster.once('ready', resolve));
    this.openMissing();
    await Promise.all([...this.connections.values()].map((c) => this.subscribeOn(c, [channel])));
  }

  /** Drops every connection; resolves once their sockets are closed. */
  async close(): Promise<void> {
    this.closed = true;
    this.retry?.();
    this.cluster.off('+node', this.onTopologyChange);
    this.cluster.off('ready', this.onTopologyChange);
    const open = [...this.connections.values()].filter((c) => c.status !== 'end');
    this.connections.clear();
    await Promise.all(
      open.map((connection) => {
        const ended = new Promise((resolve) => connection.once('end', resolve));
        connection.disconnect();
        return ended;
      }),
    );
  }

  /** Opens (and subscribes) a connection to each master that has none. */
  private openMissing(): void {
    for (const node of this.cluster.nodes('master')) {
      const { host, port, username, password, tls } = node.options;
      const key = `${host}:${port}`;
      if (this.connections.has(key)) continue;
      const { Redis } = ioredisModule<typeof import('ioredis')>();
      const connection = new Redis({
        host,
        port,
        username,
        password,
        tls,
        connectTimeout: this.connectTimeout,
        // Subscriptions wait while it connects; it does not reconnect: a gone node is re-checked
        // against the cluster's masters instead.
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        retryStrategy: () => null,
      });
      connection.on('error', () => undefined); // the cluster client reports health
      connection.on('message', (channel: string, message: string) => {
        if (connection !== this.primary) return; // the same message reaches every connection
        for (const listener of this.listeners) listener(channel, message);
      });
      connection.once('end', () => {
        if (this.connections.get(key) === connection) this.connections.delete(key);
        if (this.primary === connection) this.primary = undefined;
        this.choosePrimary();
        this.schedule();
      });
      this.connections.set(key, connection);
      if (this.channels.size > 0) void this.subscribeOn(connection, [...this.channels]);
    }
  }

  /** SUBSCRIBE on one connection; the first to confirm becomes the primary, if there is none. */
  private async subscribeOn(connection: Redis, channels: string[]): Promise<void> {
    try {
      await connection.subscribe(...channels);
      if (connection.status === 'ready') this.primary ??= connection;
    } catch {
      // its 'end' re-opens it
    }
  }

  private choosePrimary(): void {
    this.primary ??= [...this.connections.values()].find((c) => c.status === 'ready');
  }

  /** Re-opens missing connections soon (once per delay, however many events asked). */
  private schedule(): void {
    if (this.closed || this.retry || this.channels.size === 0) return;
    this.retry = startTimeout(RESUBSCRIBE_DELAY_MS, () => {
      this.retry = undefined;
      if (this.closed) return;
      if (this.cluster.status === 'ready') this.openMissing();
      else this.schedule();
    });
  }
}
