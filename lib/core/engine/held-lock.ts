import { AsyncLocalStorage } from 'node:async_hooks';
import { LockLostError, LockUpgradeError, RedlockError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { JoinedLock, tokenRecord, type Lock } from './lock.js';

/** The abort reason of a released lock's signal (one shared instance: release is the hot path). */
const RELEASED = new DOMException('The lock was released', 'AbortError');

/** What a held lock needs from the engine that granted it. */
export interface LockOwner {
  readonly runtime: Runtime;
  /** With `retryWindowMs`, a time-out with that much validity left is retried later, not fatal. */
  extend(lock: HeldLock, ttl: number | undefined, retryWindowMs?: number): Promise<void>;
  release(lock: HeldLock): Promise<void>;
  /** Called once when the lock is lost, to forget it and free what is left of it on the nodes. */
  lost(lock: HeldLock, reason: string): void;
}

/** What a grant consists of (see {@link HeldLock}). */
export interface Grant {
  readonly value: string;
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  /** The resources in sorted order (the order of `keys`), and their fencing tokens in that order. */
  readonly sortedResources: readonly string[];
  readonly tokens: readonly number[];
  readonly ttl: number;
  readonly holdAtLeast: number;
  /** Validity left at `now`, ms (drift already subtracted). */
  readonly validityMs: number;
  /** The semaphore slot (semaphore.ts); absent for a plain lock. */
  readonly permit?: number;
  /** 'read' for a read-write lock's reader (its value ends with READ_MARK); default 'write'. */
  readonly mode?: 'write' | 'read';
  /** Who holds it, for log lines (LockOptions.holder). */
  readonly holder?: string;
  /** performance.now() when the validity was computed. */
  readonly now: number;
}

/** The engine's {@link Lock}: the value, keys and validity of one grant, and its lifecycle. */
export class HeldLock implements Lock {
  readonly fencingToken: number;
  /** Created on first use of `signal`: most holders never read it, and it costs per grant. */
  private controller: AbortController | undefined;
  /** Why the signal aborted (or will, when first read): the end's reason, or shutdown's before it. */
  private endReason: unknown;
  private state: 'held' | 'released' | 'lost' = 'held';
  private cancelExpiry: (() => void) | undefined;
  private deadline = 0;
  private wallDeadline = 0;
  private watchdog: (() => void) | undefined;
  /** Set when the watchdog stopped because `maxHold` was reached, to explain the loss. */
  maxHoldReached = false;

  /** The random value that identifies this holder in every lock key. */
  readonly value: string;
  readonly resources: readonly string[];
  /** Lock keys in sorted resource order, as the scripts receive them. */
  readonly keys: readonly string[];
  private readonly sortedResources: readonly string[];
  /** The fencing tokens in the order of `keys` (what a healed voter's counters are raised to). */
  readonly tokens: readonly number[];
  /** Built on first read: see {@link fencingTokens}. */
  private tokensByResource: Readonly<Record<string, number>> | undefined;
  /** Lease in ms the watchdog extends to. */
  readonly ttl: number;
  /** A release earlier than this many ms after the grant leaves the keys to expire then instead. */
  readonly holdAtLeast: number;
  /** Monotonic time (performance.now) of the grant. */
  readonly grantedAt: number;
  /** The semaphore slot held; undefined for a plain lock. */
  readonly permit: number | undefined;
  readonly mode: 'write' | 'read';
  /** Who holds it, for log lines; undefined when not said. */
  readonly holder: string | undefined;

  constructor(
    private readonly owner: LockOwner,
    grant: Grant,
  ) {
    this.value = grant.value;
    this.resources = grant.resources;
    this.keys = grant.keys;
    this.sortedResources = grant.sortedResources;
    this.tokens = grant.tokens;
    this.ttl = grant.ttl;
    this.holdAtLeast = grant.holdAtLeast;
    this.grantedAt = grant.now;
    this.permit = grant.permit;
    this.mode = grant.mode ?? 'write';
    this.holder = grant.holder;
    this.fencingToken =
      grant.tokens.length === 1
        ? grant.tokens[0]!
        : grant.tokens[grant.sortedResources.indexOf(grant.resources[0]!)]!;
    this.setValidity(grant.validityMs, grant.now);
  }

  get expiresAt(): number {
    return this.wallDeadline;
  }

  /**
   * Built on first read, not per grant: a record keyed by resource names gives V8 a new hidden
   * class and an internalised string for every resource never seen before, and per-entity locks
   * (`order:{id}`) are mostly such resources. Most holders read only `fencingToken`.
   */
  get fencingTokens(): Readonly<Record<string, number>> {
    return (this.tokensByResource ??= tokenRecord(this.sortedResources, this.tokens));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.endReason !== undefined) this.controller.abort(this.endReason);
    }
    return this.controller.signal;
  }

  /**
   * Tells the holder to stop (shutdown began): the signal aborts with `reason` while the lock
   * stays held, and extended by its watchdog, until it is released.
   */
  askToStop(reason: Error): void {
    if (this.state !== 'held' || this.endReason !== undefined) return;
    this.endReason = reason;
    this.controller?.abort(reason);
  }

  /** True until released or lost. */
  get active(): boolean {
    return this.state === 'held';
  }

  /** Monotonic time (performance.now) at which validity ends. */
  get validUntil(): number {
    return this.deadline;
  }

  extend(ttl?: number): Promise<void> {
    return this.owner.extend(this, ttl);
  }

  /**
   * The watchdog's extension: nodes that merely did not answer in time (a stalled event loop, a
   * busy node) are tried again at the next tick while the validity outlasts `retryWindowMs`.
   */
  extendFromWatchdog(ttl: number, retryWindowMs: number): Promise<void> {
    return this.owner.extend(this, ttl, retryWindowMs);
  }

  release(): Promise<void> {
    return this.owner.release(this);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Records a new validity window; arms the timer that declares the lock lost when it ends. */
  setValidity(validityMs: number, now: number): void {
    this.deadline = now + validityMs;
    this.wallDeadline = this.owner.runtime.wallNow() + validityMs;
    this.cancelExpiry?.();
    this.cancelExpiry = this.owner.runtime.setTimeout(
      () =>
        this.markLost(
          this.maxHoldReached
            ? 'it was held for longer than maxHold, so the watchdog stopped extending it'
            : 'its validity ran out before it was extended',
        ),
      validityMs,
    );
  }

  /** Attaches the watchdog that extends this lock (its stop function); it ends with the lock. */
  attachWatchdog(stop: () => void): void {
    if (this.active) this.watchdog = stop;
    else stop();
  }

  /** Ends the lock as lost: aborts the signal at once with a LockLostError. */
  markLost(reason: string): LockLostError {
    const error = new LockLostError(this.resources, reason);
    if (this.state !== 'held') return error;
    this.state = 'lost';
    this.end(error);
    this.owner.lost(this, reason);
    return error;
  }

  /** Ends the lock as released. Returns false if it had already ended. */
  markReleased(): boolean {
    if (this.state !== 'held') return false;
    this.state = 'released';
    this.end(RELEASED);
    return true;
  }

  /** Stops the expiry timer and the watchdog; a signal already aborted (asked to stop) keeps that reason. */
  private end(reason: unknown): void {
    this.cancelExpiry?.();
    this.cancelExpiry = undefined;
    this.watchdog?.();
    this.watchdog = undefined;
    this.endReason ??= reason;
    this.controller?.abort(reason);
  }

  /** Whether it ended by release (as opposed to loss). */
  get released(): boolean {
    return this.state === 'released';
  }
}

