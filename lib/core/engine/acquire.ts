import { LockUsageError, type NodeFailure } from '../errors.js';
import { settleTokens, type VoterGrant } from '../fencing/tokens.js';
import type { ResolvedLockOptions } from '../options.js';
import type { RoundOutcome, Vote } from '../quorum/voters.js';
import type { AcquireVote } from '../scripts/acquire.js';
import { PERMITS_MARK } from '../scripts/keys.js';
import { RELEASE } from '../scripts/let-go.js';
import type { HeldLock } from './held-lock.js';
import type { Leases } from './leases.js';
import type { EngineParts } from './parts.js';
import { describeUse, type SemaphoreRequest } from './semaphore-request.js';

/*
 * What happens on acquire: the plain Redlock path, one attempt, top to bottom.
 *
 * 1. Send the acquire script to every voter at once, each bounded by nodeTimeout, and decide as
 *    soon as a majority granted or can no longer grant (Voters.round in quorum/voters.ts).
 * 2. Fencing: the token is, per resource, the max of the tokens the granting majority returned;
 *    when they disagree, a second round raises the granting voters' counters to it
 *    (settleTokens), so that a majority holds counter >= token before the lock is handed out.
 * 3. Validity = ttl - elapsed - drift - clock guard: the lock is granted only with validity left.
 * 4. A failed attempt frees whatever it got, on every voter that may hold it.
 * Waiting (retries, queues, hand-overs): wait.ts, hand-over.ts; extension and release: leases.ts.
 */

/** What one acquire call asks for, fixed for the whole call. */
export interface AcquireRequest {
  /** Resources as the caller named them (de-duplicated). */
  readonly names: readonly string[];
  /** The same, sorted: every voter takes the keys in one order. */
  readonly sorted: readonly string[];
  /** Lock keys, in sorted resource order. */
  readonly lockKeys: readonly string[];
  /**
   * Place in the resources' queues: the voters' time when the acquire started, as this engine
   * knows it (guards/clock/readings.ts), the same on every voter, so the voters agree on the order
   * and it is first come, first served across clients, whatever their own clocks say. '' when the
   * caller does not wait (and so does not queue), and while no voter's clock is known yet: the
   * first attempt then does not queue, and its busy replies read the clocks (wait.ts).
   */
  ticket: string;
  /** this.parts.runtime.now() when the acquire started. */
  readonly startedAt: number;
  readonly opts: ResolvedLockOptions;
  /** Set for a semaphore (permits > 1): `lockKeys` are then its slot keys (semaphore.ts). */
  readonly semaphore?: SemaphoreRequest;
}

/** The result of one attempt. */
export type Attempt =
  | { readonly outcome: 'granted'; readonly lock: HeldLock }
  | {
      readonly outcome: 'busy';
      /** When a majority should be free again, ms (-1 unknown). */
      readonly retryAfterMs: number;
      /** Some voters granted: other acquirers split the vote, the lock itself may well be free. */
      readonly contended: boolean;
      /** Nobody holds it on a majority, every voter answered, acquirers that came at once split the vote. */
      readonly split?: boolean;
      /** Set when a majority granted but the grant could not be used (nobody else holds it). */
      readonly why?: string;
    }
  | {
      readonly outcome: 'unavailable';
      readonly failures: readonly NodeFailure[];
      /** When a quorum should vote again, ms; undefined when unknown (voters down). */
      readonly retryAfterMs: number | undefined;
    };

/**
 * How a waiter for one resource follows its attempts (hand-over.ts): it sees every
 * reply, also late ones, and frees a failed attempt its own way. The plain path needs none.
 */
export interface AttemptFollower {
  /** Every voter's reply (undefined: it failed), with the time the attempt was sent. */
  observe(index: number, vote: AcquireVote | undefined, sentAt: number): void;
  /** Frees what a failed attempt got, instead of {@link Acquirer.freeFailedAttempt}. */
  cleanUp(round: RoundOutcome<AcquireVote>): Promise<void>;
}

/** Makes attempts; grants locks. */
export class Acquirer {
  constructor(
    private readonly parts: EngineParts,
    private readonly leases: Leases,
  ) {}

