import type { Redis } from 'ioredis';
import type { LockNode } from './lock-node.js';
import { startTimeout, type CancelTimeout } from './timeouts.js';

/** Wake-ups kept for waiters that have not registered yet (oldest dropped first). */
const MAX_UNCLAIMED = 1000;

/**
 * Why a wait ended: `handed` when a majority of nodes handed the lock over, `woken` when it is
 * worth trying again (a turn came, or hand-overs stopped short of a majority).
 */
export type WakeReason = 'handed' | 'woken' | 'timeout' | 'aborted';

/** A node handed a lock to one of this engine's waiters (see promote in scripts.ts). */
export interface HandOff {
  /** Index of the node in the engine's node list. */
  readonly node: number;
  /** The waiter's lock value. */
  readonly value: string;
  /** The fencing token the node issued with it. */
  readonly token: number;
  /** The node's clock when it handed the lock over, microseconds. */
  readonly clockUs: number;
}

/**
 * Tells this engine's waiters when a lock is handed to them, instead of polling. When a lock is
 * released while others wait (or a waiter it was handed to gives up), the node's script hands it
 * to the first waiter in the resource's queue and publishes that on the waiter's engine channel:
 * "<value> <cause> <token> <clock>" (the lock itself) or "<value> <cause>" (a turn, for a
 * waiter of several resources). So a release wakes one waiter, not every waiter of the resource,
 * and each engine listens on a single channel, with one subscriber connection per node (opened on
 * first need, re-subscribed by ioredis after a reconnect).
 */
export class WakeChannel {
  private readonly subscribers: Array<Redis | undefined>;
  private readonly waiters = new Map<string, WakeSubscription>();
  /**
   * Messages for waiters not registered (yet): a waiter registers after the attempt that queued
   * it, and its turn may come in between. Bounded: entries of waiters that already left are junk.
   */
  private readonly unclaimed = new Map<string, Array<string | HandOff>>();
  /**
   * Values whose wait ended lately (when, performance.now), in that order. What nodes hand them
   * after that is dropped: the lock's release, or the waiter's leaving the queues, went to every
   * node after the wait ended, and passes on whatever a node handed it; and a hand-over the
   * cleanup missed ends with its short lease anyway (kept for as long).
   */
  private readonly retired = new Map<string, number>();
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
    /** How long a node hands a lock over for (the turn). */
    private readonly handOffLeaseMs: number,
  ) {
    this.subscribers = nodes.map(() => undefined);
  }

  /**
   * Registers the waiter with lock value `value` (a wake-up that arrived for it since it was
   * queued is handed over at once), and starts subscribing the engine's channel if that has not
   * happened yet.
   */
  register(value: string): WakeSubscription {
    const subscription = new WakeSubscription(
      Math.floor(this.nodes.length / 2) + 1,
      () => this.retire(value),
      // Hand-overs that stop short of a majority: try again halfway through their lease.
      this.handOffLeaseMs / 2,
    );
    this.waiters.set(value, subscription);
    const messages = this.unclaimed.get(value);
    if (messages !== undefined) {
      this.unclaimed.delete(value);
      for (const m of messages) {
        if (typeof m === 'string') subscription.wake(m);
        else subscription.handOff(m);
      }
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

  private deliver(message: string, node: number): void {
    const fields = message.split(' ');
    const value = fields[0]!;
    const cause = fields[1] ?? '';
    const entry: string | HandOff =
      fields.length === 4 ? { node, value, token: Number(fields[2]), clockUs: Number(fields[3]) } : cause;
    const waiter = this.waiters.get(value);
    if (waiter) {
      if (typeof entry === 'string') waiter.wake(entry);
      else waiter.handOff(entry);
      return;
    }
    if (this.retired.has(value)) return;
    const messages = this.unclaimed.get(value);
    if (messages) messages.push(entry);
    else this.unclaimed.set(value, [entry]);
    if (this.unclaimed.size > MAX_UNCLAIMED) this.unclaimed.delete(this.unclaimed.keys().next().value!);
  }

  private retire(value: string): void {
    this.waiters.delete(value);
    const now = performance.now();
    this.retired.set(value, now);
    for (const [old, at] of this.retired) {
      if (now - at <= this.handOffLeaseMs) break;
      this.retired.delete(old);
    }
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
      sub.on('message', (_channel: string, message: string) => this.deliver(message, index));
      this.subscribers[index] = sub;
    }
    return sub;
  }
}

/**
 * One waiter's registration: wait for the lock, its turn or a timeout, as many times as needed.
 *
 * Every node hands the lock over (or announces the same turn) when the release reaches it. The
 * waiter is done when a majority has handed it the lock, and tries again when a majority has
 * announced its turn (the `quorum`-th announcement of one cause): woken by the first, it would try
 * while the others still hold the lock for the releaser, fail, and then sleep through its turn.
 * Hand-overs that stop short of a majority (another waiter was first on some nodes) wake it after
 * `graceMs`, to sort it out with an attempt.
 */
export class WakeSubscription {
  private resolveWait: ((reason: WakeReason) => void) | undefined;
  private pending: WakeReason | undefined;
  /** Announcements counted per cause. */
  private readonly heard = new Map<string, number>();
  /** Hand-overs by node index. */
  private readonly handOffs = new Map<number, HandOff>();
  private cancelGrace: CancelTimeout | undefined;

  constructor(
    private readonly quorum: number,
    private readonly onClose: () => void,
    private readonly graceMs: number,
  ) {}

  /** A node gave us the turn; `cause` names the release (or departure) that did, '' if unknown. */
  wake(cause: string): void {
    if (cause !== '') {
      const count = (this.heard.get(cause) ?? 0) + 1;
      this.heard.set(cause, count);
      if (count !== this.quorum) return;
    }
    this.signal('woken');
  }

  /** A node handed us the lock. */
  handOff(handOff: HandOff): void {
    this.handOffs.set(handOff.node, handOff);
    if (this.handOffs.size >= this.quorum) {
      this.cancelGrace?.();
      this.signal('handed');
    } else if (!this.cancelGrace) {
      this.cancelGrace = startTimeout(this.graceMs, () => this.signal('woken'));
    }
  }

  /** The hand-overs received so far, one per node. */
  handedOver(): HandOff[] {
    return [...this.handOffs.values()];
  }

  /** Resolves when handed the lock or woken, after `ms`, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal?: AbortSignal): Promise<WakeReason> {
    if (this.pending) {
      const reason = this.pending;
      this.pending = undefined;
      return Promise.resolve(reason);
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
    this.cancelGrace?.();
    this.onClose();
  }

  private signal(reason: WakeReason): void {
    if (this.resolveWait) this.resolveWait(reason);
    // Told while an attempt is in flight: act on it at once after. A hand-over outranks a wake-up.
    else if (this.pending !== 'handed') this.pending = reason;
  }
}

function withTimeout(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
