import { settleTokens } from '../fencing/tokens.js';
import { driftFor } from '../resolve-options.js';
import type { AcquireVote } from '../scripts/acquire.js';
import { RELEASE } from '../scripts/let-go.js';
import type { Acquirer, AcquireRequest, AttemptFollower } from './acquire.js';
import { countHandOffs, handOffClockStepped, type ClockReading, type HandOff } from './hand-off.js';
import type { HeldLock } from './held-lock.js';
import type { EngineParts } from './parts.js';
import type { Runtime } from '../runtime.js';

/**
 * How long a failed attempt waits for the answers its round did not wait for, to know whether
 * they granted. Answers of healthy voters follow within a fraction of this; a voter that is down
 * must not hold every attempt up for the whole node time-out.
 */
const LATE_ANSWER_WAIT_MS = 5;

/**
 * A caller that waits for one resource: voters hand it the lock itself (scripts/queue.ts), and
 * it holds the lock once a majority has, with no round of its own. For that it keeps, per voter,
 * its latest clock reading (what a hand-over is timed against, see hand-off.ts), and it must tell
 * a hand-over to its current value from one to a value it gave up: so a failed attempt that some
 * voter granted frees it under a new value (see cleanUp).
 */
export class SingleResourceWaiter {
  /** The value this waiter currently waits under. */
  value: string;
  /** Set when the value changed since the caller last looked (its wake-ups must follow it). */
  renamed = false;
  /** Per voter index: the latest clock reading from a busy reply (its attempts write it). */
  readonly clocks: Array<ClockReading | undefined> = [];

  constructor(
    private readonly parts: EngineParts,
    private readonly acquirer: Acquirer,
    private readonly request: AcquireRequest,
    value: string,
  ) {
    this.value = value;
  }

  /** What follows one attempt: records clocks, and frees a failed one (see {@link cleanUp}). */
  follow(): AttemptFollower {
    return new FollowedAttempt(this, this.parts.voters.list.length, this.parts.runtime);
  }

  /**
   * The lock from the voters that handed it over, or undefined when they are not a usable
   * majority; the caller then makes an attempt, which takes what was handed. The tokens are
   * settled like an attempt's. The lock starts with the short lease of a turn, and halfway
   * through, unless it was released first, is extended to end when a grant of its own `ttl` would
   * have: a lock handed over costs no round at all when it is held briefly, and a waiter that died
   * after its engine got the lock holds it up no longer than a turn.
   */
  async takeHandOffs(handOffs: readonly HandOff[]): Promise<HeldLock | undefined> {
    const { parts, request } = this;
    const { quorum } = parts.voters;
    // A turn is a lease of its own: its clock guard is at most a quarter of it (and the engine
    // then looks for steps above that: VoterClocks.guardLocksOf).
    const clockGuard = Math.min(request.opts.clockGuard, parts.turnMs / 4);
    parts.clocks.guardLocksOf(clockGuard);
    const usable = countHandOffs(
      this.countingHandOffs(handOffs, clockGuard),
      this.clocks,
      this.value,
      quorum,
      parts.turnMs,
      (ms) => driftFor(parts.options.driftFactor, ms),
      clockGuard,
    );
    if (!usable) return undefined;
    const grants = usable.counted.map((h) => ({ index: h.node, reply: { tokens: [h.token] } }));
    const tokens = await settleTokens(parts.voters, request.lockKeys, this.value, grants);
    const now = parts.runtime.now();
    const { ttl } = request.opts;
    // Never longer than the caller's own lease, which may be shorter than a turn.
    const validity = Math.min(usable.until - now, ttl - request.opts.drift) - clockGuard;
    if (!tokens || validity <= 0) return undefined;
    const lock = this.acquirer.grant(request, this.value, tokens, validity, now);
    // Early is the safe side here (the lock is extended a little sooner), and a line per grain
    // of durations instead of one per millisecond spares the timers (every hand-over arms one).
    parts.runtime.setTimeout(() => {
      // The lease a grant by an attempt would have left now: the lock ends as such a grant would.
      const lease = ttl - (parts.runtime.now() - now);
      if (lock.active && lease > validity / 2) lock.extend(lease).catch(() => undefined); // a failure marks it lost
    }, validity / 2);
    return lock;
  }

