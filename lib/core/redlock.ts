import { randomBytes } from 'node:crypto';
import {
  LockLostError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  RedlockError,
  RedlockOptionsError,
  type NodeFailure,
} from './errors.js';
import { HeldLock, type LockOwner } from './held-lock.js';
import { KeySpace, MULTI_RESOURCE_MARK, WAKE_CHANNEL_PREFIX } from './keys.js';
import type { Lock } from './lock.js';
import { LockContext } from './lock-context.js';
import { LockNode } from './lock-node.js';
import { consoleLogger, type RedlockLogger } from './logger.js';
import {
  normaliseResources,
  resolveLockOptions,
  resolveOptions,
  type LockOptions,
  type RedlockOptions,
  type ResolvedLockOptions,
  type ResolvedOptions,
} from './options.js';
import { quorumRound, type RoundOutcome } from './quorum-round.js';
import { engineScripts, RAISE_FENCE, type EngineScripts } from './scripts.js';
import { ExtendBatcher } from './extend-batcher.js';
import { startTimeout } from './timeouts.js';
import { WakeChannel, type HandOff, type WakeSubscription } from './wake-channel.js';
import { startWatchdog, WatchdogClock } from './watchdog.js';

/** Reachability of one node, as reported by {@link Redlock.connect} and {@link Redlock.status}. */
export interface NodeStatus {
  readonly node: string;
  readonly reachable: boolean;
  readonly error?: string;
  /** Epoch ms until which the node abstains under the restart guard, if it does. */
  readonly abstainingUntil?: number;
  /** Round-trip time of a PING, from {@link Redlock.probe}. */
  readonly latencyMs?: number;
}

/** Upper bound of the random back-off after acquirers collided (split votes), in ms. */
const MAX_COLLISION_BACKOFF_MS = 32;

/**
 * A queued waiter asks again at least this often even when nobody wakes it: the waiter ahead of
 * it may have died just as its turn came, and when that turn runs out nobody is woken.
 */
const QUEUE_RECHECK_MS = 1000;

/**
 * How long a failed attempt of a waiter waits for the answers the round did not wait for, to know
 * whether they granted. Answers of healthy nodes follow within a fraction of this; a node that is
 * down must not hold every attempt up for the whole node time-out.
 */
const LATE_ANSWER_WAIT_MS = 5;

/** A node's clock read in a reply to a request sent at `sentAt` (performance.now) or later. */
interface ClockReading {
  readonly sentAt: number;
  readonly clockUs: number;
}

/** What an acquire call sends, built once per call. */
interface AcquireRequest {
  readonly names: string[];
  readonly sorted: string[];
  /** Lock keys, in sorted resource order. */
  readonly lockKeys: string[];
  /** Identifies this caller in the lock keys and queues; renamed after some failed attempts (see freePartialGrant). */
  value: string;
  /** Place in the resources' queues ('' when the caller does not wait, and so does not queue). */
  readonly ticket: string;
  /** The acquire script's arguments: the same for every node. */
  args: string[];
  /**
   * Per node index, the latest clock reading from this caller's busy replies: what a lock handed
   * to it later is timed against (see grantFromHandOffs).
   */
  readonly clocks: Array<ClockReading | undefined>;
}

/** The result of one acquire round. */
type Attempt =
  | { readonly lock: HeldLock }
  | {
      readonly lock?: undefined;
      readonly busy: true;
      readonly retryAfterMs: number;
      /** Some nodes granted: other acquirers split the vote, the lock itself may well be free. */
      readonly contended: boolean;
      /** Set when a majority granted but the grant could not be used (nobody else holds it). */
      readonly why?: string;
      /** The caller's value was retired: it waits on with a new one. */
      readonly renewed: boolean;
    }
  | {
      readonly lock?: undefined;
      readonly busy: false;
      readonly failures: readonly NodeFailure[];
      readonly renewed: boolean;
    };

/**
 * The acquire script's reply: the token (one resource) or [1, token...] granted, [0, pttl, holder]
 * busy, [-1, ms] abstaining.
 */
type AcquireReply = number | readonly number[];

/** A busy or abstaining reply. */
type RefusalReply = readonly number[];

