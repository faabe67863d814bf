import type { Observable } from 'rxjs';
import { EngineClosedError, LockNotAcquiredError } from '../errors.js';
import { LockEvents, type LockEvent } from '../events.js';
import { consoleLogger, type RedlockLogger } from '../logger.js';
import type { LockOptions, RedlockOptions, ResolvedOptions } from '../options.js';
import { Preflight } from '../preflight.js';
import { probeVoters, voterStatuses, type NodeStatus } from '../quorum/health.js';
import type { LockInspection } from '../quorum/inspect.js';
import { normaliseResources, resolveLockOptions, resolveOptions } from '../resolve-options.js';
import { realRuntime, type Runtime } from '../runtime.js';
import { lockKeyOf } from '../scripts/keys.js';
import { assertOneSlot } from '../transport/pick.js';
import type { Voter } from '../voter/voter-api.js';
import { Acquirer, type AcquireRequest } from './acquire.js';
import { acquireFailure, emitOutcome } from './acquire-outcome.js';
import { SemaphoreUses } from './key-uses.js';
import { Leases } from './leases.js';
import { Lifecycle, type InFlight } from './lifecycle.js';
import { JoinedLock, type Lock } from './lock.js';
import { LockContext } from './held-lock.js';
import { buildEngineParts, type EngineParts } from './parts.js';
import { slotRequest } from './semaphore-request.js';
import { SharedAcquirer } from './shared-acquire.js';
import { inspectLock, withSubscriptions } from './status-and-inspect.js';
import { retrySplit, waitForLock, type WaitExhausted } from './wait.js';
import { WakeChannel } from './wake-channel.js';

/**
 * The Redlock engine: a mutex over N independent voters (Redis masters) with quorum fencing
 * tokens. Framework-free; `LockService` is its NestJS face.
 *
 * Where to read what: one attempt (round, validity, fencing, cleanup) is in acquire.ts; waiting
 * for a busy lock in wait.ts and hand-over.ts; a held lock's extension, watchdog and release in
 * leases.ts, watchdog.ts, extend-batcher.ts; connect and close in lifecycle.ts; the voters as one
 * (quorum, health, restart-guard abstentions) in quorum/; one voter in voter/, over a transport
 * (one folder per client in transport/); the Lua and its replies in scripts/.
 */
export class Redlock {
  readonly options: ResolvedOptions;
  private readonly parts: EngineParts;
  private readonly acquirer: Acquirer;
  /** Semaphores' and readers' acquires (shared-acquire.ts). */
  private readonly shared: SharedAcquirer;
  /** The keys this engine uses as semaphores or read-write locks (key-uses.ts). */
  private readonly semaphores = new SemaphoreUses();
  private readonly leases: Leases;
  private readonly wakes: WakeChannel;
  private readonly context = new LockContext();
  private readonly events = new LockEvents();
  private readonly logger: RedlockLogger;
  private readonly runtime: Runtime;
  /** Connecting and the shutdown (lifecycle.ts). */
  private readonly lifecycle: Lifecycle;
  /** The acquires in flight, which the shutdown rejects and waits for. */
  private readonly inFlight: InFlight = { callers: new Set(), attempting: 0, onIdle: undefined };

  /**
   * Every lock event (acquired, busy, unavailable, extended, released, lost) and node event
   * (node-down, node-up, node-abstaining) of this engine. Nothing is built while nobody subscribes.
   */
  readonly events$: Observable<LockEvent> = this.events.events$;

  constructor(options: RedlockOptions) {
    const resolved = resolveOptions(options);
    const logger = options.logger ?? consoleLogger;
    this.logger = logger;
    const preflight = resolved.preflight === 'off' ? undefined : new Preflight(resolved.preflight, logger);
    this.options = resolved;
    this.runtime = options.runtime ?? realRuntime;
    this.parts = buildEngineParts(options.nodes, resolved, logger, this.events, preflight, this.runtime);
    const { voters, turnMs } = this.parts;
    this.leases = new Leases(voters, resolved, this.events, logger, (lock) => {
      if (lock.mode === 'read' || lock.permit !== undefined) this.semaphores.end(lock.resources[0]!);
    });
    this.acquirer = new Acquirer(this.parts, this.leases);
    this.wakes = new WakeChannel(voters, this.parts.values.channel, resolved.nodeTimeout, turnMs, logger);
    const { parts, acquirer, leases, wakes, events } = this;
    this.lifecycle = new Lifecycle(parts, preflight, options.telemetry, events, leases, wakes, this.inFlight);
    const { signal } = this.lifecycle;
    this.shared = new SharedAcquirer(parts, acquirer, leases, wakes, this.semaphores, this.failure, signal);
  }

