import { settleWithin, startTimeout, type CancelTimeout } from '../timeouts.js';

/** How often the masters are checked for a subscription to open, close or take over delivery, ms. */
const RECONCILE_MS = 1000;
/** How long a round waits for the subscribers' probes, at most, ms. */
const PROBE_BOUND_MS = 2000;

/** One subscribed connection to one master of a cluster, as a client opens it. */
export interface ShardSubscription {
  /** False once the connection is known to be down (another one then delivers). */
  readonly healthy: boolean;
  /**
   * Optional: finds out whether the master answers (for a client that does not say when its
   * connection drops: GLIDE); {@link healthy} then tells the answer. Called once a round.
   */
  probe?(): Promise<void>;
  /** Subscribes more channels on this connection. */
  subscribe(channels: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** Opens a connection to the master at `address`, subscribed to `channels`, delivering to `deliver`. */
export type OpenShardSubscription = (
  address: string,
  channels: readonly string[],
  deliver: (channel: string, message: string) => void,
) => Promise<ShardSubscription>;

/**
 * The wake-up subscription of a cluster voter on a client without one of its own that fits
 * (node-redis createCluster, Valkey GLIDE GlideClusterClient): a connection to EVERY master,
 * subscribed to the engine's channel, as ioredis-cluster/subscriber.ts does for ioredis, and for
 * the same reason: a release hands a lock to the first waiter only if its PUBLISH reports a
 * listener (scripts/queue.ts), and in a cluster PUBLISH reaches subscribers on every node but
 * counts only the subscribers of the shard that ran it. The client's own cluster subscription
 * (node-redis `cluster.subscribe`, GLIDE's subscriber) sits on one node, so a hand-over on the
 * other shards would think the waiter's engine gone. Sharded pub/sub (SSUBSCRIBE) would need the
 * scripts to SPUBLISH, which a single server before Redis 7 lacks.
 *
 * Every connection receives every message, so only one, the primary, delivers; the others make
 * the count right. The masters are checked every second: a new master gets a connection, a gone
 * one loses its own, and an unhealthy primary hands delivery over (wake-ups in between are lost:
 * waiters fall back on their timers, as after any reconnect).
 */
export class ShardSubscribers {
  private readonly opened = new Map<string, Promise<ShardSubscription | undefined>>();
  private readonly subscribed = new Map<string, ShardSubscription>();
  private primary: string | undefined;
  private readonly channels = new Set<string>();
  private readonly listeners: Array<(channel: string, message: string) => void> = [];
  private cancel: CancelTimeout | undefined;
  private closed = false;

  constructor(
    /** The masters' addresses (`host:port`) now. */
    private readonly masters: () => Promise<readonly string[]> | readonly string[],
    private readonly open: OpenShardSubscription,
  ) {}

  /** Calls `listener` for every message on the subscribed channels. */
  onMessage(listener: (channel: string, message: string) => void): void {
    this.listeners.push(listener);
  }

  /** Subscribes `channel` on every master; resolves once each confirmed (or failed). */
  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    await Promise.all(
      [...this.subscribed.values()].map((s) => s.subscribe([channel]).catch(() => undefined)),
    );
    await this.reconcile();
    if (this.subscribed.size === 0) throw new Error('no master of the cluster could be subscribed to');
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancel?.();
    const all = [...this.opened.values()];
    this.opened.clear();
    this.subscribed.clear();
    await Promise.all(all.map((p) => p.then((s) => s?.close()).catch(() => undefined)));
  }

  /** Opens what is missing, closes what is gone, picks the primary; then again in a second. */
  private async reconcile(): Promise<void> {
    this.cancel?.();
    this.cancel = undefined;
    if (this.closed) return;
    try {
      const masters = new Set(await this.masters());
      for (const [address, pending] of this.opened) {
        if (masters.has(address)) continue;
        this.opened.delete(address);
        this.subscribed.delete(address);
        void pending.then((s) => s?.close()).catch(() => undefined);
      }
      await Promise.all([...masters].map((address) => this.opened.get(address) ?? this.openOn(address)));
      // Bounded: a round never hangs on a master that does not answer.
      const probes = [...this.subscribed.values()].map((s) => s.probe?.().catch(() => undefined));
      await settleWithin(Promise.all(probes), PROBE_BOUND_MS);
      const current = this.primary === undefined ? undefined : this.subscribed.get(this.primary);
      if (!current?.healthy) {
        this.primary = [...this.subscribed].find(([, s]) => s.healthy)?.[0];
      }
    } catch {
      // the masters could not be listed now: tried again below
    }
    if (!this.closed) this.cancel = startTimeout(RECONCILE_MS, () => void this.reconcile());
  }

  private openOn(address: string): Promise<ShardSubscription | undefined> {
    const channels = [...this.channels];
    const deliver = (channel: string, message: string) => {
      if (address !== this.primary) return; // the same message reaches every connection
      for (const listener of this.listeners) listener(channel, message);
    };
    const pending = this.open(address, channels, deliver).then(
      async (subscription) => {
        if (this.closed || this.opened.get(address) !== pending) {
          await subscription.close();
          return undefined;
        }
        // Channels added while it was opening.
        const missing = [...this.channels].filter((c) => !channels.includes(c));
        if (missing.length > 0) await subscription.subscribe(missing).catch(() => undefined);
        this.subscribed.set(address, subscription);
        this.primary ??= address;
        return subscription;
      },
      () => {
        // Not reachable now: the next round tries again.
        if (this.opened.get(address) === pending) this.opened.delete(address);
        return undefined;
      },
    );
    this.opened.set(address, pending);
    return pending;
  }
}