/**
 * One storage for every engine, each context's locks under its own entry: Node keeps every storage
 * that ever ran in a process-wide list, walked at each promise created anywhere, so a storage per
 * engine would stay there (and slow every promise) after the engine is gone.
 */
const storage = new AsyncLocalStorage<ReadonlyMap<LockContext, ReadonlyMap<string, Lock>>>();

/**
 * Locks held by the current async call chain, so that a nested acquisition of a resource that is
 * already held joins it instead of waiting for itself (a deadlock until the ttl runs out).
 */
export class LockContext {
  /**
   * The held lock covering all `resources` in this call chain, as a joined view; undefined when
   * none of them is held. A read (`mode`) joins a held read or write; a write joins a held write,
   * and inside a held read it is a LockUpgradeError. Throws when only some are held: acquiring the
   * rest inside would order locks differently from other callers and can deadlock.
   */
  join(resources: readonly string[], mode: 'write' | 'read' = 'write'): JoinedLock | undefined {
    const held = storage.getStore()?.get(this);
    if (!held) return undefined;
    const owners = resources.map((r) => held.get(r));
    if (owners.every((o) => o === undefined)) return undefined;
    const first = owners[0];
    if (first && owners.every((o) => o === first)) {
      // A read joins a held write or read; a write inside a held read would wait for itself.
      if (mode === 'write' && first.mode === 'read') throw new LockUpgradeError(resources[0]!);
      return new JoinedLock(first, resources);
    }
    throw new RedlockError(
      `Cannot lock ${resources.join(', ')} inside a call that holds only some of them ` +
        `(${resources.filter((_, i) => owners[i]).join(', ')}). Lock all of them in the outer call.`,
    );
  }

  /** Runs `fn` with `lock` recorded as held for its async call chain. */
  run<T>(lock: Lock, fn: () => T): T {
    const contexts = storage.getStore();
    const held = new Map(contexts?.get(this) ?? []);
    for (const r of lock.resources) held.set(r, lock);
    return storage.run(new Map(contexts ?? []).set(this, held), fn);
  }
}