/** The token a grant reply carries for the resource at `index` (in sorted order). */
function grantedToken(reply: AcquireReply, index: number): number {
  return typeof reply === 'number' ? reply : reply[index + 1]!;
}

/**
 * The Redlock engine: a mutex over N independent Redis masters with quorum fencing tokens.
 * Framework-free; `LockService` is its NestJS face. Everything that happens on acquire, extend and
 * release is in this file; the Lua it runs is in `scripts.ts`.
 */
export class Redlock implements LockOwner {
  readonly options: ResolvedOptions;
  readonly nodes: readonly LockNode[];
  /** Votes needed: a strict majority of the nodes. */
  readonly quorum: number;
  private readonly keys: KeySpace;
  private readonly logger: RedlockLogger;
  private readonly wakes: WakeChannel;
  /**
   * How long a node hands the lock to the first waiter for (a lock handed over, or a turn to
   * claim), ms: a waiter that died or stalls holds the lock up no longer than this.
   */
  private readonly turnMs: number;
  private readonly scripts: EngineScripts;
  private readonly context = new LockContext();
  private readonly held = new Set<HeldLock>();
  /** Per node: extensions requested in the same tick share one script call. */
  private readonly batchers = new Map<LockNode, ExtendBatcher>();
  /** Per watchdog period: one shared interval, so that watchdogs tick (and batch) together. */
  private readonly clock = new WatchdogClock();
  private readonly drift: (ttl: number) => number;
  private closed = false;
  /** Lock values: a random prefix per engine and a counter make each unique without a syscall. */
  private readonly valuePrefix = randomBytes(12).toString('base64url');
  private valueCounter = 0;

  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    this.logger = options.logger ?? consoleLogger;
    // Long enough for a woken waiter to answer on a busy machine, short enough that a dead one
    // holds the lock up for less than a retry delay would.
    this.turnMs = Math.max(4 * this.options.nodeTimeout, 200);
    this.keys = new KeySpace(this.options.keyPrefix);
    this.scripts = engineScripts({
      guardMs: this.options.restartGuard === false ? 0 : this.options.restartGuard,
      guardKey: this.keys.guardMarker,
      fenceIdleMs: this.options.fenceIdleTtl,
      turnMs: this.turnMs,
      queueIdleMs: 10 * QUEUE_RECHECK_MS + this.turnMs,
    });
    this.nodes = options.nodes.map((n) =>
      LockNode.from(n, this.options.connectTimeout, this.logger, this.scripts.all),
    );
    for (const node of this.nodes) this.batchers.set(node, new ExtendBatcher(node));
    this.quorum = Math.floor(this.nodes.length / 2) + 1;
    if (this.nodes.length % 2 === 0) {
      this.logger.warn(
        `${this.nodes.length} Redis nodes configured: an even count tolerates no more failures than ` +
          `${this.nodes.length - 1} nodes would (quorum ${this.quorum}). Use an odd number such as 3 or 5.`,
      );
    }
    this.wakes = new WakeChannel(
      this.nodes,
      WAKE_CHANNEL_PREFIX + this.valuePrefix,
      this.options.nodeTimeout,
      this.turnMs,
    );
    const { driftFactor } = this.options;
    this.drift = (ttl) => Math.floor(ttl * driftFactor) + 2;
  }

  /**
   * Waits until every node is connected, at most `connectTimeout` ms, and logs the nodes that are
   * not. Resolves with each node's status (it does not throw: a minority may well be down).
   */
  async connect(): Promise<NodeStatus[]> {
    await Promise.all(this.nodes.map((n) => n.waitReady(this.options.connectTimeout)));
    const statuses = this.status();
    const down = statuses.filter((s) => !s.reachable);
    for (const s of down)
      this.logger.warn(`Redis node ${s.node} is not reachable: ${s.error ?? 'not connected yet'}`);
    if (this.nodes.length - down.length < this.quorum) {
      this.logger.error(
        `Only ${this.nodes.length - down.length} of ${this.nodes.length} Redis nodes are reachable; ` +
          `no lock can be granted until ${this.quorum} are.`,
      );
    }
    return statuses;
  }

  /** Current reachability of each node (no I/O). */
  status(): NodeStatus[] {
    const now = Date.now();
    return this.nodes.map((n) => ({
      node: n.label,
      reachable: n.client.status === 'ready',
      ...(n.client.status === 'ready' ? {} : { error: n.lastError ?? n.client.status }),
      ...(n.abstainingUntil > now ? { abstainingUntil: n.abstainingUntil } : {}),
    }));
  }

  /**
   * Like {@link status}, but asks each node (PING, bounded by nodeTimeout), so a node that is
   * connected but hung (e.g. paused) shows as unreachable, and reachable ones report a latency.
   */
  probe(): Promise<NodeStatus[]> {
    const timeout = this.options.nodeTimeout;
    return Promise.all(
      this.status().map(async (status, i) => {
        if (!status.reachable) return status;
        const started = performance.now();
        let timer: NodeJS.Timeout | undefined;
        const answered = await Promise.race([
          this.nodes[i]!.client.ping().then(
            () => true,
            () => false,
          ),
          new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeout))),
        ]);
        clearTimeout(timer);
        return answered
          ? { ...status, latencyMs: Math.round((performance.now() - started) * 100) / 100 }
          : { ...status, reachable: false, error: `no reply to PING within ${timeout} ms` };
      }),
    );
  }

  /**
   * Acquires a lock on one or more resources, waiting up to `wait` ms while it is busy.
   * Throws LockNotAcquiredError (busy), QuorumUnavailableError (too few nodes), or the signal's
   * reason when `options.signal` aborts.
   */
  acquire(resources: string | readonly string[], options?: LockOptions): Promise<Lock> {
    return this.acquireWith(resources, options, false);
  }

  /** Like {@link acquire}, but resolves `null` instead of throwing when the lock stays busy. */
  async tryAcquire(resources: string | readonly string[], options?: LockOptions): Promise<Lock | null> {
    try {
      return await this.acquire(resources, options);
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
    const lock = await this.acquireWith(resources, options, true);
    try {
      return await this.runHolding(lock, () => fn(lock));
    } finally {
      await lock.release();
    }
  }

  /** Runs `fn` with `lock` recorded as held in this async call chain (nested acquisitions join it). */
  runHolding<T>(lock: Lock, fn: () => T): T {
    return this.context.run(lock, fn);
  }

  /**
   * Acquire with the watchdog defaulting to `watchdogDefault` (on for `using` and the decorator,
   * off for a bare acquire whose holder manages the lease).
   */
  async acquireWith(
    resources: string | readonly string[],
    options: LockOptions | undefined,
    watchdogDefault: boolean,
  ): Promise<Lock> {
    if (this.closed) throw new RedlockError('The Redlock engine is closed (application shutting down).');
    const names = normaliseResources(resources);
    const opts = resolveLockOptions(this.options, options, watchdogDefault);
    const joined = this.context.join(names);
    if (joined) return joined;

    const sorted = names.length === 1 ? names : [...names].sort();
    const lockKeys = sorted.map((r) => this.keys.lock(r));
    const value = this.nextValue(names.length > 1);
    // A caller that waits takes a place in the queues. The ticket is the same on every node, so
    // the nodes agree on the order; the clock makes it first come, first served across clients.
    const ticket = opts.wait > 0 ? String(Date.now()) : '';
    const request: AcquireRequest = {
      names,
      sorted,
      lockKeys,
      value,
      ticket,
      args: [value, String(Math.ceil(opts.ttl)), ticket],
      clocks: [],
    };
    const deadline = performance.now() + opts.wait;
    let subscription: WakeSubscription | undefined;
    let attempts = 0;
    let collisions = 0;
    let granted = false;
    try {
      for (;;) {
        opts.signal?.throwIfAborted();
        attempts++;
        const listening = this.wakes.listening;
        const attempt = await this.attempt(request, opts);
        if (attempt.lock) {
          granted = true;
          if (opts.watchdog)
            attempt.lock.attachWatchdog(startWatchdog(attempt.lock, opts.maxHold, this.clock));
          return attempt.lock;
        }
        if (attempt.renewed) {
          // Hand-overs to the retired value are not ours to count any more.
          subscription?.close();
          subscription = undefined;
        }
        const remaining = deadline - performance.now();
        if (remaining <= 0) {
          throw attempt.busy
            ? new LockNotAcquiredError(names, attempt.retryAfterMs, attempts, attempt.why)
            : new QuorumUnavailableError(names, this.quorum, this.nodes.length, attempt.failures);
        }
        if (!subscription) {
          // Only a caller that waits gets here, and the attempt queued it: listen for our turn. A
          // wake-up that arrived before this is kept for us by the channel, unless the channel was
          // not subscribed yet when we were queued: then it went to nobody, so once subscribed,
          // try again at once.
          subscription = this.wakes.register(request.value);
          if (!listening) {
            await this.wakes.ready();
            continue;
          }
        }
        const pause = this.pauseBeforeRetry(
          attempt,
          opts,
          attempt.busy && attempt.contended ? ++collisions : (collisions = 0),
        );
        const wake = await subscription.wait(Math.min(pause, remaining, QUEUE_RECHECK_MS), opts.signal);
        if (wake === 'aborted') opts.signal?.throwIfAborted();
        if (wake === 'handed') {
          const lock = await this.grantFromHandOffs(request, opts, subscription.handedOver());
          if (lock) {
            granted = true;
            if (opts.watchdog) lock.attachWatchdog(startWatchdog(lock, opts.maxHold, this.clock));
            return lock;
          }
          // Not countable (e.g. the node's clock unknown): the attempt below takes what was handed.
        }
      }
    } finally {
      subscription?.close();
      // Gave up (wait ran out, aborted, nodes down): leave the queues, so that nobody waits for
      // us and the next waiter's turn starts at once if ours had come.
      if (!granted && request.ticket !== '' && attempts > 0) void this.leaveQueues(request, this.nodes);
    }
  }

  /**
   * How long to wait before the next attempt (a release notification may end the wait earlier).
   * Held by someone: until the holder's lease ends on a majority. Votes split between acquirers
   * (nobody holds it): a short random back-off that doubles with each collision, so that one of
   * the colliding acquirers gets through instead of all retrying in step. No node answered: the
   * configured retry delay. Each with jitter.
   */
  private pauseBeforeRetry(
    attempt: Exclude<Attempt, { lock: HeldLock }>,
    opts: ResolvedLockOptions,
    collisions: number,
  ): number {
    const jitter = Math.random() * opts.retryJitter;
    if (!attempt.busy) return opts.retryDelay + jitter;
    if (attempt.contended) {
      const backoff = Math.random() * Math.min(MAX_COLLISION_BACKOFF_MS, 2 ** collisions);
      return attempt.retryAfterMs >= 0 ? Math.min(attempt.retryAfterMs, backoff) : backoff;
    }
    return attempt.retryAfterMs >= 0 ? attempt.retryAfterMs + jitter : opts.retryDelay + jitter;
  }

  /** One acquire round over all nodes, plus the second fencing round when the majority disagrees. */
  private async attempt(request: AcquireRequest, opts: ResolvedLockOptions): Promise<Attempt> {
    const { ttl } = opts;
    const started = performance.now();
    // Only a waiter for one resource counts hand-overs: it needs the nodes' clocks, and to know
    // whether the answers the round did not wait for granted (see freePartialGrant).
    const answers = countsHandOffs(request) ? new LateAnswers(this.nodes.length) : undefined;
    const round = await quorumRound<AcquireReply>(
      this.nodes,
      this.quorum,
      this.options.nodeTimeout,
      (node) => node.run(this.scripts.acquire, request.lockKeys, request.args) as Promise<AcquireReply>,
      (reply, node) => {
        if (typeof reply === 'number' || reply[0] === 1) return 'yes';
        if (reply[0] === 0) return 'no';
        return { unavailable: this.noteAbstention(node, reply[1]!) };
      },
      answers && {
        observe: (index, reply) => {
          if (reply !== undefined && typeof reply !== 'number' && reply[0] === 0)
            request.clocks[index] = { sentAt: started, clockUs: reply[3]! };
          answers.record(reply !== undefined && (typeof reply === 'number' || reply[0] === 1));
        },
      },
    );

    let tokensSettled = true;
    if (round.ok) {
      const tokens = await this.settleTokens(request, round.yes);
      tokensSettled = tokens !== undefined;
      const now = performance.now();
      const validity = ttl - (now - started) - this.drift(ttl);
      // Earlier attempts may have queued us on nodes that did not grant this time: our release
      // takes us out of those queues (it goes to every node anyway).
      if (tokens && validity > 0) return { lock: this.grant(request, ttl, tokens, validity, now) };
    }
    const renewed = await this.freePartialGrant(request, round, answers);
    // Only a grant is an integer: every 'no' is a busy reply.
    const busy = round.no as readonly RefusalReply[];
    if (round.ok || (busy.length > 0 && this.nodes.length - round.unavailable.length >= this.quorum)) {
      return {
        busy: true,
        retryAfterMs: round.ok ? 0 : this.retryAfter(busy),
        ...(round.ok ? { why: this.whyGrantFailed(tokensSettled, performance.now() - started, ttl) } : {}),
        contended: round.ok || (round.yes.length > 0 && !this.heldByOneOwner(busy)),
        renewed,
      };
    }
    return { busy: false, failures: round.unavailable, renewed };
  }

  /**
   * After a failed attempt: frees whatever it got. A caller that does not wait, or waits for
   * several resources, frees it on every node that may hold its key (those that granted, failed
   * or timed out: a late SET is queued before this release on the same connection; nodes that
   * answered busy or abstained set nothing). Returns true when the caller's value was retired.
   *
   * A caller that waits for one resource may also have been handed the lock by some nodes
   * meanwhile, and counts such hand-overs towards a majority. Once it frees its keys it could no
   * longer tell a hand-over made before that release (undone by it) from one made after. So when
   * a node granted, it waits on under a new value: the same release, sent to every node, renames
   * its place in every queue and hands what it had to the first in line (itself, renamed, when
   * it is first), and only hand-overs to the new value count. Nodes that did not answer are left
   * alone (see below), so that a node that is down costs no release and no renaming per attempt.
   */
  private async freePartialGrant(
    request: AcquireRequest,
    round: RoundOutcome<AcquireReply>,
    answers: LateAnswers | undefined,
  ): Promise<boolean> {
    const { votes } = round;
    if (!answers) {
      const mayHold = this.nodes.filter((_, i) => votes[i] !== 'no' && votes[i] !== 'declined');
      if (mayHold.length > 0)
        void this.releaseKeys(request.lockKeys, request.value, mayHold, request.ticket || '-');
      return false;
    }
    // Only what a node said it granted is given back. The answers the round did not wait for
    // usually follow at once; a node that has not answered by then (slow, paused, down) is left
    // alone: what it may yet grant stays ours until a later attempt sees it (and gives it back if
    // that attempt fails too), or our release, or our leaving the queues, frees it. So a node
    // that is down costs no release and no renaming per attempt.
    await answers.settled(LATE_ANSWER_WAIT_MS);
    if (!answers.anyGranted()) return false;
    const renamed = this.nextValue(false);
    void this.releaseKeys(request.lockKeys, request.value, this.nodes, request.ticket, renamed);
    request.value = renamed;
    request.args = [renamed, request.args[1]!, request.ticket];
    return true;
  }

  /** Records and returns a new held lock. */
  private grant(
    request: AcquireRequest,
    ttl: number,
    tokens: readonly number[],
    validity: number,
    now: number,
  ): HeldLock {
    const fencingTokens: Record<string, number> = {};
    for (let i = 0; i < tokens.length; i++) fencingTokens[request.sorted[i]!] = tokens[i]!;
    Object.freeze(fencingTokens);
    const lock = new HeldLock(
      this,
      request.value,
      request.names,
      request.lockKeys,
      fencingTokens,
      ttl,
      validity,
      now,
    );
    this.held.add(lock);
    return lock;
  }

  /**
   * The lock from the nodes that handed it to us (see promote in scripts.ts), or undefined when
   * they are not a usable majority; the caller then makes an attempt, which takes what was handed.
   *
   * A node hands the lock over for the turn's length, by its own clock, and says when that was.
   * Our busy reply from the same node, to a request sent at `sentAt` (our clock), read that clock
   * earlier: so the hand-over happened at least (its clock - that reading) after `sentAt`, less
   * clock drift, and the key outlives it by the turn. Each node's lease is bounded that way, and
   * the lock is valid while a majority's are. The tokens are settled like an attempt's. The lock
   * then starts with the short lease of a turn, and halfway through, unless it was released first,
   * is extended to end when a grant of its own `ttl` would have: a lock handed over costs no round
   * at all when it is held briefly, and a waiter that died after its engine got the lock holds it
   * up no longer than a turn.
   */
  private async grantFromHandOffs(
    request: AcquireRequest,
    opts: ResolvedLockOptions,
    handOffs: readonly HandOff[],
  ): Promise<HeldLock | undefined> {
    const leases: Array<{ handOff: HandOff; until: number }> = [];
    for (const handOff of handOffs) {
      const reading = request.clocks[handOff.node];
      if (!reading || handOff.value !== request.value) continue;
      const nodeMs = (handOff.clockUs - reading.clockUs) / 1000 + this.turnMs;
      leases.push({ handOff, until: reading.sentAt + nodeMs - this.drift(nodeMs) });
    }
    if (leases.length < this.quorum) return undefined;
    leases.sort((a, b) => b.until - a.until);
    const counted = leases.slice(0, this.quorum);
    const until = counted[this.quorum - 1]!.until;
    const tokens = await this.settleTokens(
      request,
      counted.map(({ handOff }) => ({ index: handOff.node, reply: handOff.token })),
    );
    const now = performance.now();
    // Never longer than the caller's own lease, which may be shorter than a turn.
    const validity = Math.min(until - now, opts.ttl - this.drift(opts.ttl));
    if (!tokens || validity <= 0) return undefined;
    const lock = this.grant(request, opts.ttl, tokens, validity, now);
    startTimeout(validity / 2, () => {
      // The lease a grant by an attempt would have left now: the lock ends as such a grant would.
      const lease = opts.ttl - (performance.now() - now);
      if (lock.active && lease > validity / 2) lock.extend(lease).catch(() => undefined); // a failure marks it lost
    });
    return lock;
  }

  /**
   * The fencing tokens of a grant: per resource, the max over the granting majority. When the
   * majority disagrees, a second round raises the counters of the granting nodes to the token, so
   * that a majority holds counter >= token before the lock is handed out. Resolves undefined if
   * that round cannot reach a majority.
   */
  private async settleTokens(
    request: AcquireRequest,
    grants: ReadonlyArray<{ index: number; reply: AcquireReply }>,
  ): Promise<number[] | undefined> {
    const count = request.lockKeys.length;
    const tokens = new Array<number>(count).fill(0);
    for (const { reply } of grants) {
      for (let i = 0; i < count; i++) {
        const token = grantedToken(reply, i);
        if (token > tokens[i]!) tokens[i] = token;
      }
    }
    const behind = grants.filter(({ reply }) => tokens.some((t, i) => grantedToken(reply, i) !== t));
    if (behind.length === 0) return tokens;

    const args = [request.value, Math.ceil(this.options.fenceIdleTtl), ...tokens.map(String)];
    const round = await quorumRound<number>(
      behind.map(({ index }) => this.nodes[index]!),
      behind.length, // every lagging granter must confirm: the others already hold the token
      this.options.nodeTimeout,
      (node) => node.run(RAISE_FENCE, request.lockKeys, args) as Promise<number>,
      (reply) => (reply === 1 ? 'yes' : 'no'),
    );
    return round.ok ? tokens : undefined;
  }

  /** LockOwner: extends `lock` on a majority, or marks it lost. */
  async extend(lock: HeldLock, ttl: number | undefined, retryWindowMs?: number): Promise<void> {
    const lease = ttl ?? lock.ttl;
    if (!(lease > 0) || !Number.isFinite(lease)) {
      throw new RedlockOptionsError(
        'ttl',
        `got ${String(ttl)}`,
        'Use a finite number of milliseconds above 0.',
      );
    }
    if (this.options.restartGuard !== false && lease > this.options.restartGuard) {
      throw new RedlockOptionsError(
        'ttl',
        `${lease} ms exceeds restartGuard ${this.options.restartGuard} ms`,
        'Extend by less.',
      );
    }
    if (!lock.active) {
      throw new LockLostError(
        lock.resources,
        lock.released ? 'it was already released' : 'it was lost earlier',
      );
    }
    const started = performance.now();
    if (started >= lock.validUntil) throw lock.markLost('its validity ran out before it was extended');
    // The watchdog is not in a hurry: a reply within half a tick still extends in time, and
    // thousands of locks extended in one tick need more than one command's time-out.
    const timeout =
      retryWindowMs === undefined
        ? this.options.nodeTimeout
        : Math.max(this.options.nodeTimeout, retryWindowMs / 2);
    const round = await quorumRound<number>(
      this.nodes,
      this.quorum,
      timeout,
      (node) => this.batchers.get(node)!.extend(lock.keys, lock.value, Math.ceil(lease)),
      (reply) => (reply === 1 ? 'yes' : 'no'),
      // The batchers send in a microtask queued before this one: time the round from there.
      { armAfter: Promise.resolve() },
    );
    const now = performance.now();
    const validity = lease - (now - started) - this.drift(lease);
    if (!lock.active) throw new LockLostError(lock.resources, 'it was released or lost while being extended');
    if (
      !round.ok &&
      retryWindowMs !== undefined &&
      this.mayRetryExtension(round, lock, now, retryWindowMs + timeout)
    ) {
      return; // inconclusive (time-outs, not refusals) and enough validity left to try again
    }
    if (!round.ok || validity <= 0) {
      const why = round.ok
        ? 'the extension took longer than the lease'
        : `only ${round.yes.length} of ${this.nodes.length} nodes still held it (need ${this.quorum})` +
          (round.unavailable.length
            ? `; ${round.unavailable.map((f) => `${f.node}: ${f.reason}`).join('; ')}`
            : '');
      throw lock.markLost(why);
    }
    lock.setValidity(validity, now);
  }

  /**
   * Whether a failed extension may be retried at the next watchdog tick instead of ending the
   * lock: no majority refused it (the nodes that did not confirm timed out or failed, e.g. during
   * a long event-loop stall), and the current validity outlasts another attempt (`retryWindowMs`:
   * the time to the next tick plus that round's time-out). A lock that a
   * majority no longer holds, or that would expire before the next try, is lost at once.
   */
  private mayRetryExtension(
    round: RoundOutcome<number>,
    lock: HeldLock,
    now: number,
    retryWindowMs: number,
  ): boolean {
    const refused = round.no.length > this.nodes.length - this.quorum;
    return !refused && lock.validUntil - now > retryWindowMs;
  }

  /** LockOwner: releases `lock` on every node. Never throws: keys a node missed expire with their lease. */
  async release(lock: HeldLock): Promise<void> {
    if (!lock.markReleased()) return;
    this.held.delete(lock);
    await this.releaseKeys(lock.keys, lock.value);
  }

  /** LockOwner: forgets a lost lock and frees what is left of it. */
  lost(lock: HeldLock): void {
    this.held.delete(lock);
    void this.releaseKeys(lock.keys, lock.value);
  }

  /**
   * Stops every watchdog, releases every lock still held, and closes the connections this engine
   * opened (never clients that were passed in).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.held].map((lock) => lock.release()));
    await this.wakes.close();
    await Promise.all(this.nodes.map((n) => n.close(this.options.nodeTimeout)));
  }

  /**
   * Deletes our value's keys on the nodes. Resolves once a majority answered, like an acquire:
   * the lock is then free for anyone who asks. The other nodes' answers are not waited for: a
   * node that is slow or hung keeps the key until it catches up or the lease ends, and the next
   * acquire from this engine reaches it after the release, on the same connection.
   *
   * A holder's release (no `failedAttemptTicket`) hands each lock to the first waiter in its
   * queue. An attempt that failed frees its partial grants; with its ticket it wakes nobody and
   * keeps its place in the queues (under `renamed`, when given), with '-' (it did not queue) it
   * hands them on like a holder.
   */
  private releaseKeys(
    lockKeys: readonly string[],
    value: string,
    nodes = this.nodes,
    failedAttemptTicket = '',
    renamed?: string,
  ): Promise<void> {
    const args = renamed === undefined ? [value, failedAttemptTicket] : [value, failedAttemptTicket, renamed];
    return quorumRound(
      nodes,
      Math.min(this.quorum, nodes.length),
      this.options.nodeTimeout,
      // A node that fails to answer still counts as done: the key expires there with its lease.
      (node) => node.run(this.scripts.release, lockKeys, args).catch(() => 0),
      () => 'yes',
    ).then(() => undefined);
  }

  /** Removes a waiter from the resources' queues on `nodes` (best effort: stale entries are skipped). */
  private leaveQueues(request: AcquireRequest, nodes: readonly LockNode[]): Promise<unknown> {
    const args = [request.value];
    return Promise.all(
      nodes.map((node) => node.run(this.scripts.leaveQueue, request.lockKeys, args).catch(() => 0)),
    );
  }

  /** Why a majority's grant could not be handed out. */
  private whyGrantFailed(tokensSettled: boolean, elapsedMs: number, ttl: number): string {
    return tokensSettled
      ? `the acquire took ${Math.round(elapsedMs)} ms, which used up the validity of its ${ttl} ms lease ` +
          '(a paused process or an overloaded node); retry, or use a longer ttl'
      : 'the fencing counters could not be raised on a majority (nodes failed during the acquire); retry';
  }

  /** Whether the busy replies show one owner on a majority (a real holder, not colliding acquirers). */
  private heldByOneOwner(busy: readonly RefusalReply[]): boolean {
    const counts = new Map<unknown, number>();
    for (const reply of busy) {
      const count = (counts.get(reply[2]) ?? 0) + 1;
      if (count >= this.quorum) return true;
      counts.set(reply[2], count);
    }
    return false;
  }

  /**
   * When a majority should be free again: with `free` nodes free already, the lock frees on a
   * majority when the (quorum - free)-th shortest remaining lease among busy nodes runs out.
   * -1 when unknown (a key without expiry).
   */
  private retryAfter(busy: readonly RefusalReply[]): number {
    const leases = busy.map((r) => r[1]!).sort((a, b) => a - b);
    if (leases[0] === -1) return -1;
    const free = this.nodes.length - busy.length;
    return leases[Math.min(leases.length - 1, Math.max(0, this.quorum - free - 1))] ?? 0;
  }

  /** A new lock value; one for several resources is marked (it is given turns, see scripts.ts). */
  private nextValue(multiResource: boolean): string {
    const value = `${this.valuePrefix}:${(this.valueCounter++).toString(36)}`;
    return multiResource ? value + MULTI_RESOURCE_MARK : value;
  }

  /** Records and logs (once per period) that a node abstains under the restart guard. */
  private noteAbstention(node: LockNode, remainingMs: number): string {
    const until = Date.now() + remainingMs;
    if (node.abstainingUntil < Date.now()) {
      this.logger.warn(
        `Redis node ${node.label} abstains from lock quorums until ${new Date(until).toISOString()}: it has no ` +
          `restart-guard marker, so it restarted without persistence (or is new) and may have forgotten locks it ` +
          `granted. It rejoins after restartGuard (${String(this.options.restartGuard)} ms).`,
      );
    }
    node.abstainingUntil = until;
    return `abstaining under the restart guard for ${remainingMs} more ms`;
  }
}

/** Whether the caller waits for one resource: nodes hand it the lock itself (see scripts.ts). */
function countsHandOffs(request: AcquireRequest): boolean {
  return request.ticket !== '' && request.names.length === 1;
}

/** Whether any node granted an attempt, as the answers come in, also after the round's decision. */
class LateAnswers {
  private granted = false;
  private known = 0;
  private onAllKnown: (() => void) | undefined;

  constructor(private readonly count: number) {}

  record(granted: boolean): void {
    if (granted) this.granted = true;
    if (++this.known === this.count) this.onAllKnown?.();
  }

  /** Resolves once every node answered, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    if (this.known === this.count) return Promise.resolve();
    return new Promise((resolve) => {
      const cancel = startTimeout(timeoutMs, resolve);
      this.onAllKnown = () => {
        cancel();
        resolve();
      };
    });
  }

  anyGranted(): boolean {
    return this.granted;
  }
}
