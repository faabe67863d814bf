import type { LockEvents } from '../events.js';
import { ClockGuard, type ClockGuardSettings } from '../guards/clock/guard.js';
import { Abstentions } from '../guards/restart.js';
import type { RedlockLogger } from '../logger.js';
import type { NodeFailure } from '../errors.js';
import { settleWithin, type Runtime } from '../runtime.js';
import type { LetGo } from '../scripts/let-go.js';
import type { Voter } from '../voter/voter-api.js';

/** Every answer, or failure, of a voter letting go counts as done (see Voters.letGo). */
const countsAsDone = (): 'yes' => 'yes';
const SENT: Promise<void> = Promise.resolve();

/**
 * The N voters as one: the quorum (computed here only), rounds over all of them, who abstains
 * under the restart guard until when, and letting go of keys everywhere. Their health (connect,
 * status, probe) is read in health.ts.
 */
export class Voters {
  /** Votes needed: a strict majority of the voters. */
  readonly quorum: number;
  /** Who abstains until when, and the log lines about it. */
  readonly abstentions: Abstentions;
  /** The clock guard: the voters' clocks, the voters it excludes, the marking for every client. */
  readonly clockGuard: ClockGuard;
  /** Answered let-gos in flight (see {@link lettingGoSettled}). */
  private lettingGo = 0;
  private onLetGoSettled: (() => void) | undefined;
  private closing = false;

  constructor(
    readonly list: readonly Voter[],
    readonly nodeTimeout: number,
    restartGuard: number | false,
    readonly logger: RedlockLogger,
    private readonly events: LockEvents,
    readonly runtime: Runtime,
    /** The clock guard's threshold (0: off) and how long a step excludes a voter for. */
    clockGuard: ClockGuardSettings = { thresholdMs: 0, excludeForMs: 0 },
  ) {
    this.quorum = quorumOf(list.length);
    this.abstentions = new Abstentions(list, this.quorum, restartGuard, logger, events, runtime);
    this.clockGuard = new ClockGuard(
      list,
      this.quorum,
      clockGuard,
      this.abstentions,
      logger,
      events,
      runtime,
    );
    list.forEach((voter, index) => {
      // The identity guard (guards/identity.ts) decides on connecting, before any acquire.
      voter.onAbstention?.((forMs, why, shard) =>
        this.abstentions.note(index, forMs, why || undefined, shard),
      );
      voter.onHealthChange((up, reason) => {
        if (!events.observed) return;
        events.emit({ type: up ? 'node-up' : 'node-down', resources: [], node: voter.label, reason });
      });
    });
    if (list.length % 2 === 0) {
      logger.warn(
        `${list.length} Redis nodes configured: an even count tolerates no more failures than ` +
          `${list.length - 1} nodes would (quorum ${this.quorum}). Use an odd number such as 3 or 5.`,
      );
    }
  }

