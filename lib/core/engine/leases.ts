import { LockLostError, RedlockOptionsError } from '../errors.js';
import type { LockEvent, LockEvents } from '../events.js';
import type { RedlockLogger } from '../logger.js';
import type { ResolvedOptions } from '../options.js';
import type { Voters } from '../quorum/voters.js';
import { clockGuardFor, driftFor } from '../resolve-options.js';
import { settleWithin, TIMED_OUT, type Runtime } from '../runtime.js';
import { RELEASE } from '../scripts/let-go.js';
import { clockOf, ExtendBatcher, wasExtended, type ExtendOutcome } from './extend-batcher.js';
import { HeldLock, type Grant, type LockOwner } from './held-lock.js';
import { startWatchdog, WatchdogClock } from './watchdog.js';

/**
 * The locks an engine holds, from grant to release or loss: extending them on a majority (the
 * watchdog's extensions batched per voter and tick), releasing them, and forgetting lost ones.
 */
export class Leases implements LockOwner {
  private readonly held = new Set<HeldLock>();
  /** Per voter: extensions requested in the same tick share one call. */
  private readonly batchers: ExtendBatcher[];
  /** Per watchdog period: one shared interval, so that watchdogs tick (and batch) together. */
  private readonly clock: WatchdogClock;
  readonly runtime: Runtime;
  /** How a holder's release lets go (one shared object: release is on every lock's path). */
  private readonly releasing: { readonly confirmed: boolean };

  /** Resolves the drain (see {@link drain}) once no lock is held. */
  private onEmpty: (() => void) | undefined;

  constructor(
    private readonly voters: Voters,
    private readonly options: ResolvedOptions,
    private readonly events: LockEvents,
    private readonly logger: RedlockLogger,
    /** Hears each lock that ends (released or lost), once. */
    private readonly onEnd: (lock: HeldLock) => void = () => undefined,
  ) {
    this.runtime = voters.runtime;
    this.clock = new WatchdogClock(voters.runtime);
    this.batchers = voters.list.map((voter) => new ExtendBatcher(voter));
    this.releasing = Object.freeze({ confirmed: options.confirmRelease });
  }

  /** Records a new held lock, with its watchdog when asked for. */
  grant(grant: Grant, watchdog: { maxHold: number } | undefined): HeldLock {
    const lock = new HeldLock(this, grant);
    this.held.add(lock);
    if (watchdog) lock.attachWatchdog(startWatchdog(lock, watchdog.maxHold, this.clock, this.runtime));
    return lock;
  }

  /**
   * LockOwner: extends `lock` on a majority, or marks it lost. With `retryWindowMs` (the
   * watchdog), a round that merely timed out is tried again at the next tick while the validity
   * outlasts another attempt.
   */
  async extend(lock: HeldLock, ttl: number | undefined, retryWindowMs?: number): Promise<void> {
    const lease = ttl ?? lock.ttl;
    this.checkLease(lease, ttl);
    const clockGuard = clockGuardFor(this.options.clockGuard, lease);
    if (!lock.active) {
      throw new LockLostError(
        lock.resources,
        lock.released ? 'it was already released' : 'it was lost earlier',
      );
    }
    const started = this.runtime.now();
    if (started >= lock.validUntil) throw lock.markLost('its validity ran out before it was extended');
    // The watchdog is not in a hurry: a reply within half a tick still extends in time, and
    // thousands of locks extended in one tick need more than one command's time-out.
    const { nodeTimeout } = this.options;
    const timeoutMs = retryWindowMs === undefined ? nodeTimeout : Math.max(nodeTimeout, retryWindowMs / 2);
    // Holds heal: the voters that answer they no longer hold it, also after the round's decision.
    const healing = this.options.healHolds ? new Healing(this, lock, lease) : undefined;
    const round = await this.voters.round(
      (_, index) => this.batchers[index]!.extend(lock.keys, lock.value, lease),
      // A voter that the clock guard excludes may have expired the lock early: it does not count.
      (outcome, index) =>
        wasExtended(outcome)
          ? this.voters.clockGuard.counts(index)
            ? 'yes'
            : { declined: 'excluded by the clock guard' }
          : 'no',
      {
        timeoutMs,
        // Before the reply is classified: a step seen first in an extension reply excludes the
        // voter from this extension already (the clock guard).
        observe: (index, outcome) => {
          if (outcome === undefined) return healing?.observe(index, outcome);
          const clockUs = clockOf(outcome);
          if (clockUs !== undefined)
            this.voters.clockGuard.noteClock(index, started, this.runtime.now(), clockUs);
          healing?.observe(index, outcome);
        },
      },
    );
    const now = this.runtime.now();
    const validity = lease - (now - started) - driftFor(this.options.driftFactor, lease) - clockGuard;
    if (!lock.active) throw new LockLostError(lock.resources, 'it was released or lost while being extended');
    // Inconclusive (time-outs, not refusals) with enough validity left to try again at the next tick.
    const refused = round.no.length > this.voters.list.length - this.voters.quorum;
    if (
      !round.ok &&
      retryWindowMs !== undefined &&
      !refused &&
      lock.validUntil - now > retryWindowMs + timeoutMs
    ) {
      return;
    }
    if (!round.ok || validity <= 0) {
      const why = round.ok
        ? 'the extension took longer than the lease'
        : `only ${round.yes.length} of ${this.voters.list.length} nodes still held it (need ${this.voters.quorum})` +
          (round.unavailable.length
            ? `; ${round.unavailable.map((f) => `${f.node}: ${f.reason}`).join('; ')}`
            : '');
      throw lock.markLost(why);
    }
    lock.setValidity(validity, now);
    if (this.events.observed) this.emit('extended', lock);
    await healing?.confirmed();
  }

