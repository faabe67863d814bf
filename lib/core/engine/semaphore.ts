import { LockUsageError, RedlockError, type NodeFailure } from '../errors.js';
import { settleTokens, type VoterGrant } from '../fencing/tokens.js';
import type { RoundOutcome } from '../quorum/voters.js';
import { RELEASE, type LetGo } from '../scripts/let-go.js';
import type { SlotVote } from '../scripts/semaphore.js';
import type { Acquirer, AcquireRequest, Attempt } from './acquire.js';
import type { HeldLock } from './held-lock.js';
import type { Leases } from './leases.js';
import type { EngineParts } from './parts.js';
import { describeUse, type SemaphoreRequest } from './semaphore-request.js';
import { giveBackSlots } from './slot-give-back.js';

/*
 * Semaphores: `permits` k > 1 makes a key k slots, each a Redlock of its own on a majority (its
 * own lock key, fence counter and tokens), never a count kept per node: a count admits more than
 * k holders once clients see different majorities (3 nodes, k = 2, three clients each cut off
 * from another node: each finds room on the two it reaches, and all three hold).
 *
 * One attempt: the caller proposes ONE slot order, the same for every voter, and each voter grants
 * the first slot in it that holds the caller's value or turn, else the first free one
 * (scripts/semaphore.ts); voters that agree on which slots are free grant the same slot. A slot
 * granted by a majority is the caller's; slots granted on a minority are given back at once (to
 * the first waiter: a release hands a slot over). Waiting: every slot shares one queue, by ticket;
 * a release of any slot gives its turn to the first waiter, whose next attempt takes it (the
 * waiting loop of wait.ts, with turns as for several resources): first come, first
 * served across the slots, without polling.
 */

/** Makes semaphore attempts: the slot search, the vote per slot, the give-backs (slot-give-back.ts). */
export class SlotAcquirer {
  /**
   * The latest round of each acquire. Its attempts share one value, so a late give-back of an
   * earlier round, sent after a later round's slot search on that voter, would take back the slot
   * the later round was granted there (two holders of one permit once a partition healed).
   * The later round's search ran after the earlier one's on that voter and answered for what it
   * left there (a slot holding the caller's value is granted first); its own give-back frees it.
   */
  private readonly rounds = new WeakMap<AcquireRequest, number>();

  constructor(
    private readonly parts: EngineParts,
    private readonly acquirer: Acquirer,
    private readonly leases: Leases,
  ) {}

  /**
   * One attempt of `value` on the semaphore `request.semaphore`: a round with the slots in their
   * natural order; when it split the vote while a slot was free on a majority (voters that saw
   * different holders: a minority partitioned from some clients), one more round that proposes
   * that slot first, to every voter alike.
   */
  async attempt(request: AcquireRequest & { semaphore: SemaphoreRequest }, value: string): Promise<Attempt> {
    const first = await this.round(request, value, natural(request.lockKeys.length));
    if (!first.retryWith) return first.attempt;
    return (await this.round(request, value, first.retryWith)).attempt;
  }

