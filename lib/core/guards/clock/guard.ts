import type { LockEvents } from '../../events.js';
import type { RedlockLogger } from '../../logger.js';
import type { Runtime } from '../../runtime.js';
import type { Voter } from '../../voter/voter-api.js';
import type { Abstentions } from '../restart.js';
import { VoterClocks } from './readings.js';

/** The clock guard's settings: steps above `thresholdMs` (0: off) exclude a voter for `excludeForMs`. */
export interface ClockGuardSettings {
  readonly thresholdMs: number;
  /** The restart guard, or the longest ttl where that is off. */
  readonly excludeForMs: number;
}

/**
 * The clock guard of one engine's voters (owned by `Voters`): the voters' clocks as this engine
 * reads them in replies (VoterClocks), the voters this engine excludes after a step of their
 * clock, and the marking for every client of a voter whose clock stepped ahead of a quorum of the
 * others (scripts/clock-mark.ts).
 */
export class ClockGuard {
  /** The voters' clocks as this engine read them (waiting tickets, steps). */
  readonly clocks: VoterClocks;
  /** Per voter: until when (runtime time) the clock guard excludes it (see noteStep). */
  private readonly excludedUntil: number[];
  /** How many exclusions were made (0: {@link counts} needs no clock). */
  private exclusions = 0;

  constructor(
    private readonly list: readonly Voter[],
    private readonly quorum: number,
    private readonly settings: ClockGuardSettings,
    private readonly abstentions: Abstentions,
    private readonly logger: RedlockLogger,
    private readonly events: LockEvents,
    private readonly runtime: Runtime,
  ) {
    this.clocks = new VoterClocks(list.length, settings.thresholdMs, quorum);
    this.clocks.wallClock = () => runtime.wallNow();
    this.clocks.monotonic = () => runtime.now();
    this.excludedUntil = list.map(() => 0);
  }

  /**
   * Records voter `index`'s clock as read in a reply (see VoterClocks.note); a forward step above
   * the clock guard excludes the voter from this engine's quorums (noteStep), and a step that put
   * it ahead of a quorum of the others in the same round marks it for every client. Without a step,
   * a clock ahead of the voters' median by more than the guard excludes it too (excludeAhead),
   * unless `judgeAhead` is false: the bootstrap judges the first readings itself, and reports them.
   */
  noteClock(index: number, sentAt: number, receivedAt: number, clockUs: number, judgeAhead = true): void {
    const clocks = this.clocks;
    const step = clocks.note(index, sentAt, receivedAt, clockUs);
    if (step > 0) this.noteStep(index, step, this.settings.excludeForMs);
    else if (judgeAhead) this.excludeIfAhead(index);
    const confirmed = clocks.confirmed;
    if (confirmed.length > 0) for (const i of confirmed) this.markForEveryClient(i);
  }

  /** Voter `index` granted within the window of `expectedUs` (VoterClocks.noteWithin): no step. */
  noteWithin(index: number, sentAt: number, receivedAt: number, expectedUs: number): void {
    const clocks = this.clocks;
    clocks.noteWithin(index, sentAt, receivedAt, expectedUs);
    this.excludeIfAhead(index);
    const confirmed = clocks.confirmed;
    if (confirmed.length > 0) for (const i of confirmed) this.markForEveryClient(i);
  }

  /**
   * Voter `index`'s clock stepped forward by `stepMs`, as a reply that carries no reading of its own
   * showed (a hand-over, timed against the waiter's earlier reading): excluded as in {@link noteClock}.
   */
  excludeAfterStep(index: number, stepMs: number): void {
    this.noteStep(index, stepMs, this.settings.excludeForMs);
  }

  /**
   * Voter `index`'s clock is `aheadMs` ahead of the voters' time (the median of every voter's
   * clock) by more than the clock guard: a step this engine may not have seen (made before it first
   * read the voter, as for a new process, or one whose guard has passed while the voter kept its
   * lead), which may have expired held locks there early; and fence counters it seeds from its clock
   * (after a restart, or a marking that dropped them) would be ahead of what the other voters can
   * reach, so that losing the voters such a token was raised on would let the tokens of a resource
   * go back (the simulator's seed 3594078474). Excluded as after a step it saw, again at every
   * reading while it stays ahead: a steady lead never counts (preflight reports it at connect).
   * `quiet`: not logged here (preflight's report of the offset says it). Returns for how long, ms.
   */
  excludeAhead(index: number, aheadMs: number, quiet = false): number {
    const forMs = this.settings.excludeForMs;
    const reason =
      `its wall clock is ${Math.round(aheadMs)} ms ahead of the median of the voters' (more than ` +
      'clockGuard): it may have stepped forward and expired held locks early';
    this.noteStep(index, aheadMs, forMs, reason, quiet);
    return forMs;
  }