  /** One attempt of `value` (a new one per call, or a waiter's current one). */
  async attempt(request: AcquireRequest, value: string, follower?: AttemptFollower): Promise<Attempt> {
    const { voters, clocks } = this.parts;
    const { ttl } = request.opts;
    const started = this.parts.runtime.now();
    const seedUs = clocks.seedProposalUs(started, this.parts.seedWindowMs);
    // The clock guard, one resource: where each voter's clock is expected (a grant within the
    // window of it replies without the clock: VoterClocks.expectedUs).
    const expected =
      request.opts.clockGuard > 0 && request.lockKeys.length === 1
        ? new Array<number | undefined>(voters.list.length)
        : undefined;
    const round = await voters.round(
      expected
        ? (voter, index) =>
            voter.acquire(
              request.lockKeys,
              value,
              ttl,
              request.ticket,
              seedUs,
              (expected[index] = clocks.expectedUs(index, started)),
            )
        : (voter) => voter.acquire(request.lockKeys, value, ttl, request.ticket, seedUs),
      this.classify,
      follower
        ? {
            observe: (index, vote) => {
              this.noteReply(index, vote, started, expected?.[index]);
              follower.observe(index, vote, started);
            },
          }
        : request.opts.wait > 0 || request.opts.clockGuard > 0
          ? { observe: (index, vote) => this.noteReply(index, vote, started, expected?.[index]) }
          : this.plainRound,
    );

    let tokensSettled = true;
    if (round.ok) {
      // Only granting votes are 'yes': their replies carry the tokens.
      const settled = settleTokens(
        this.parts.voters,
        request.lockKeys,
        value,
        round.yes as readonly VoterGrant[],
      );
      const tokens = settled instanceof Promise ? await settled : settled;
      tokensSettled = tokens !== undefined;
      const now = this.parts.runtime.now();
      // Less the clock guard: a voter's clock that steps forward by less than it cannot end the
      // lease there before this validity does (larger steps are seen: guards/clock/). A fail-fast
      // call's retries (retrySplit) share one lease: from its start, never longer than its ttl.
      const since = request.opts.wait > 0 ? started : request.startedAt;
      const validity = ttl - (now - since) - request.opts.drift - request.opts.clockGuard;
      if (tokens && validity > 0) {
        return { outcome: 'granted', lock: this.grant(request, value, tokens, validity, now) };
      }
    }

    await (follower ? follower.cleanUp(round) : this.freeFailedAttempt(request, value, round));
    const busy = round.no as ReadonlyArray<Extract<AcquireVote, { kind: 'busy' }>>;
    if (round.ok) {
      const why = tokensSettled
        ? `the acquire took ${Math.round(this.parts.runtime.now() - started)} ms, which used up the validity of its ` +
          `${ttl} ms lease (a paused process or an overloaded node); retry, or use a longer ttl`
        : 'the fencing counters could not be raised on a majority (nodes failed during the acquire); retry';
      return { outcome: 'busy', retryAfterMs: 0, contended: true, why };
    }
    if (busy.length > 0 && voters.list.length - round.unavailable.length >= voters.quorum) {
      checkNotSemaphore(request, busy); // a busy path only: the mutex's grant reads nothing more
      const held = heldByOneOwner(busy, voters.quorum);
      return {
        outcome: 'busy',
        retryAfterMs: retryAfter(busy, voters.list.length, voters.quorum),
        contended: round.yes.length > 0 && !held,
        // A round decides once a majority is out of reach, maybe before this attempt's own grants:
        // several holders tell a split too. Not when a voter failed (a retry would wait for it).
        split:
          !held &&
          round.unavailable.length === 0 &&
          (round.yes.length > 0 || busy.some((b) => b.holder !== busy[0]!.holder)),
      };
    }
    return {
      outcome: 'unavailable',
      failures: round.unavailable,
      retryAfterMs: voters.msUntilQuorumVotes(round.votes),
    };
  }

  /** Records a new held lock for `value`, with its watchdog when the options ask for one. */
  grant(
    request: AcquireRequest,
    value: string,
    tokens: readonly number[],
    validityMs: number,
    now: number,
  ): HeldLock {
    const { opts } = request;
    return this.leases.grant(
      {
        value,
        resources: request.names,
        keys: request.lockKeys,
        sortedResources: request.sorted,
        tokens,
        ttl: opts.ttl,
        holdAtLeast: opts.holdAtLeast,
        holder: opts.holder,
        validityMs,
        now,
        mode: opts.mode,
      },
      opts.watchdog ? { maxHold: opts.maxHold } : undefined,
    );
  }

