import type { LockEvents } from '../events.js';
import { ClockGuard, type ClockGuardSettings } from '../guards/clock/guard.js';
import type { VoterClocks } from '../guards/clock/readings.js';
import { Abstentions } from '../guards/restart.js';
import type { RedlockLogger } from '../logger.js';
import { settleWithin, TIMED_OUT, type Runtime } from '../runtime.js';
import type { LetGo } from '../scripts/let-go.js';
import type { Voter } from '../voter/voter-api.js';
import { quorumOf, quorumRound, type RoundOptions, type RoundOutcome, type Vote } from './round.js';

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
  private readonly clockGuard: ClockGuard;
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
    /**
     * The clock guard: steps above `thresholdMs` (0: off) exclude a voter for `excludeForMs` (the
     * restart guard, or the longest ttl where that is off).
     */
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
      voter.onAbstention?.((forMs, why, shard) => this.noteAbstention(index, forMs, why || undefined, shard));
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

  /** The voters' clocks as this engine read them (waiting tickets, the clock guard). */
  get clocks(): VoterClocks {
    return this.clockGuard.clocks;
  }

  get count(): number {
    return this.list.length;
  }

  /** One round over every voter (or `voters`, with their own `quorum`), bounded by nodeTimeout. */
  round<R>(
    send: (voter: Voter, index: number) => Promise<R>,
    classify: (reply: R, index: number) => Vote,
    options?: RoundOptions<R> & { voters?: readonly Voter[]; quorum?: number; timeoutMs?: number },
  ): Promise<RoundOutcome<R>> {
    return quorumRound(
      this.runtime,
      options?.voters ?? this.list,
      options?.quorum ?? this.quorum,
      options?.timeoutMs ?? this.nodeTimeout,
      send,
      classify,
      options,
    );
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
    return quorumRound(
      this.runtime,
      voters,
      Math.min(this.quorum, voters.length),
      this.nodeTimeout,
      send,
      countsAsDone,
    );
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
    await settleWithin(
      this.runtime,
      new Promise<void>((resolve) => (this.onLetGoSettled = resolve)),
      timeoutMs,
    );
    this.onLetGoSettled = undefined;
  }

  /**
   * Records that voter `index` abstains under the restart guard for `remainingMs` (logged and
   * emitted by {@link Abstentions.note}), and returns the reason for error messages.
   */
  noteAbstention(index: number, remainingMs: number, why?: string, shard?: string): string {
    return this.abstentions.note(index, remainingMs, why, shard);
  }

  /**
   * Records voter `index`'s clock as read in a reply (see VoterClocks.note): a forward step above
   * the clock guard excludes the voter from this engine's quorums, and one that is also ahead of a
   * quorum of the others in that round is marked for every client (clock-guard.ts).
   */
  noteClock(index: number, sentAt: number, receivedAt: number, clockUs: number, judgeAhead = true): void {
    this.clockGuard.noteClock(index, sentAt, receivedAt, clockUs, judgeAhead);
  }

  /** Voter `index` granted within the window of `expectedUs` (VoterClocks.expectedUs): no step. */
  noteClockWithin(index: number, sentAt: number, receivedAt: number, expectedUs: number): void {
    this.clockGuard.noteWithin(index, sentAt, receivedAt, expectedUs);
  }

  /**
   * The clock guard: voter `index`'s clock stepped forward by `stepMs` (more than the guard), as a
   * hand-over showed: it does not count toward this engine's quorums for now (see ClockGuard).
   */
  excludeAfterStep(index: number, stepMs: number): void {
    this.clockGuard.excludeAfterStep(index, stepMs);
  }

  /** The clock guard: voter `index` was ahead of the others by `aheadMs` when first read (see ClockGuard). */
  excludeAhead(index: number, aheadMs: number, quiet?: boolean): number {
    return this.clockGuard.excludeAhead(index, aheadMs, quiet);
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
   * Reads every connected voter's clock once, or those of `only` (a read-only script on `probeKey`,
   * bounded by five node timeouts, at least 500 ms): the baseline the clock guard compares later
   * readings with, and what waiting tickets are stamped with from the first acquire on.
   */
  async readClocks(probeKey: string, only?: readonly number[]): Promise<void> {
    await Promise.all(
      this.list.map(async (voter, index) => {
        if (!voter.connected || (only && !only.includes(index))) return;
        const sentAt = this.runtime.now();
        // Once, at bootstrap: a voter still busy with its first connection gets some slack.
        const inspection = settleWithin(
          this.runtime,
          voter.inspect(probeKey),
          Math.max(5 * this.nodeTimeout, 500),
        );
        const view = await inspection.catch(() => undefined);
        if (view === undefined || view === TIMED_OUT || view.clockUs === undefined) return;
        // The bootstrap judges a lead itself, against every voter read (checkClocks), and reports it.
        this.noteClock(index, sentAt, this.runtime.now(), view.clockUs, false);
      }),
    );
  }

  /** Whether voter `index` counts toward this engine's quorums (not excluded by the clock guard). */
  counts(index: number): boolean {
    return this.clockGuard.counts(index);
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
