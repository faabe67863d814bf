import { setMaxListeners } from 'node:events';
import type { Observable } from 'rxjs';
import {
  EngineClosedError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  type RedlockError,
} from '../errors.js';
import { LockEvents, type LockEvent } from '../events.js';
import { consoleLogger, type RedlockLogger } from '../logger.js';
import type { LockOptions, RedlockOptions, ResolvedOptions } from '../options.js';
import { Preflight } from '../preflight.js';
import { inspectKey, inspectReaders, inspectSemaphore, type LockInspection } from '../quorum/inspect.js';
import type { NodeStatus } from '../quorum/voters.js';
import { normaliseResources, resolveLockOptions, resolveOptions } from '../resolve-options.js';
import { realRuntime, type Runtime } from '../runtime.js';
import { PERMITS_MARK, READ_MARKER } from '../scripts/keys.js';
import { attachTelemetry } from '../telemetry.js';
import { assertOneSlot } from '../transport/pick.js';
import type { Voter } from '../voter/voter-api.js';
import { Acquirer, type AcquireRequest, type Attempt } from './acquire.js';
import { bootstrap } from './bootstrap.js';
import { Leases } from './leases.js';
import { SemaphoreUses } from './key-uses.js';
import { JoinedLock, type Lock } from './lock.js';
import { LockContext } from './lock-context.js';
import { buildEngineParts, type EngineParts } from './parts.js';
import { SlotAcquirer } from './semaphore.js';
import { slotKeys, slotRequest, type SemaphoreRequest } from './semaphore-request.js';
import { waitForLock } from './wait.js';
import { WakeChannel } from './wake-channel.js';

/** A semaphore's acquire request (its `semaphore` set). */
type SemaphoreAcquireRequest = AcquireRequest & { semaphore: SemaphoreRequest };

/**
 * The Redlock engine: a mutex over N independent voters (Redis masters) with quorum fencing
 * tokens. Framework-free; `LockService` is its NestJS face.
 *
 * Where to read what: one attempt (round, validity, fencing, cleanup) is in acquire.ts; waiting
 * for a busy lock, the queues and hand-overs in queue/; a held lock's extension, watchdog and
 * release in lease/; the voters as one (quorum, health, restart-guard abstentions) in quorum/;
 * one voter in voter/ (one folder per client); the Lua and its replies in scripts/.
 */
export class Redlock {
  readonly options: ResolvedOptions;
  private readonly parts: EngineParts;
  private readonly acquirer: Acquirer;
  private readonly slots: SlotAcquirer;
  /** The keys this engine uses as semaphores or read-write locks (see semaphore-uses.ts). */
  private readonly semaphores = new SemaphoreUses();
  private readonly leases: Leases;
  private readonly wakes: WakeChannel;
  private readonly context = new LockContext();
  private readonly events = new LockEvents();
  /** Undefined when preflight is off. */
  private readonly preflight: Preflight | undefined;
  private detachTelemetry: Promise<(() => void) | undefined> | undefined;
  private readonly telemetry: RedlockOptions['telemetry'];
  private readonly logger: RedlockLogger;
  private readonly runtime: Runtime;
  /** Aborts with EngineClosedError when shutdown begins: waiting acquires end on it. */
  private readonly shutdown = new AbortController();
  /** The shutdown in progress or done (see {@link close}). */
  private closing: Promise<void> | undefined;
  /**
   * The callers of acquires in flight, by the function that rejects them: shutdown rejects them at
   * once, and a grant that lands for one of them afterwards is released.
   */
  private readonly acquiring = new Set<(err: Error) => void>();
  /** Acquires whose attempts still run (also those rejected by shutdown), and who waits for none. */
  private attempting = 0;
  private onIdle: (() => void) | undefined;

  /**
   * Every lock event (acquired, busy, unavailable, extended, released, lost) and node event
   * (node-down, node-up, node-abstaining) of this engine. Nothing is built while nobody subscribes.
   */
  readonly events$: Observable<LockEvent> = this.events.events$;