  /** A reading of voter `index` (with its clock, or within the expected window): excluded while it is ahead. */
  private excludeIfAhead(index: number): void {
    const thresholdMs = this.settings.thresholdMs;
    if (thresholdMs <= 0) return;
    const aheadMs = this.clocks.aheadOfVoters(index, thresholdMs, this.quorum);
    if (aheadMs > 0) this.excludeAhead(index, aheadMs);
  }

  /** Whether voter `index` counts toward this engine's quorums (not excluded by the clock guard). */
  counts(index: number): boolean {
    // The usual case costs one comparison: no voter was ever excluded.
    return this.exclusions === 0 || this.excludedUntil[index]! <= this.runtime.now();
  }

  /**
   * The clock guard: voter `index`'s wall clock stepped forward by `stepMs` (more than the clock
   * guard) since this engine last read it, so it may have expired held locks early: it does not
   * count toward this engine's quorums for `forMs` (the restart guard, or the longest ttl where
   * that is off). Logged (which voter, by how much, until when) and emitted as 'node-abstaining'
   * with cause 'clock'. This engine's own evidence (its monotonic clock against one voter): it
   * excludes the voter here only; other engines learn of a step through markForEveryClient.
   */
  private noteStep(
    index: number,
    stepMs: number,
    forMs: number,
    reason = `its wall clock stepped forward by ${Math.round(stepMs)} ms since this engine last read it ` +
      '(more than clockGuard), so it may have expired held locks early',
    quiet = false,
  ): void {
    const now = this.runtime.now();
    const wasCounting = this.excludedUntil[index]! <= now;
    this.excludedUntil[index] = Math.max(this.excludedUntil[index]!, now + forMs);
    this.abstentions.extend(index, now + forMs);
    if (!wasCounting) return;
    this.exclusions++;
    const node = this.list[index]!.label;
    const untilIso = new Date(this.runtime.wallNow() + forMs).toISOString();
    if (!quiet)
      this.logger.warn(
        `Redis node ${node} does not count toward this engine's lock quorums until ${untilIso}: ${reason}. ` +
          'Sync its clock (NTP slews small offsets; a step this large is a misconfigured or resumed machine).',
      );
    if (this.events.observed) {
      this.events.emit({
        type: 'node-abstaining',
        resources: [],
        node,
        durationMs: forMs,
        reason,
        cause: 'clock',
      });
    }
  }

  /**
   * The clock guard for every client: voter `index` stepped forward and, in that round, its clock
   * was ahead of a quorum of the others' (VoterClocks.confirmed), so it goes under the restart
   * guard on the voter itself (scripts/clock-mark.ts): every engine, also one that never read it
   * before the step, refuses its grants until the guard has passed there. A Redis Cluster voter
   * marks the masters whose clocks are past the voters' time plus the clock guard (the reading came
   * from one of them). Logged once per marking; a voter that cannot be marked or does not answer
   * stays excluded here.
   */
  private markForEveryClient(index: number): void {
    const voter = this.list[index]!;
    const forMs = this.settings.excludeForMs;
    const votersTime = this.clocks.voterTime(this.runtime.now());
    const steppedPast = votersTime === undefined ? undefined : votersTime + this.settings.thresholdMs;
    const marking = voter.markClockStep?.(forMs, steppedPast);
    if (!marking) return;
    marking.then(
      ({ abstainMs, countersDropped }) => {
        if (abstainMs <= 0) {
          this.logger.warn(
            `Redis node ${voter.label}: its clock stepped forward, but none of its servers' clocks was ahead ` +
              "of the voters' time when it was marked, so none was marked for every client; it still does " +
              "not count toward this engine's quorums.",
          );
          return;
        }
        const until = new Date(this.runtime.wallNow() + abstainMs).toISOString();
        this.logger.warn(
          `Redis node ${voter.label} is under the restart guard for every client until ${until}: its wall ` +
            `clock stepped forward and is ahead of at least ${this.quorum} of the other voters' by more than ` +
            `clockGuard (${this.settings.thresholdMs} ms), read in the same round, so locks there may have ` +
            `expired early (${countersDropped} fence counters dropped: they start again from its clock).`,
        );
      },
      (err: unknown) => {
        this.logger.warn(
          `Redis node ${voter.label}: its clock stepped forward, but marking it for every client failed ` +
            `(${voter.failureReason(err)}); it still does not count toward this engine's quorums.`,
        );
      },
    );
  }
}