  /** One round with the slots proposed in `order` (permit numbers), the same for every voter. */
  private async round(
    request: AcquireRequest & { semaphore: SemaphoreRequest },
    value: string,
    order: readonly number[],
  ): Promise<{ attempt: Attempt; retryWith?: number[] }> {
    const { voters } = this.parts;
    const { list, quorum } = voters;
    const { ttl } = request.opts;
    const { lockKey, permits } = request.semaphore;
    const keys = order.map((permit) => request.lockKeys[permit]!);
    const started = this.parts.runtime.now();
    const round = (this.rounds.get(request) ?? 0) + 1;
    this.rounds.set(request, round);
    const superseded = () => this.rounds.get(request) !== round;
    const seedUs = this.parts.clocks.seedProposalUs(started, this.parts.seedWindowMs);
    const replies: Array<SlotVote | undefined> = new Array(list.length);
    /** Why a voter did not count: a failure, an abstention, or the clock guard (CLOCK_EXCLUDED). */
    const failures: Array<string | undefined> = new Array(list.length);
    const pending = list.map((voter) => {
      if (!voter.acquireSlot)
        return Promise.reject(new RedlockError(`${voter.label} cannot serve semaphores`));
      return voter.acquireSlot(keys, lockKey, value, ttl, request.ticket, seedUs, permits);
    });

    // Decide as soon as one slot has a majority, else when every voter answered or timed out.
    const winner = await new Promise<number | undefined>((resolve) => {
      const counts = new Array<number>(permits).fill(0);
      let answered = 0;
      let done = false;
      const finish = (permit: number | undefined) => {
        if (done) return;
        done = true;
        cancel();
        resolve(permit);
      };
      const { runtime } = this.parts;
      const cancel = runtime.setTimeout(
        () => runtime.defer(() => finish(undefined)),
        this.parts.options.nodeTimeout,
      );
      pending.forEach((sent, i) => {
        sent.then(
          (vote) => {
            // Every abstention is noted, also after the decision (health, Retry-After).
            if (vote.kind === 'abstaining') failures[i] = voters.abstentions.noteVote(i, vote);
            // The voter's clock, as a plain grant's (acquire.ts): a voter whose clock stepped
            // forward is excluded before its grant would count.
            else if (vote.kind === 'busy' || (vote.kind === 'granted' && vote.clockUs !== undefined))
              voters.clockGuard.noteClock(i, started, this.parts.runtime.now(), vote.clockUs!);
            if (done) return;
            replies[i] = vote;
            if (vote.kind === 'granted' && !voters.clockGuard.counts(i)) failures[i] = CLOCK_EXCLUDED;
            else if (vote.kind === 'granted' && ++counts[order[vote.index]!]! >= quorum)
              return finish(order[vote.index]);
            if (++answered === list.length) finish(undefined);
          },
          (err: unknown) => {
            if (done) return;
            failures[i] = list[i]!.failureReason(err);
            if (++answered === list.length) finish(undefined);
          },
        );
      });
    });

    if (winner !== undefined) {
      const won = this.take(request, value, winner, order, replies, started);
      giveBackSlots(voters, request, value, order, pending, replies, winner, won !== undefined, superseded);
      const lock = won instanceof Promise ? await won : won;
      if (lock) return { attempt: { outcome: 'granted', lock } };
      // The fencing round failed after the give-backs: the slot won goes too (a waiter keeps its place).
      const how: LetGo = request.ticket === '' ? RELEASE : { op: 'requeue', ticket: request.ticket };
      if (won instanceof Promise) void voters.letGo([request.lockKeys[winner]!], value, how);
      const why =
        `the acquire took ${Math.round(this.parts.runtime.now() - started)} ms, which used up the validity of its ` +
        `${ttl} ms lease (or the fencing counters could not be raised on a majority); retry`;
      return { attempt: { outcome: 'busy', retryAfterMs: 0, contended: true, why } };
    }
    giveBackSlots(voters, request, value, order, pending, replies, undefined, false, superseded);

    const conflict = replies.find((r) => r?.kind === 'conflict');
    if (conflict?.kind === 'conflict') {
      throw new LockUsageError(request.names[0]!, describeUse(permits), describeUse(conflict.permits));
    }
    const votes: Array<RoundOutcome<unknown>['votes'][number]> = new Array(list.length);
    const unavailable: NodeFailure[] = [];
    const freeOn = new Array<number>(permits).fill(0);
    /** Per permit: how many busy voters name each holder of its slot. */
    const holdersOf = Array.from({ length: permits }, () => new Map<string, number>());
    let busyWait = -2;
    let granted = 0;
    list.forEach((voter, i) => {
      const reply = replies[i];
      if (reply?.kind === 'granted' && failures[i] === CLOCK_EXCLUDED) {
        votes[i] = 'declined';
        unavailable.push({ node: voter.label, reason: CLOCK_EXCLUDED });
      } else if (reply?.kind === 'granted') {
        votes[i] = 'yes';
        granted++;
        for (const index of reply.free) freeOn[order[index]!]!++;
      } else if (reply?.kind === 'busy') {
        votes[i] = 'no';
        reply.holders.forEach((holder, index) => {
          const seen = holdersOf[order[index]!]!;
          seen.set(holder, (seen.get(holder) ?? 0) + 1);
        });
        if (reply.retryAfterMs >= 0 && (busyWait < 0 || reply.retryAfterMs < busyWait))
          busyWait = reply.retryAfterMs;
      } else if (reply?.kind === 'abstaining') {
        votes[i] = 'declined';
        unavailable.push({ node: voter.label, reason: failures[i]! });
      } else {
        votes[i] = 'failed';
        unavailable.push({
          node: voter.label,
          reason: failures[i] ?? `no reply within ${this.parts.options.nodeTimeout} ms`,
        });
      }
    });
    const answering = votes.filter((v) => v === 'yes' || v === 'no').length;
    if (answering >= quorum) {
      // The vote split. A slot free on a majority is proposed first in one more round, when every
      // voter answered (a late grant's give-back must not overtake that round's grant).
      const best = freeOn.indexOf(Math.max(...freeOn));
      const retryWith =
        order[0] !== best && freeOn[best]! >= quorum && replies.every((r) => r !== undefined)
          ? [best, ...natural(permits).filter((p) => p !== best)]
          : undefined;
      const contended = granted > 0;
      // Contended: the waiting loop backs off (at most the wait until a slot frees), never not at all.
      const retryAfterMs = busyWait < 0 ? -1 : busyWait;
      // Split: every voter answered, and some permit has no holder on a majority: acquirers that
      // came at once took the slots in different orders, and each gives back its minorities
      // (fail-fast acquires try again: wait.ts, retrySplit). Full: each permit's holder on a majority.
      const full = holdersOf.every((seen) => [...seen.values()].some((count) => count >= quorum));
      const split = answering === list.length && !full;
      return { attempt: { outcome: 'busy', retryAfterMs, contended, split }, retryWith };
    }
    return {
      attempt: {
        outcome: 'unavailable',
        failures: unavailable,
        retryAfterMs: voters.msUntilQuorumVotes(votes),
      },
    };
  }