  /** The voters, in the order of `nodes` (health, instrumentation, tests). */
  get voters(): readonly Voter[] {
    return this.parts.voters.list;
  }

  /** Votes a lock needs: a strict majority of the nodes. */
  get quorum(): number {
    return this.parts.voters.quorum;
  }

  /**
   * Waits until every node is connected and checked (preflight), at most `connectTimeout` ms, and
   * logs the nodes that are not. Resolves with each node's status: a minority may well be down.
   * @throws NodeConfigurationError under `preflight: 'error'` when a node that answered breaks
   * Redlock's assumptions (one error naming every node, problem and fix); QuorumUnavailableError
   * under `failWithoutQuorum: true` when fewer than a quorum connected (every node that did not,
   * and why). The engine is closed first, so that a failed bootstrap leaves no connection open.
   */
  connect(): Promise<NodeStatus[]> {
    return this.lifecycle.connect(() => this.close());
  }

  /**
   * Checks per-call options against this engine's settings exactly as an acquire would (a ttl
   * above `restartGuard`, a negative `wait`, ...) without taking a lock: for bootstrap-time checks
   * of options written in code (the NestJS layer checks every `@DistributedLock` this way).
   * @throws RedlockOptionsError naming the option and the fix.
   */
  checkLockOptions(options: LockOptions): void {
    resolveLockOptions(this.options, options, false);
  }

  /** Each node's reachability from its connection's state (no I/O), and its wake-up subscription. */
  status(): NodeStatus[] {
    return withSubscriptions(voterStatuses(this.parts.voters), this.wakes);
  }

  /** Asks each node (PING, bounded by nodeTimeout): a hung node shows as unreachable; others report latency. */
  async probe(): Promise<NodeStatus[]> {
    return withSubscriptions(await probeVoters(this.parts.voters), this.wakes);
  }

  /**
   * Acquires a lock on one or more resources, waiting up to `wait` ms while it is busy. No
   * watchdog unless `options.watchdog` is true: extend or release it yourself.
   * @throws LockNotAcquiredError (busy), QuorumUnavailableError (too few nodes), or the signal's
   * reason when `options.signal` aborts.
   */
  acquire(resources: string | readonly string[], options?: LockOptions): Promise<Lock> {
    return this.take(resources, options, false);
  }

  /**
   * Makes ONE attempt (it waits only when `options.wait` is given; a vote split with acquirers that
   * came at the same moment is tried again) and resolves `null` instead of throwing when the lock is busy.
   * @throws QuorumUnavailableError when too few nodes answer.
   */
  async tryAcquire(resources: string | readonly string[], options?: LockOptions): Promise<Lock | null> {
    try {
      return await this.take(resources, { ...options, wait: options?.wait ?? 0 }, false);
    } catch (err) {
      if (err instanceof LockNotAcquiredError) return null;
      throw err;
    }
  }

  /**
   * Runs `fn` while holding the lock (auto-extended by the watchdog unless `watchdog: false`), and
   * releases it afterwards, also when `fn` throws. Inside `fn`, nested acquisitions of the same
   * resources join this lock.
   */
  async using<T>(
    resources: string | readonly string[],
    fn: (lock: Lock) => Promise<T> | T,
    options?: LockOptions,
  ): Promise<T> {
    const lock = await this.take(resources, options, true);
    try {
      return await this.context.run(lock, () => fn(lock));
    } finally {
      await lock.release();
    }
  }

  /**
   * What a majority of the nodes says of `resource`'s lock, read-only: whether it is held, when
   * it frees, and the last fencing token issued for it. For a semaphore, also its permits, holders,
   * free permits and each slot's view (`semaphore`); for a read-write lock, `mode` ('read' while
   * readers hold it) and `readers` (how many hold it on a majority).
   * @throws QuorumUnavailableError when fewer than a majority answer.
   */
  inspect(resource: string): Promise<LockInspection> {
    return inspectLock(this.parts, this.semaphores, resource);
  }

  /**
   * Shuts the engine down, in order: new acquires, and those in flight or waiting, reject with
   * EngineClosedError (waiters leave the queues on the nodes; a grant that lands now is released at
   * once); every held lock's signal aborts with it, while the locks stay held and extended until
   * their work ends (`using`: when its callback settles; a bare acquire: at its `release()`), at
   * most `drainTimeout`; then what is still held is released (logged), the let-gos are flushed, and
   * the connections this engine opened close (never clients passed in). Locks kept by
   * `holdAtLeast` are left to expire. Idempotent: every call resolves when it is done.
   */
  close(): Promise<void> {
    return this.lifecycle.close();
  }