  /**
   * Holds heal: right after an extension that a majority confirmed (so the lock is surely held,
   * with fresh validity), re-takes it on the voters that answered that they no longer hold it
   * (restarted empty, flushed, expired early, or never granted it): with the acquire script, so
   * a voter under the restart guard abstains and a key held by anyone else stays theirs, and for
   * the same lease. Then a voter whose fencing counter came out below the lock's token is raised
   * to it (the token does not change). The voters re-taken here did not count toward this
   * extension's majority; they count toward the next one, as voters that held the lock before it.
   * Nothing is sent once the validity has ended. Never throws: a voter that fails is tried again
   * at the next extension.
   */
  async heal(lock: HeldLock, lease: number, index: number): Promise<void> {
    if (!lock.active || this.runtime.now() >= lock.validUntil) return;
    const voter = this.voters.list[index]!;
    try {
      const sentAt = this.runtime.now();
      const reply = await settleWithin(
        this.runtime,
        voter.acquire(lock.keys, lock.value, lease, ''),
        this.options.nodeTimeout,
      );
      if (reply === TIMED_OUT) return;
      if (reply.kind === 'abstaining') {
        this.voters.abstentions.noteVote(index, reply);
        return;
      }
      if (reply.kind !== 'granted') return;
      // Under the clock guard the grant carries the voter's clock: a voter whose clock stepped is
      // excluded (and counts toward no later extension) though it holds the key.
      if (reply.clockUs !== undefined)
        this.voters.clockGuard.noteClock(index, sentAt, this.runtime.now(), reply.clockUs);
      if (!lock.active) {
        // Released or lost meanwhile: the release went out before this grant; free it.
        void this.voters.letGo(lock.keys, lock.value, RELEASE, { on: [voter] });
        return;
      }
      if (reply.tokens.some((token, i) => token < lock.tokens[i]!)) {
        await settleWithin(
          this.runtime,
          voter.raiseFence(lock.keys, lock.value, lock.tokens),
          this.options.nodeTimeout,
        );
      }
      if (this.events.observed) this.emit('healed', lock, undefined, voter.label);
    } catch {
      // Unreachable now: the next extension tries again.
    }
  }

  /**
   * LockOwner: releases `lock` on every voter. Never throws: keys a voter missed expire with their
   * lease. A lock released sooner than its `holdAtLeast` after the grant is left to expire then
   * instead (its keys' lease is set to the rest of that time), so that a short scheduled job is
   * not run again by an instance whose clock is a little late.
   */
  async release(lock: HeldLock): Promise<void> {
    if (!lock.markReleased()) return;
    this.forget(lock);
    if (this.events.observed) this.emit('released', lock);
    const keepMs = lock.grantedAt + lock.holdAtLeast - this.runtime.now();
    if (keepMs >= 1) {
      await this.voters.round(
        (_, index) => this.batchers[index]!.extend(lock.keys, lock.value, keepMs),
        () => 'yes',
      );
      return;
    }
    await this.voters.letGo(lock.keys, lock.value, RELEASE, this.releasing);
  }