  /** The lock on slot `slot`, from its granting majority (tokens settled as a plain lock's are). */
  private take(
    request: AcquireRequest,
    value: string,
    slot: number,
    order: readonly number[],
    replies: ReadonlyArray<SlotVote | undefined>,
    started: number,
  ): HeldLock | undefined | Promise<HeldLock | undefined> {
    const grants: VoterGrant[] = [];
    replies.forEach((reply, index) => {
      // Grants of voters the clock guard excludes count for nothing (their tokens neither).
      if (
        reply?.kind === 'granted' &&
        order[reply.index] === slot &&
        this.parts.voters.clockGuard.counts(index)
      ) {
        grants.push({ index, reply: { tokens: [reply.token] } });
      }
    });
    const key = request.lockKeys[slot]!;
    const one: AcquireRequest = { ...request, lockKeys: [key] };
    const settled = settleTokens(this.parts.voters, one.lockKeys, value, grants);
    const finish = (tokens: number[] | undefined): HeldLock | undefined => {
      const { ttl, watchdog, maxHold, holdAtLeast } = request.opts;
      const now = this.parts.runtime.now();
      // Less the clock guard, as a plain lock's validity (acquire.ts).
      // A fail-fast acquire's retries share one lease (acquire.ts).
      const since = request.opts.wait > 0 ? started : request.startedAt;
      const validity = ttl - (now - since) - request.opts.drift - request.opts.clockGuard;
      if (!tokens || validity <= 0) return undefined;
      return this.leases.grant(
        {
          value,
          resources: request.names,
          keys: [key],
          sortedResources: request.names,
          tokens,
          ttl,
          holdAtLeast,
          holder: request.opts.holder,
          validityMs: validity,
          now,
          permit: slot,
        },
        watchdog ? { maxHold } : undefined,
      );
    };
    return settled instanceof Promise ? settled.then(finish) : finish(settled);
  }
}

/** Why the grant of a voter that the clock guard excludes does not count. */
const CLOCK_EXCLUDED =
  'its wall clock stepped forward by more than clockGuard (see the log): it does not count for now';

/** Permits 0..count-1. */
function natural(count: number): number[] {
  return Array.from({ length: count }, (_, permit) => permit);
}