  /**
   * One round over every voter (or `voters`, with their own `quorum`): sends one request to each at
   * once and decides as soon as `quorum` said yes or that can no longer happen, without waiting for
   * stragglers. Voters that have not answered within nodeTimeout (or `timeoutMs`) count as
   * unavailable (one time-out per round, not one per voter).
   */
  round<R>(
    send: (voter: Voter, index: number) => Promise<R>,
    classify: (reply: R, index: number) => Vote,
    options?: RoundOptions<R> & { voters?: readonly Voter[]; quorum?: number; timeoutMs?: number },
  ): Promise<RoundOutcome<R>> {
    const { runtime } = this;
    const voters = options?.voters ?? this.list;
    const quorum = options?.quorum ?? this.quorum;
    const timeoutMs = options?.timeoutMs ?? this.nodeTimeout;
    return new Promise((resolve) => {
      const total = voters.length;
      const votes = new Array<'yes' | 'no' | 'declined' | 'failed' | undefined>(total);
      const yes: Array<{ index: number; reply: R }> = [];
      const no: R[] = [];
      const unavailable: NodeFailure[] = [];
      let decided = false;
      const record = (index: number, outcome: () => void) => {
        if (votes[index] !== undefined || decided) return;
        outcome();
        const failed = no.length + unavailable.length;
        if (yes.length >= quorum || failed > total - quorum || yes.length + failed === total) {
          decided = true;
          cancel?.();
          resolve({ ok: yes.length >= quorum, yes, no, unavailable, votes });
        }
      };
      const fail = (index: number, reason: string, vote: 'declined' | 'failed') => {
        votes[index] = vote;
        unavailable.push({ node: voters[index]!.label, reason });
      };
      // When the timer fires, replies may already wait in the sockets (timers run before I/O is
      // read, e.g. after a busy tick): look at them first, then expire what is still missing.
      const expire = () =>
        runtime.defer(() => {
          for (let i = 0; i < total; i++)
            record(i, () => fail(i, `no reply within ${timeoutMs} ms`, 'failed'));
        });
      // The timer starts once the requests left this process: node-redis writes a tick's commands in
      // an immediate, and a stall of this process right after the call (a busy tick) delays it and
      // this deferral alike, so the replies still get their time.
      let cancel: (() => void) | undefined;
      runtime.defer(() => void (decided || (cancel = runtime.setTimeout(expire, timeoutMs))));
      const observe = options?.observe;
      voters.forEach((voter, index) => {
        send(voter, index).then(
          (reply) => {
            observe?.(index, reply);
            record(index, () => {
              const vote = classify(reply, index);
              if (vote === 'yes') {
                votes[index] = 'yes';
                yes.push({ index, reply });
              } else if (vote === 'no') {
                votes[index] = 'no';
                no.push(reply);
              } else fail(index, vote.declined, 'declined');
            });
          },
          (err: unknown) => {
            observe?.(index, undefined);
            record(index, () => fail(index, voter.failureReason(err), 'failed'));
          },
        );
      });
    });
  }

  /**
   * Lets go of `value`'s keys on the voters `on` (default all). Resolves once the commands are
   * handed to the sockets (at the end of the tick, for writes batched to it): what this engine sends
   * a voter later goes on the same connection, so it comes after. With `confirmed`, once a majority
   * answered (a voter that fails still counts as done: the key expires there with its lease). Every
   * let-go in flight is waited for, at most nodeTimeout, before the connections close.
   */
  letGo(
    keys: readonly string[],
    value: string,
    how: LetGo,
    { on: voters = this.list, confirmed = false }: { on?: readonly Voter[]; confirmed?: boolean } = {},
  ): Promise<unknown> {
    if (!confirmed) {
      let batched: Array<Promise<void>> | undefined; // writes held back to the end of the tick
      for (const voter of voters) {
        void this.sendLetGo(voter, keys, value, how);
        const written = voter.written?.();
        if (written) (batched ??= []).push(written);
      }
      return batched ? Promise.all(batched) : SENT;
    }
    const send = (voter: Voter) => this.sendLetGo(voter, keys, value, how);
    return this.round(send, countsAsDone, { voters, quorum: Math.min(this.quorum, voters.length) });
  }

  /** One voter's answered let-go, counted until it settles (close() waits for those in flight). */
  private sendLetGo(voter: Voter, keys: readonly string[], value: string, how: LetGo): Promise<unknown> {
    this.lettingGo++;
    return voter.letGo(keys, value, how).then(this.letGoSettled, this.letGoSettled);
  }

  private readonly letGoSettled = (): undefined => {
    if (--this.lettingGo === 0) this.onLetGoSettled?.();
    return undefined;
  };