  /** Acquire, with the watchdog on by default for `using`, off for a bare acquire; emits its outcome. */
  private take(
    resources: string | readonly string[],
    options: LockOptions | undefined,
    watchdogByDefault: boolean,
  ): Promise<Lock> {
    if (!this.events.observed)
      return this.untilShutdown(this.takeQuietly(resources, options, watchdogByDefault));
    return emitOutcome(this.events, this.runtime, () =>
      this.untilShutdown(this.takeQuietly(resources, options, watchdogByDefault)),
    );
  }

  /**
   * The lock `taking` resolves with, unless shutdown begins first: then the caller is rejected at
   * once with EngineClosedError, and the lock, when it comes, is released.
   */
  private untilShutdown(taking: Promise<Lock>): Promise<Lock> {
    this.inFlight.attempting++;
    return new Promise<Lock>((resolve, reject) => {
      this.inFlight.callers.add(reject);
      taking.then(
        (lock) => {
          this.attemptEnded();
          if (this.inFlight.callers.delete(reject)) resolve(lock);
          else void lock.release();
        },
        (err: unknown) => {
          this.attemptEnded();
          if (this.inFlight.callers.delete(reject)) reject(err);
        },
      );
    });
  }

  private attemptEnded(): void {
    if (--this.inFlight.attempting === 0) this.inFlight.onIdle?.();
  }

  /**
   * Not an async function: one acquire already passes through the waiting loop and the attempt,
   * each a promise of its own, and this runs on every lock. Bad input still rejects, not throws.
   */
  private takeQuietly(
    resources: string | readonly string[],
    options: LockOptions | undefined,
    watchdogByDefault: boolean,
  ): Promise<Lock> {
    let request: AcquireRequest | JoinedLock;
    try {
      request = this.prepare(resources, options, watchdogByDefault);
    } catch (err) {
      return Promise.reject(err);
    }
    if (request instanceof JoinedLock) return Promise.resolve(request);
    if (request.semaphore || request.opts.mode === 'read') return this.shared.take(request);
    if (request.opts.wait > 0)
      return waitForLock(this.parts, this.acquirer, this.wakes, request, this.failure, this.lifecycle.signal);
    const several = request.names.length > 1;
    return this.acquirer.attempt(request, this.parts.values.next(several)).then((first) => {
      if (first.outcome === 'granted') return first.lock;
      // Each retry with a value of its own (off the hot path: built after a failed attempt only).
      const again = () => this.acquirer.attempt(request, this.parts.values.next(several));
      return retrySplit(this.parts, again, request, first, this.failure, this.lifecycle.signal);
    });
  }

  /** The request of an acquire, or the enclosing holder's lock that a nested acquire joins. */
  private prepare(
    resources: string | readonly string[],
    options: LockOptions | undefined,
    watchdogByDefault: boolean,
  ): AcquireRequest | JoinedLock {
    const names = normaliseResources(resources);
    const opts = resolveLockOptions(this.options, options, watchdogByDefault);
    if (opts.permits > 1 || opts.mode === 'read' || this.semaphores.any)
      this.semaphores.check(names, opts.permits, opts.mode);
    // Work that runs through the drain still joins the locks it holds; nothing new is granted.
    const joined = this.context.join(names, opts.mode);
    if (joined) return joined;
    if (this.lifecycle.closing) throw new EngineClosedError();
    this.parts.clocks.guardLocksOf(opts.clockGuard);
    if (opts.permits > 1) return slotRequest(this.parts, names, opts);
    const sorted = names.length === 1 ? names : [...names].sort();
    const startedAt = this.runtime.now();
    const request: AcquireRequest = {
      names,
      sorted,
      lockKeys: sorted.map((r) => lockKeyOf(this.options.keyPrefix, r)),
      ticket: opts.wait > 0 ? this.parts.clocks.ticket(startedAt) : '',
      startedAt,
      opts,
    };
    // A Redis Cluster voter takes a lock's keys in one script: they must share a slot.
    if (sorted.length > 1) assertOneSlot(this.parts.voters.list, sorted, request.lockKeys);
    opts.signal?.throwIfAborted();
    return request;
  }

  /** The error for an acquire that did not get the lock (built once: waitForLock calls it too). */
  private readonly failure: WaitExhausted = (attempt, attempts, request) =>
    acquireFailure(this.parts.voters, attempt, attempts, request);
}
