import type { Redis } from 'ioredis';
import type { LockNode } from './lock-node.js';

/** Wake-ups kept for waiters that have not registered yet (oldest dropped first). */
const MAX_UNCLAIMED = 1000;

/** Why a wait ended. */
export type WakeReason = 'woken' | 'timeout' | 'aborted';

/**
 * Wakes this engine's waiters when their turn comes, instead of polling. When a lock is released
 * while others wait (or a waiter whose turn it was gives up), the node's script gives the turn to
 * the first waiter in the resource's queue and publishes "<waiter value> <cause>" on that
 * waiter's engine channel. So a release wakes one waiter, not every waiter of the resource, and each
 * engine listens on a single channel, with one subscriber connection per node (opened on first
 * need, re-subscribed by ioredis after a reconnect).
 */
export class WakeChannel {
  private readonly subscribers: Array<Redis | undefined>;
  private readonly waiters = new Map<string, WakeSubscription>();
  /**
   * Wake-ups for waiters not registered (yet): a waiter registers after the attempt that queued
   * it, and its turn may come in between. Bounded: entries of waiters that already left are junk.
   */
  private readonly unclaimed = new Map<string, string[]>();
  private subscribed: Promise<unknown> | undefined;
  /**
   * True once the nodes acknowledged the subscription (or did not within the timeout). A wake-up
   * published before that is lost, so an attempt started earlier must be followed by another.
   */
  listening = false;
  private closed = false;

  constructor(
    private readonly nodes: readonly LockNode[],
    /** This engine's channel name. */
    private readonly channel: string,
    /** Upper bound for waiting on SUBSCRIBE acknowledgements (a dead node must not stall). */
    private readonly timeoutMs: number,
  ) {
    this.subscribers = nodes.map(() => undefined);
  }

  /**
   * Registers the waiter with lock value `value` (a wake-up that arrived for it since it was
   * queued is handed over at once), and starts subscribing the engine's channel if that has not
   * happened yet.
   */
  register(value: string): WakeSubscription {
    const subscription = new WakeSubscription(Math.floor(this.nodes.length / 2) + 1, () =>
      this.waiters.delete(value),
    );
    this.waiters.set(value, subscription);
    const causes = this.unclaimed.get(value);
    if (causes !== undefined) {
      this.unclaimed.delete(value);
      for (const cause of causes) subscription.wake(cause);
    }
    if (!this.subscribed && !this.closed) {
      const acks = this.nodes.map((_, i) =>
        this.subscriber(i)
          .subscribe(this.channel)
          .catch(() => undefined),
      );
      this.subscribed = withTimeout(Promise.all(acks), this.timeoutMs).then(() => {
        this.listening = true;
      });
    }
    return subscription;
  }

  /** Resolves when {@link listening} becomes true. */
  async ready(): Promise<void> {
    await this.subscribed;
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

  private deliver(message: string): void {
    const space = message.indexOf(' ');
    const value = space < 0 ? message : message.slice(0, space);
    const cause = space < 0 ? '' : message.slice(space + 1);
    const waiter = this.waiters.get(value);
    if (waiter) {
      waiter.wake(cause);
      return;
    }
    const causes = this.unclaimed.get(value);
    if (causes) causes.push(cause);
    else this.unclaimed.set(value, [cause]);
    if (this.unclaimed.size > MAX_UNCLAIMED) this.unclaimed.delete(this.unclaimed.keys().next().value!);
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
      sub.on('message', (_channel: string, message: string) => this.deliver(message));
      this.subscribers[index] = sub;
    }
    return sub;
  }
}

/**
 * One waiter's registration: wait for its turn or a timeout, as many times as needed.
 *
 * Every node announces the same hand-over, each when the release reaches it. The waiter wakes
 * when a majority has (the `quorum`-th announcement of one cause): woken by the first, it would
 * try while the others still hold the lock for the releaser, fail, and then sleep through its
 * turn.
 */
export class WakeSubscription {
  private resolveWait: ((reason: WakeReason) => void) | undefined;
  private pending = false;
  /** Announcements counted per cause. */
  private readonly heard = new Map<string, number>();

  constructor(
    private readonly quorum: number,
    private readonly onClose: () => void,
  ) {}

  /** A node gave us the turn; `cause` names the release (or departure) that did, '' if unknown. */
  wake(cause: string): void {
    if (cause !== '') {
      const count = (this.heard.get(cause) ?? 0) + 1;
      this.heard.set(cause, count);
      if (count !== this.quorum) return;
    }
    if (this.resolveWait) this.resolveWait('woken');
    else this.pending = true; // woken while an attempt is in flight: try again at once
  }

  /** Resolves when woken, after `ms`, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal?: AbortSignal): Promise<WakeReason> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('woken');
    }
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const done = (reason: WakeReason) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.resolveWait = undefined;
        resolve(reason);
      };
      const onAbort = () => done('aborted');
      const timer = setTimeout(() => done('timeout'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.resolveWait = done;
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
