import { settleWithin, type Runtime } from '../runtime.js';
import { describeError } from '../voter/describe-error.js';

/** How often the subscribers are checked against the shards (new masters, lost connections), ms. */
const RECONCILE_MS = 1000;

/** One subscribed connection to one shard, as a transport opens it. */
export interface ShardSubscription {
  /** Whether it receives messages now. */
  readonly healthy: boolean;
  /** Whether it is gone for good (a new one is opened in its place). */
  readonly ended?: boolean;
  /** Asks the shard (a client that says nothing of its connection): `healthy` follows the answer. */
  probe?(): Promise<void>;
  /** Subscribes more channels. */
  subscribe(channels: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** Opens a connection to shard `shard`, subscribed to `channels`, delivering to `deliver`. */
export type OpenSubscription = (
  shard: string,
  channels: readonly string[],
  deliver: (channel: string, message: string) => void,
) => Promise<ShardSubscription>;

/**
 * The wake subscriptions of one transport: a connection per shard (a single server: one), kept in
 * step with the shards. On a Cluster a message PUBLISHed by a script reaches every node's
 * subscribers, but the script counts only its own node's (and skips a waiter nobody listens for
 * there): so every master has one. Each message arrives once per shard: only one subscription, a
 * healthy one, delivers.
 */
export class ShardSubscribers {
  private readonly opened = new Map<string, Promise<ShardSubscription | undefined>>();
  private readonly subscribed = new Map<string, ShardSubscription>();
  private primary: string | undefined;
  private readonly channels = new Map<string, (message: string) => void>();
  private cancel: (() => void) | undefined;
  private closed = false;
  /** Why the last subscription failed to open (log-safe). */
  private lastError: string | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly shards: () => readonly string[],
    private readonly open: OpenSubscription,
  ) {}

  /** Subscribes `channel` on every shard; rejects when no shard could be subscribed to. */
  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channels.set(channel, onMessage);
    await Promise.all([...this.subscribed.values()].map((s) => s.subscribe([channel])));
    await this.reconcile();
    if (this.subscribed.size === 0) {
      throw new Error(`no server could be subscribed to${this.lastError ? `: ${this.lastError}` : ''}`);
    }
  }

  /**
   * Closes every subscription, waiting at most `timeoutMs`: one still opening to a server that does
   * not answer (paused) waits for its own bound, and is closed as soon as it opens.
   */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.cancel?.();
    const all = [...this.opened.values()];
    this.opened.clear();
    this.subscribed.clear();
    const closing = Promise.all(all.map((p) => p.then((s) => s?.close()).catch(() => undefined)));
    await settleWithin(this.runtime, closing, timeoutMs);
  }

  /** Opens what is missing, closes what left, and picks the shard that delivers. */
  private async reconcile(): Promise<void> {
    this.cancel?.();
    this.cancel = undefined;
    if (this.closed) return;
    const shards = new Set(this.shards());
    for (const [shard, pending] of this.opened) {
      if (shards.has(shard) && !this.subscribed.get(shard)?.ended) continue;
      this.opened.delete(shard);
      this.subscribed.delete(shard);
      void pending.then((s) => s?.close()).catch(() => undefined);
    }
    await Promise.all([...shards].map((shard) => this.opened.get(shard) ?? this.openOn(shard)));
    const probes = [...this.subscribed.values()].map((s) => s.probe?.().catch(() => undefined));
    await settleWithin(this.runtime, Promise.all(probes), 2 * RECONCILE_MS);
    if (!(this.primary !== undefined && this.subscribed.get(this.primary)?.healthy)) {
      this.primary = [...this.subscribed].find(([, s]) => s.healthy)?.[0];
    }
    if (!this.closed) this.cancel = this.runtime.setTimeout(() => void this.reconcile(), RECONCILE_MS);
  }

  private openOn(shard: string): Promise<ShardSubscription | undefined> {
    const channels = [...this.channels.keys()];
    const deliver = (channel: string, message: string) => {
      if (shard === this.primary) this.channels.get(channel)?.(message);
    };
    const pending = this.open(shard, channels, deliver).then(
      async (subscription) => {
        if (this.closed || this.opened.get(shard) !== pending) {
          await subscription.close();
          return undefined;
        }
        const missing = [...this.channels.keys()].filter((c) => !channels.includes(c));
        if (missing.length > 0) await subscription.subscribe(missing).catch(() => undefined);
        this.subscribed.set(shard, subscription);
        this.primary ??= shard;
        return subscription;
      },
      (err: unknown) => {
        this.lastError = describeError(err);
        if (this.opened.get(shard) === pending) this.opened.delete(shard);
        return undefined;
      },
    );
    this.opened.set(shard, pending);
    return pending;
  }
}