  constructor(options: RedlockOptions) {
    const resolved = resolveOptions(options);
    const logger = options.logger ?? consoleLogger;
    this.logger = logger;
    this.telemetry = options.telemetry;
    this.preflight = resolved.preflight === 'off' ? undefined : new Preflight(resolved.preflight, logger);
    this.options = resolved;
    this.runtime = options.runtime ?? realRuntime;
    this.parts = buildEngineParts(options.nodes, resolved, logger, this.events, this.preflight, this.runtime);
    const { voters, turnMs } = this.parts;
    this.leases = new Leases(voters, resolved, this.parts.drift, this.events, logger, (lock) => {
      if (lock.mode === 'read' || lock.permit !== undefined) this.semaphores.end(lock.resources[0]!);
    });
    this.acquirer = new Acquirer(this.parts, this.leases);
    this.slots = new SlotAcquirer(this.parts, this.acquirer, this.leases);
    this.wakes = new WakeChannel(voters, this.parts.values.channel, resolved.nodeTimeout, turnMs, logger);
    // Every waiting acquire listens for shutdown on it: more than Node's 10 is load, not a leak
    // (Node would print a MaxListenersExceededWarning at the 11th waiter).
    setMaxListeners(Infinity, this.shutdown.signal);
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
  async connect(): Promise<NodeStatus[]> {
    // OpenTelemetry providers are registered before the app boots: look for them now.
    this.detachTelemetry ??= attachTelemetry(this.events, this.parts.runtime, this.telemetry);
    await this.detachTelemetry;
    return bootstrap(this.parts, this.preflight, () => this.close());
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
    return this.withSubscriptions(this.parts.voters.status());
  }

  /** Asks each node (PING, bounded by nodeTimeout): a hung node shows as unreachable; others report latency. */
  async probe(): Promise<NodeStatus[]> {
    return this.withSubscriptions(await this.parts.voters.probe());
  }

  private withSubscriptions(statuses: NodeStatus[]): NodeStatus[] {
    return statuses.map((status, i) => {
      const subscriptionError = this.wakes.subscriptionError(i);
      return subscriptionError === undefined ? status : { ...status, subscriptionError };
    });
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
   * Makes ONE attempt (it waits only when `options.wait` is given) and resolves `null` instead of
   * throwing when the lock is busy.
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
  async inspect(resource: string): Promise<LockInspection> {
    const [name] = normaliseResources(resource); // a bad name rejects, as every other failure does
    const { voters } = this.parts;
    const { nodeTimeout } = this.options;
    const lockKey = this.parts.lockKey(name!);
    // A semaphore (this engine used it, or its marker holds the key): its slots' views.
    const known = this.semaphores.permitsOf(name!);
    if (known) return inspectSemaphore(voters, name!, slotKeys(lockKey, known), nodeTimeout);
    const { inspection, holder } = await inspectKey(voters, name!, lockKey, nodeTimeout);
    if (holder === READ_MARKER) return inspectReaders(voters, lockKey, inspection, nodeTimeout);
    if (!holder?.startsWith(PERMITS_MARK)) return inspection;
    const permits = Number(holder.slice(PERMITS_MARK.length));
    return inspectSemaphore(voters, name!, slotKeys(lockKey, permits), nodeTimeout);
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
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const reason = new EngineClosedError();
    this.shutdown.abort(reason);
    for (const reject of this.acquiring) reject(reason);
    this.acquiring.clear();
    await this.leases.drain(reason, this.options.drainTimeout);
    // Attempts still running end within their round (waiters at once): their grants are released.
    if (this.attempting > 0) await new Promise<void>((resolve) => (this.onIdle = resolve));
    this.wakes.close();
    await this.parts.voters.close();
    (await this.detachTelemetry)?.();
    this.events.complete();
  }

  /** Acquire, with the watchdog on by default for `using`, off for a bare acquire; emits its outcome. */
  private take(
    resources: string | readonly string[],
    options: LockOptions | undefined,
    watchdogByDefault: boolean,
  ): Promise<Lock> {
    if (!this.events.observed)
      return this.untilShutdown(this.takeQuietly(resources, options, watchdogByDefault));
    const started = this.runtime.now();
    return this.untilShutdown(this.takeQuietly(resources, options, watchdogByDefault)).then(
      (lock) => {
        if (lock instanceof JoinedLock) return lock; // the enclosing holder's grant was counted
        const durationMs = this.runtime.now() - started;
        this.events.emit({
          type: 'acquired',
          resources: lock.resources,
          fencingToken: lock.fencingToken,
          durationMs,
        });
        return lock;
      },
      (err: unknown) => {
        const type =
          err instanceof LockNotAcquiredError
            ? 'busy'
            : err instanceof QuorumUnavailableError
              ? 'unavailable'
              : undefined;
        if (type) {
          const durationMs = this.runtime.now() - started;
          this.events.emit({ type, resources: (err as LockNotAcquiredError).resources, durationMs });
        }
        throw err;
      },
    );
  }

  /**
   * The lock `taking` resolves with, unless shutdown begins first: then the caller is rejected at
   * once with EngineClosedError, and the lock, when it comes, is released.
   */
  private untilShutdown(taking: Promise<Lock>): Promise<Lock> {
    this.attempting++;
    return new Promise<Lock>((resolve, reject) => {
      this.acquiring.add(reject);
      taking.then(
        (lock) => {
          this.attemptEnded();
          if (this.acquiring.delete(reject)) resolve(lock);
          else void lock.release();
        },
        (err: unknown) => {
          this.attemptEnded();
          if (this.acquiring.delete(reject)) reject(err);
        },
      );
    });
  }

  private attemptEnded(): void {
    if (--this.attempting === 0) this.onIdle?.();
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
    if (request.semaphore || request.opts.mode === 'read') {
      // Known as such while this acquire runs and its lock is held (the lock's end: Leases' onEnd).
      const [name] = request.names;
      this.semaphores.begin(name!, request.opts.permits, request.opts.mode);
      return this.takeOther(request).catch((err: unknown) => {
        this.semaphores.end(name!);
        throw err;
      });
    }
    if (request.opts.wait > 0)
      return waitForLock(this.parts, this.acquirer, this.wakes, request, this.failure, this.shutdown.signal);
    const value = this.parts.values.next(request.names.length > 1);
    return this.acquirer.attempt(request, value).then((attempt) => {
      if (attempt.outcome === 'granted') return attempt.lock;
      throw this.failure(attempt, 1, request);
    });
  }

  /**
   * An acquire whose attempts are not the plain one: a semaphore's slot search (semaphore.ts), or a
   * reader's (the plain attempt with a reader's value: the voters run the readers' semantics for
   * it, scripts/read.ts). Their waiters are given turns, as waiters for several resources are: a
   * release lets the first waiter, or every reader at the head of the line, in.
   */
  private takeOther(request: AcquireRequest): Promise<Lock> {
    // The same request object for every attempt: the slot search keys its rounds by it, so that a
    // late give-back of an earlier attempt does not take back a slot a later one won.
    const attempt = request.semaphore
      ? (value: string) => this.slots.attempt(request as SemaphoreAcquireRequest, value)
      : (value: string) => this.acquirer.attempt(request, value);
    if (request.opts.wait > 0)
      return waitForLock(
        this.parts,
        this.acquirer,
        this.wakes,
        request,
        this.failure,
        this.shutdown.signal,
        attempt,
      );
    return attempt(this.parts.values.next(false, request.opts.mode === 'read')).then((result) => {
      if (result.outcome === 'granted') return result.lock;
      throw this.failure(result, 1, request);
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
    if (this.closing) throw new EngineClosedError();
    this.parts.clocks.guardLocksOf(opts.clockGuard);
    if (opts.permits > 1) return slotRequest(this.parts, names, opts);
    const sorted = names.length === 1 ? names : [...names].sort();
    const startedAt = this.runtime.now();
    const request: AcquireRequest = {
      names,
      sorted,
      lockKeys: sorted.map((r) => this.parts.lockKey(r)),
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
  private readonly failure = (
    attempt: Exclude<Attempt, { outcome: 'granted' }>,
    attempts: number,
    request: AcquireRequest,
  ): RedlockError => {
    if (attempt.outcome === 'busy') {
      return new LockNotAcquiredError(request.names, attempt.retryAfterMs, attempts, attempt.why);
    }
    const { voters } = this.parts;
    return new QuorumUnavailableError(
      request.names,
      voters.quorum,
      voters.count,
      attempt.failures,
      attempt.retryAfterMs,
    );
  };
}
