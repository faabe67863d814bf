import type { RedlockLogger } from '../logger.js';
import type { Voters } from '../quorum/voters.js';
import { settleWithin } from '../runtime.js';
import { decodeWakeMessage } from '../scripts/keys.js';
import type { HandOff } from './hand-off.js';
import { WakeSubscription } from './wake-subscription.js';

/** Wake-ups kept for waiters that have not registered yet (oldest dropped first). */
const MAX_UNCLAIMED = 1000;

/** A message for a waiter: a hand-over, or the cause of a turn. */
type Delivery = HandOff | string;

/** The first retry of a failed subscription comes after this, ms; each next one after twice as long. */
const RESUBSCRIBE_FIRST_MS = 1000;
/** The longest wait between retries of a failed subscription, ms. */
const RESUBSCRIBE_MAX_MS = 30_000;

/** One voter's subscription to the engine's channel. */
interface VoterSubscription {
  /** Why the last attempt failed; undefined while subscribed (or not tried yet). */
  error: string | undefined;
  /** Failed attempts in a row (the back-off). */
  failures: number;
  retry: (() => void) | undefined;
}

/**
 * Tells this engine's waiters when a lock is handed to them, instead of polling. When a lock is
 * released while others wait (or a waiter it was handed to gives up), the voter hands it to the
 * first waiter in the resource's queue and publishes that on the waiter's engine channel (see
 * scripts/wake-message.ts). So a release wakes one waiter, not every waiter of the resource, and
 * each engine listens on a single channel, subscribed on every voter on first need.
 */
export class WakeChannel {
  private readonly waiters = new Map<string, WakeSubscription>();
  /**
   * Messages for waiters not registered (yet): a waiter registers after the attempt that queued
   * it, and its turn may come in between. Bounded: entries of waiters that already left are junk.
   */
  private readonly unclaimed = new Map<string, Delivery[]>();
  /**
   * Values whose wait ended lately (when, performance.now), in that order. What voters hand them
   * after that is dropped: the lock's release, or the waiter's leaving the queues, went to every
   * voter after the wait ended, and passes on whatever a voter handed it; and a hand-over the
   * cleanup missed ends with its short lease anyway (kept for as long).
   */
  private readonly retired = new Map<string, number>();
  private subscribed: Promise<unknown> | undefined;
  /** Per voter, its subscription (created on first need). */
  private readonly subscriptions: VoterSubscription[];
  /**
   * True once the voters acknowledged the subscription (or did not within the timeout). A wake-up
   * published before that is lost, so an attempt started earlier must be followed by another.
   */
  listening = false;
  private closed = false;

  constructor(
    private readonly voters: Voters,
    /** This engine's channel name. */
    private readonly channel: string,
    /** Upper bound for waiting on SUBSCRIBE acknowledgements (a dead voter must not stall). */
    private readonly timeoutMs: number,
    /** How long a voter hands a lock over for (the turn). */
    private readonly handOffLeaseMs: number,
    private readonly logger: RedlockLogger,
  ) {
    this.subscriptions = voters.list.map(() => ({ error: undefined, failures: 0, retry: undefined }));
  }

  /**
   * Why this engine hears no wake-ups from voter `index` (its subscription failed; retried with
   * back-off, its waiters poll it meanwhile); undefined when it does, or has not needed to yet.
   */
  subscriptionError(index: number): string | undefined {
    return this.subscriptions[index]!.error;
  }

  /**
   * Registers the waiter with lock value `value` (a wake-up that arrived for it since it was
   * queued is handed over at once), and starts subscribing the engine's channel if that has not
   * happened yet.
   */
  register(value: string): WakeSubscription {
    const subscription = new WakeSubscription(
      this.voters.quorum,
      () => this.retire(value),
      // Hand-overs that stop short of a majority: try again halfway through their lease.
      this.handOffLeaseMs / 2,
      this.voters.runtime,
    );
    this.waiters.set(value, subscription);
    const messages = this.unclaimed.get(value);
    if (messages !== undefined) {
      this.unclaimed.delete(value);
      for (const m of messages) pass(subscription, m);
    }
    if (!this.subscribed && !this.closed) {
      const acks = this.voters.list.map((_, index) => this.subscribe(index));
      this.subscribed = settleWithin(this.voters.runtime, Promise.all(acks), this.timeoutMs).then(() => {
        this.listening = true;
      });
    }
    return subscription;
  }

  /** Resolves when {@link listening} becomes true. */
  async ready(): Promise<void> {
    await this.subscribed;
  }

  /** Stops delivering and retrying (the voters close the subscriptions with their connections). */
  close(): void {
    this.closed = true;
    for (const subscription of this.subscriptions) subscription.retry?.();
  }

  /**
   * Subscribes the channel on voter `index`; a failure (a refused SUBSCRIBE, no subscriber
   * connection) is logged once per episode and tried again with back-off, and the voter's
   * waiters meanwhile ask it again at least every QUEUE_RECHECK_MS, keeping their tickets.
   * Never rejects.
   */
  private subscribe(index: number): Promise<void> {
    const voter = this.voters.list[index]!;
    const state = this.subscriptions[index]!;
    state.retry = undefined;
    return voter
      .subscribe(this.channel, (message) => this.deliver(message, index))
      .then(
        () => {
          if (state.error !== undefined) {
            this.logger.log(
              `Redis node ${voter.label}: wake-ups subscribed again; waiters are woken, not polling`,
            );
          }
          state.error = undefined;
          state.failures = 0;
        },
        (err: unknown) => {
          if (this.closed) return;
          const reason = voter.failureReason(err);
          if (state.error === undefined) {
            this.logger.warn(
              `Redis node ${voter.label}: this engine cannot subscribe to its wake-ups (${reason}); its waiters ` +
                'ask that node again every second meanwhile, keeping their place in line. Retrying with back-off.',
            );
          }
          state.error = reason;
          const delay = Math.min(RESUBSCRIBE_FIRST_MS * 2 ** state.failures++, RESUBSCRIBE_MAX_MS);
          state.retry = this.voters.runtime.setTimeout(() => void this.subscribe(index), delay);
        },
      );
  }

  private deliver(message: string, node: number): void {
    const decoded = decodeWakeMessage(message);
    if (!decoded || this.closed) return;
    const { value } = decoded;
    const delivery: Delivery =
      decoded.kind === 'handed'
        ? {
            node,
            value,
            token: decoded.token,
            clockUs: decoded.clockUs,
            receivedAt: this.voters.runtime.now(),
          }
        : decoded.cause;
    const waiter = this.waiters.get(value);
    if (waiter) return pass(waiter, delivery);
    if (this.retired.has(value)) return;
    const messages = this.unclaimed.get(value);
    if (messages) messages.push(delivery);
    else this.unclaimed.set(value, [delivery]);
    if (this.unclaimed.size > MAX_UNCLAIMED) this.unclaimed.delete(this.unclaimed.keys().next().value!);
  }

  private retire(value: string): void {
    this.waiters.delete(value);
    const now = this.voters.runtime.now();
    this.retired.set(value, now);
    for (const [old, at] of this.retired) {
      if (now - at <= this.handOffLeaseMs) break;
      this.retired.delete(old);
    }
  }
}

function pass(subscription: WakeSubscription, delivery: Delivery): void {
  if (typeof delivery === 'string') subscription.wake(delivery);
  else subscription.handOff(delivery);
}