  /**
   * Frees what a failed attempt got, on every voter that may hold its keys: those that granted,
   * failed or timed out (a late grant is queued before this on the same connection); voters that
   * answered busy or abstained hold nothing. A caller that waits keeps its place in line.
   * The caller awaits this, but the releases themselves are sent without waiting for their replies
   * (it resolves at once): the next attempt, on the same connections, is sent after them anyway.
   */
  freeFailedAttempt(request: AcquireRequest, value: string, round: RoundOutcome<AcquireVote>): Promise<void> {
    const { list } = this.parts.voters;
    const { voters } = this.parts;
    // A voter the clock guard excludes declines even when it granted: free it there too.
    const mayHold = list.filter(
      (_, i) => round.votes[i] !== 'no' && (round.votes[i] !== 'declined' || !voters.clockGuard.counts(i)),
    );
    if (mayHold.length > 0) {
      const how = request.ticket === '' ? RELEASE : { op: 'requeue' as const, ticket: request.ticket };
      void this.parts.voters.letGo(request.lockKeys, value, how, { on: mayHold });
    }
    return Promise.resolve();
  }

  // Built once: rounds run on every acquire.
  private readonly classify = (vote: AcquireVote, index: number): Vote => {
    if (vote.kind === 'granted') {
      return this.parts.voters.clockGuard.counts(index) ? 'yes' : CLOCK_EXCLUDED;
    }
    if (vote.kind === 'busy') return 'no';
    return { declined: this.parts.voters.abstentions.noteVote(index, vote) };
  };

  /** Also after a round's decision: every voter that abstains is known (health, Retry-After). */
  private readonly noteLateAbstention = (index: number, vote: AcquireVote | undefined): void => {
    if (vote?.kind === 'abstaining') this.parts.voters.abstentions.noteVote(index, vote);
  };

  private readonly plainRound = { observe: this.noteLateAbstention };

  /**
   * The voters' clocks in their replies: busy replies (waiting tickets) and, under the clock guard,
   * grants (a grant without the clock, to a request that said where the clock was expected, was
   * within the window of it: `expectedUs`). A voter whose clock stepped forward is excluded before
   * its vote is counted (the round observes a reply before it classifies it).
   */
  private noteReply(index: number, vote: AcquireVote | undefined, sentAt: number, expectedUs?: number): void {
    if (vote?.kind === 'busy')
      this.parts.voters.clockGuard.noteClock(index, sentAt, this.parts.runtime.now(), vote.clockUs);
    else if (vote?.kind === 'granted') {
      if (vote.clockUs !== undefined)
        this.parts.voters.clockGuard.noteClock(index, sentAt, this.parts.runtime.now(), vote.clockUs);
      else if (expectedUs !== undefined) {
        this.parts.voters.clockGuard.noteWithin(index, sentAt, this.parts.runtime.now(), expectedUs);
      }
    } else this.noteLateAbstention(index, vote);
  }
}

/** A plain lock finding a semaphore's marker in its lock key (semaphore.ts): a LockUsageError. */
function checkNotSemaphore(request: AcquireRequest, busy: ReadonlyArray<{ holder: string }>): void {
  for (const { holder } of busy) {
    if (holder.startsWith(PERMITS_MARK)) {
      const permits = Number(holder.slice(PERMITS_MARK.length));
      const mode = request.opts.mode === 'read' ? 0 : 1;
      throw new LockUsageError(request.names.join(', '), describeUse(mode), describeUse(permits));
    }
  }
}

/** How a grant of a voter that the clock guard excludes counts: not at all. */
const CLOCK_EXCLUDED: Vote = {
  declined: 'its wall clock stepped forward by more than clockGuard (see the log): it does not count for now',
};

/** Whether the busy replies show one owner on a majority (a real holder, not colliding acquirers). */
function heldByOneOwner(busy: ReadonlyArray<{ holder: string }>, quorum: number): boolean {
  const counts = new Map<string, number>();
  for (const { holder } of busy) {
    const count = (counts.get(holder) ?? 0) + 1;
    if (count >= quorum) return true;
    counts.set(holder, count);
  }
  return false;
}

/**
 * When a majority should be free again: with `free` voters free already, the lock frees on a
 * majority when the (quorum - free)-th shortest remaining lease among busy voters runs out.
 * -1 when unknown (a key without expiry).
 */
function retryAfter(busy: ReadonlyArray<{ retryAfterMs: number }>, count: number, quorum: number): number {
  const leases = busy.map((b) => b.retryAfterMs).sort((a, b) => a - b);
  if (leases[0] === -1) return -1;
  const free = count - busy.length;
  return leases[Math.min(leases.length - 1, Math.max(0, quorum - free - 1))] ?? 0;
}