  /** LockOwner: forgets a lost lock and frees what is left of it. */
  lost(lock: HeldLock, reason: string): void {
    this.forget(lock);
    if (this.events.observed) this.emit('lost', lock, reason);
    void this.voters.letGo(lock.keys, lock.value, RELEASE);
  }

  /**
   * Shutdown: tells every holder to stop (each lock's signal aborts with `reason`) and waits until
   * they released their locks, at most `timeoutMs`; the locks stay held meanwhile, their watchdogs
   * extending them. Then releases what is still held, each logged once with its holder: its work
   * still runs, and another instance may now take the lock. (A lock released before its
   * holdAtLeast is left to expire then, as always.)
   */
  async drain(reason: Error, timeoutMs: number): Promise<void> {
    for (const lock of this.held) lock.askToStop(reason);
    if (this.held.size > 0) {
      const empty = new Promise<void>((resolve) => (this.onEmpty = resolve));
      await settleWithin(this.runtime, empty, timeoutMs);
      this.onEmpty = undefined;
    }
    await Promise.all(
      [...this.held].map((lock) => {
        const holder = lock.holder === undefined ? '' : ` (held by ${lock.holder})`;
        this.logger.warn(
          `Shutdown released the lock on ${lock.resources.map((r) => JSON.stringify(r)).join(', ')}${holder} ` +
            `while its work still ran: drainTimeout ${timeoutMs} ms ran out. Another instance may take it now; ` +
            'stop the work when its signal aborts, or raise drainTimeout.',
        );
        return lock.release();
      }),
    );
  }

  private forget(lock: HeldLock): void {
    this.held.delete(lock);
    this.onEnd(lock);
    if (this.held.size === 0) this.onEmpty?.();
  }

  private emit(
    type: 'extended' | 'released' | 'lost' | 'healed',
    lock: HeldLock,
    reason?: string,
    node?: string,
  ): void {
    const event: LockEvent = {
      type,
      resources: lock.resources,
      fencingToken: lock.fencingToken,
      ...(type === 'extended' || type === 'healed'
        ? {}
        : { durationMs: this.runtime.now() - lock.grantedAt }),
      ...(reason === undefined ? {} : { reason }),
      ...(node === undefined ? {} : { node }),
    };
    this.events.emit(event);
  }

  private checkLease(lease: number, asked: number | undefined): void {
    if (!(lease > 0) || !Number.isFinite(lease)) {
      throw new RedlockOptionsError(
        'ttl',
        `got ${String(asked)}`,
        'Use a finite number of milliseconds above 0.',
      );
    }
    const guard = this.options.restartGuard;
    if (guard !== false && lease > guard) {
      throw new RedlockOptionsError('ttl', `${lease} ms exceeds restartGuard ${guard} ms`, 'Extend by less.');
    }
  }
}

/**
 * The voters of one extension that answered they no longer hold the lock: re-taken (Leases.heal)
 * once the extension succeeded, also those that answer after the round's decision.
 */
class Healing {
  private readonly lost: number[] = [];
  private done = false;
  private readonly pending: Array<Promise<void>> = [];

  constructor(
    private readonly leases: Leases,
    private readonly lock: HeldLock,
    private readonly lease: number,
  ) {}

  readonly observe = (index: number, outcome: ExtendOutcome | undefined): void => {
    if (outcome === undefined || wasExtended(outcome)) return;
    if (this.done) this.pending.push(this.leases.heal(this.lock, this.lease, index));
    else this.lost.push(index);
  };

  /** The extension succeeded: re-take where it was lost; resolves once those known so far are done. */
  confirmed(): Promise<unknown> {
    this.done = true;
    for (const index of this.lost) this.pending.push(this.leases.heal(this.lock, this.lease, index));
    return Promise.all(this.pending);
  }
}