  /**
   * The hand-overs of voters that count here: not those that abstain for this engine (the
   * restart, identity or clock guard) or that its clock guard excludes. A voter under its marker
   * for every client (a change of server, or another engine's marking after a step of its clock)
   * hands nothing over: it lost its fence counters, and without one a hand-over gives a turn
   * instead (scripts/queue.ts), whose claim is an acquire that reads the marker. A voter whose clock
   * stepped forward by more than `clockGuard` between this waiter's reading and its hand-over is
   * excluded from now on, as one whose grant or extension shows the step (a hand-over is the first
   * reply after the step that this engine gets from it, then).
   */
  private countingHandOffs(handOffs: readonly HandOff[], clockGuard: number): HandOff[] {
    const { voters } = this.parts;
    const counting: HandOff[] = [];
    for (const handOff of handOffs) {
      const index = handOff.node;
      const reading = this.clocks[index];
      if (clockGuard > 0 && reading && handOffClockStepped(handOff, reading, clockGuard)) {
        const stepMs = reading.sentAt + (handOff.clockUs - reading.clockUs) / 1000 - handOff.receivedAt!;
        voters.clockGuard.excludeAfterStep(index, stepMs);
        continue;
      }
      if (voters.clockGuard.counts(index) && !voters.abstains(index, this.request.lockKeys))
        counting.push(handOff);
    }
    return counting;
  }

  /**
   * Frees a failed attempt. Only what a voter said it granted is given back: the answers the round
   * did not wait for usually follow at once; a voter that has not answered by then (slow, paused,
   * down) is left alone: what it may yet grant stays ours until a later attempt sees it (and gives
   * it back if that attempt fails too), or our release, or our leaving the queues, frees it. So a
   * voter that is down costs no release and no renaming per attempt.
   *
   * Once it frees its keys, the waiter could no longer tell a hand-over made before that release
   * (undone by it) from one made after. So it waits on under a new value: the same release, sent
   * to every voter, renames its place in every queue and hands what it had to the first in line
   * (itself, renamed, when it is first), and only hand-overs to the new value count.
   */
  async cleanUp(attempt: FollowedAttempt): Promise<void> {
    await attempt.settled(LATE_ANSWER_WAIT_MS);
    if (!attempt.anyGranted()) return;
    if (this.request.ticket === '') {
      // Not queued (no voter's clock was known): no voter can hand this value anything, so the
      // release needs no new value to tell hand-overs apart.
      void this.parts.voters.letGo(this.request.lockKeys, this.value, RELEASE);
      return;
    }
    const renamedTo = this.parts.values.next(false);
    const how = { op: 'requeue', ticket: this.request.ticket, renamedTo } as const;
    const { voters } = this.parts;
    // Voters that answered busy pass on what they handed the old value since (a release that
    // crossed this attempt): the new value keeps that turn.
    const busy = voters.list.filter((_, index) => attempt.answeredBusy(index));
    const rest = busy.length === 0 ? voters.list : voters.list.filter((v) => !busy.includes(v));
    if (rest.length > 0) void voters.letGo(this.request.lockKeys, this.value, how, { on: rest });
    if (busy.length > 0)
      void voters.letGo(this.request.lockKeys, this.value, { ...how, passOn: true }, { on: busy });
    this.value = renamedTo;
    this.renamed = true;
  }
}

/**
 * One attempt of a waiter, followed: it records the voters' clocks, and whether any voter granted,
 * as the answers come in, also after the round's decision. One object per attempt (this runs on
 * every acquire that may wait).
 */
class FollowedAttempt implements AttemptFollower {
  private granted = false;
  /** Per voter index, whether it answered busy (created at the first busy answer). */
  private busy: boolean[] | undefined;
  private known = 0;
  private onAllKnown: (() => void) | undefined;

  constructor(
    private readonly waiter: SingleResourceWaiter,
    private readonly count: number,
    private readonly runtime: Runtime,
  ) {}

  observe(index: number, vote: AcquireVote | undefined, sentAt: number): void {
    if (vote?.kind === 'busy') {
      this.waiter.clocks[index] = { sentAt, clockUs: vote.clockUs };
      (this.busy ??= [])[index] = true;
    } else if (vote?.kind === 'granted') this.granted = true;
    if (++this.known === this.count) this.onAllKnown?.();
  }

  cleanUp(): Promise<void> {
    return this.waiter.cleanUp(this);
  }

  /** Resolves once every voter answered, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    if (this.known === this.count) return Promise.resolve();
    return new Promise((resolve) => {
      const cancel = this.runtime.setTimeout(resolve, timeoutMs);
      this.onAllKnown = () => {
        cancel();
        resolve();
      };
    });
  }

  anyGranted(): boolean {
    return this.granted;
  }

  /** Whether voter `index` answered this attempt busy. */
  answeredBusy(index: number): boolean {
    return this.busy?.[index] === true;
  }
}
