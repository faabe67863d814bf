import type { Redis } from 'ioredis';
import type { LockNode } from './lock-node.js';

/** How long an unused channel subscription is kept, in case the resource is waited for again. */
const SUBSCRIPTION_LINGER_MS = 2000;

/** Why a wait ended. */
export type WakeReason = 'released' | 'timeout' | 'aborted';

/**
 * Wakes waiters when a lock they wait for is released, instead of polling. The release script
 * publishes the released value on `<lock key>:released` on every node; this class keeps one
 * subscriber connection per node (opened on first need) and reference-counts channel
 * subscriptions across all waiters of the process.
 */
export class ReleaseWaiter {
  private readonly subscribers: Array<Redis | undefined>;
  private readonly listeners = new Map<string, Set<(value: string) => void>>();
  private closed = false;

  constructor(
    private readonly nodes: readonly LockNode[],
    /** Upper bound for waiting on SUBSCRIBE acknowledgements (a dead node must not stall). */
    private readonly timeoutMs: number,
  ) {
    this.subscribers = nodes.map(() => undefined);
  }

  /** Subscribes to the channels; resolves once the nodes acknowledged (or the timeout passed). */
  async subscribe(channels: readonly string[]): Promise<ReleaseSubscription> {
    const subscription = new ReleaseSubscription(() => this.unsubscribe(channels, subscription.listener));
    const fresh: string[] = [];
    for (const channel of channels) {
      let set = this.listeners.get(channel);
      if (!set) {
        set = new Set();
        this.listeners.set(channel, set);
        fresh.push(channel);
      }
      set.add(subscription.listener);
    }
    if (fresh.length > 0 && !this.closed) {
      const acks = this.nodes.map((_, i) =>
        this.subscriber(i)
          .subscribe(...fresh)
          .catch(() => undefined),
      );
      await withTimeout(Promise.all(acks), this.timeoutMs);
    }
    return subscription;
  }

  /**
   * Closes the subscriber connections. QUIT is only sent on a live connection and waited for at
   * most `timeoutMs`: these connections queue commands while offline, so a QUIT to a node that is
   * down or paused would otherwise never settle and hang shutdown.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.subscribers.map(async (sub) => {
        if (!sub) return;
        if (sub.status === 'ready')
          await withTimeout(
            sub.quit().catch(() => undefined),
            this.timeoutMs,
          );
        sub.disconnect();
      }),
    );
  }

  private unsubscribe(channels: readonly string[], listener: (value: string) => void): void {
    const gone: string[] = [];
    for (const channel of channels) {
      const set = this.listeners.get(channel);
      if (!set) continue;
      set.delete(listener);
      if (set.size === 0) gone.push(channel);
    }
    if (gone.length === 0 || this.closed) {
      for (const channel of gone) this.listeners.delete(channel);
      return;
    }
    // Linger before unsubscribing: a resource waited for once is usually waited for again soon,
    // and re-subscribing costs a round trip to every node.
    setTimeout(() => this.dropIdle(gone), SUBSCRIPTION_LINGER_MS).unref();
  }

  private dropIdle(channels: readonly string[]): void {
    const gone = channels.filter((channel) => this.listeners.get(channel)?.size === 0);
    for (const channel of gone) this.listeners.delete(channel);
    if (gone.length === 0 || this.closed) return;
    for (const sub of this.subscribers) sub?.unsubscribe(...gone).catch(() => undefined);
  }

  private subscriber(index: number): Redis {
    let sub = this.subscribers[index];
    if (!sub) {
      // Its own connection (a subscribed connection can run nothing else). Commands queue while
      // it connects; ioredis re-subscribes after a reconnect.
      sub = this.nodes[index]!.client.duplicate({
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        lazyConnect: false,
      });
      sub.on('error', () => undefined); // the node's main connection already reports its health
      sub.on('message', (channel: string, value: string) => {
        const set = this.listeners.get(channel);
        if (set) for (const listener of set) listener(value);
      });
      this.subscribers[index] = sub;
    }
    return sub;
  }
}

/** One waiter's subscription: wait for a release or a timeout, as many times as needed. */
export class ReleaseSubscription {
  private wake: ((reason: WakeReason) => void) | undefined;
  private pending = false;
  private lastValue: string | undefined;

  constructor(private readonly onClose: () => void) {}

  /** Called for every release message on one of our channels (from any node). */
  readonly listener = (value: string): void => {
    // The same release arrives once per node: wake once per released value.
    if (value === this.lastValue) return;
    this.lastValue = value;
    if (this.wake) this.wake('released');
    else this.pending = true;
  };

  /** Resolves on the next release, after `ms`, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal?: AbortSignal): Promise<WakeReason> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('released');
    }
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const done = (reason: WakeReason) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(reason);
      };
      const onAbort = () => done('aborted');
      const timer = setTimeout(() => done('timeout'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.wake = done;
    });
  }

  close(): void {
    this.onClose();
  }
}

function withTimeout(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