  /**
   * Resolves once the let-gos sent so far have left this process (one-way ones handed to their
   * sockets) and the answered ones settled, at most `timeoutMs` (a node that does not answer):
   * shutdown waits for it before the connections close.
   */
  async lettingGoSettled(timeoutMs: number): Promise<void> {
    if (this.lettingGo === 0) return;
    const settled = new Promise<void>((resolve) => (this.onLetGoSettled = resolve));
    await settleWithin(this.runtime, settled, timeoutMs);
    this.onLetGoSettled = undefined;
  }

  /**
   * Whether voter `index` abstains now (restart, identity or clock guard), for `keys` when given (a
   * Cluster voter's shard abstains for its own slots only).
   */
  abstains(index: number, keys?: readonly string[]): boolean {
    if (this.abstentions.abstainsUntil(index) > this.runtime.now()) return true;
    return keys !== undefined && (this.list[index]!.abstainingForMs?.(keys) ?? 0) > 0;
  }

  /**
   * When a quorum should vote again after a round that did not reach one, in ms from now: the
   * quorum-th soonest among the voters (0 for those that voted, the rest of its abstention for one
   * that abstained). Undefined when that depends on voters that failed or did not answer: nobody
   * can tell when they come back.
   */
  msUntilQuorumVotes(votes: RoundOutcome<unknown>['votes']): number | undefined {
    const now = this.runtime.now();
    const waits = this.list
      .map((_, i) => {
        const vote = votes[i];
        if (vote === 'yes' || vote === 'no') return 0;
        return vote === 'declined' ? Math.max(0, this.abstentions.reportedUntil(i) - now) : Infinity;
      })
      .sort((a, b) => a - b);
    const wait = waits[this.quorum - 1]!;
    // Whole ms, rounded up: the hint goes into messages and HTTP bodies, and early is in vain.
    return Number.isFinite(wait) ? Math.ceil(wait) : undefined;
  }

  /**
   * Calls `joined` once, when voter `index` (not connected now) first connects and passes its
   * checks (its check bounded by `timeoutMs` each time it comes up), unless the voters close first.
   */
  whenJoined(index: number, timeoutMs: number, joined: () => void): void {
    const voter = this.list[index]!;
    let done = false;
    const attempt = () => {
      if (done || this.closing) return;
      void voter.waitReady(timeoutMs).then((ready) => {
        if (!ready || done || this.closing) return;
        done = true;
        joined();
      });
    };
    voter.onHealthChange((up) => up && attempt());
    attempt();
  }

  /** Closes every voter, each bounded by nodeTimeout, once the let-gos in flight have left. */
  async close(): Promise<void> {
    this.closing = true;
    await this.lettingGoSettled(this.nodeTimeout);
    this.abstentions.close();
    await Promise.all(this.list.map((v) => v.close(this.nodeTimeout)));
  }
}

/** Votes needed among `count` voters: a strict majority. The one quorum formula of the library. */
export function quorumOf(count: number): number {
  return Math.floor(count / 2) + 1;
}

/** How one voter's reply counts: for, against, or not at all (with a log-safe reason). */
export type Vote = 'yes' | 'no' | { readonly declined: string };

/**
 * Options of a round. `observe` sees every voter's outcome, also those after the decision: its
 * reply, or undefined when the operation failed (not when the round stopped waiting for it).
 */
interface RoundOptions<R> {
  readonly observe?: (index: number, reply: R | undefined) => void;
}

/** The decision of one round, taken as soon as it was certain. */
export interface RoundOutcome<R> {
  /** A majority voted yes. */
  readonly ok: boolean;
  /** Replies that voted yes, with the voter index, in arrival order. */
  readonly yes: ReadonlyArray<{ readonly index: number; readonly reply: R }>;
  /** Replies that voted no (e.g. lock busy), in arrival order. */
  readonly no: readonly R[];
  /** Voters that failed, timed out or declined, with log-safe reasons. */
  readonly unavailable: readonly NodeFailure[];
  /** Per voter: what it answered before the decision (undefined: no answer yet). */
  readonly votes: ReadonlyArray<'yes' | 'no' | 'declined' | 'failed' | undefined>;
}
