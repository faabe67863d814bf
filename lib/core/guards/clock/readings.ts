import { CLOCK_WINDOW_US } from '../../scripts/acquire.js';
import { StepSuspects } from './step-suspects.js';

/**
 * Drift between a voter's clock and this machine's monotonic clock never taken for a step: 1000 ppm
 * (500 ppm each for the voter and this machine), so that drift over long idle periods never is.
 */
const DRIFT_ALLOWANCE = 0.001;

/**
 * How old a voter's last full reading may be for a grant to be judged against it by the window
 * alone (see {@link VoterClocks.expectedUs}): its drift allowance then adds at most 1 ms.
 */
const WINDOW_REFERENCE_MS = 1000;

/**
 * The voters' time as this engine knows it: per voter, the offset of its wall clock from this
 * engine's monotonic clock, estimated from the clock readings its replies carry (a busy reply
 * carries the voter's clock). Nothing here reads the client's own wall clock: a client whose clock
 * is seconds off still stamps its place in line, and proposes fence seeds, in the voters' time.
 *
 * An offset is read as (voter clock) - (midpoint of the request's send and reply times), so it is
 * off by at most half a round trip; the newest reading of a voter replaces the older one (a voter
 * whose clock steps is followed at once). The voters' time is the median over the voters read so
 * far: one voter whose clock stepped, or a minority, does not move it. Every instant given to it
 * (`sentAt`, `receivedAt`, `at`, `startedAt`) is the engine's monotonic clock.
 */
export class VoterClocks {
  /** Per voter: its clock (ms) minus the engine's monotonic clock at the reading; NaN until read. */
  private readonly offsets: Float64Array;
  /**
   * Per voter, the bounds of that offset at its last reading (the voter read its clock somewhere
   * between the request's sending and the reply's arrival), and when that was: what a later
   * reading is compared with to see a step.
   */
  private readonly low: Float64Array;
  private readonly high: Float64Array;
  private readonly readAt: Float64Array;
  /** The voters whose clock this engine saw step forward (see {@link confirmed}). */
  private readonly suspects: StepSuspects;
  /**
   * The voters confirmed by the last {@link note} or {@link noteWithin}: a voter whose clock this
   * engine saw step forward and whose clock, in that same round, was ahead of at least a quorum of
   * the other voters' by more than the threshold, round trips allowed for (the bounds of each
   * reading). Evidence of the voters against each other, not against this engine's clock: a client
   * whose own clock stood still (a suspended machine) sees every voter move alike, and confirms
   * none. Each voter is confirmed once per step. Valid until the next {@link note}
   * (the suspects' own list, not a copy).
   */
  readonly confirmed: readonly number[];
  /** Room to sort the offsets in (medianOffset). */
  private readonly scratch: Float64Array;
  /** The median of the known offsets; NaN when none is known, undefined when it must be recomputed. */
  private median: number | undefined = Number.NaN;
  /**
   * Test control only (the fault suite's control of waiting order under a stepped client clock):
   * stamp waiting tickets with this process's wall clock, as before tickets followed the voters' time.
   */
  clientClockTickets = false;
  /** The runtime's clocks, for the control above only. */
  wallClock: (() => number) | undefined;
  monotonic: (() => number) | undefined;

  constructor(
    count: number,
    /**
     * Steps up to this many ms (plus drift) are not reported by {@link note}; 0: none is. The
     * smallest clock guard of the locks taken so far (see {@link guardLocksOf}).
     */
    private stepThresholdMs = 0,
    /** How many other voters of one round a voter's clock must be ahead of to be confirmed: a quorum. */
    quorum = Math.floor(count / 2) + 1,
  ) {
    this.offsets = new Float64Array(count).fill(Number.NaN);
    this.low = new Float64Array(count).fill(Number.NaN);
    this.high = new Float64Array(count).fill(Number.NaN);
    this.readAt = new Float64Array(count).fill(Number.NaN);
    this.scratch = new Float64Array(count);
    this.suspects = new StepSuspects(count, quorum);
    this.confirmed = this.suspects.confirmed;
  }

  /**
   * Records voter `index`'s clock, `clockUs` microseconds, read in its reply to a request sent at
   * `sentAt` and answered at `receivedAt`. Returns by how many ms the voter's clock surely stepped
   * since its previous reading (positive: forward), beyond the step threshold plus DRIFT_ALLOWANCE
   * of the time between the readings; 0 when it did not, or when this is the first reading. A reply
   * that waited in this process (a paused or busy event loop) only widens the bounds: it cannot look
   * like a step.
   */
  note(index: number, sentAt: number, receivedAt: number, clockUs: number): number {
    const clockMs = clockUs / 1000;
    const low = clockMs - receivedAt;
    const high = clockMs - sentAt;
    let step = 0;
    if (this.stepThresholdMs > 0 && !Number.isNaN(this.readAt[index]!)) {
      const allowance = this.stepThresholdMs + (sentAt - this.readAt[index]!) * DRIFT_ALLOWANCE;
      const forward = low - this.high[index]!;
      const back = this.low[index]! - high;
      if (forward > allowance) step = forward;
      else if (back > allowance) step = -back;
    }
    this.low[index] = low;
    this.high[index] = high;
    this.readAt[index] = receivedAt;
    this.suspects.roundOf[index] = sentAt;
    this.suspects.roundHigh[index] = high;
    this.offsets[index] = clockMs - (sentAt + receivedAt) / 2;
    this.median = undefined;
    if (this.suspects.confirmed.length > 0) this.suspects.confirmed.length = 0;
    if (step > 0) this.suspects.add(index, sentAt, low, high, this.stepThresholdMs);
    else if (this.suspects.count > 0)
      this.suspects.compare(index, sentAt, high, receivedAt, this.stepThresholdMs);
    return step;
  }

  /**
   * Where this engine expects voter `index`'s clock, µs, for a request sent at `sentAt`: the middle
   * of its last reading's bounds. A grant within CLOCK_WINDOW_US of it then replies without the
   * clock (scripts/acquire.ts), and {@link noteWithin} records it. That reply is proof enough: its
   * offset was at most CLOCK_WINDOW_US from the last reading's, below any step {@link note} reports
   * (the threshold plus drift); a clock that stepped is outside the window, and its reply carries
   * the clock. Undefined (the reply carries the clock) without a reading, when the threshold is
   * below 8 windows, when the last reading is older than WINDOW_REFERENCE_MS (the reference of the
   * step check stays a reading at most that old, as when every grant carried the clock), and when
   * its round trip was longer than the window.
   */
  expectedUs(index: number, sentAt: number): number | undefined {
    if (this.stepThresholdMs * 1000 < 8 * CLOCK_WINDOW_US) return undefined;
    if (!(sentAt - this.readAt[index]! <= WINDOW_REFERENCE_MS)) return undefined; // NaN: never read
    // Round trips longer than the window (a loaded machine or a far voter) would miss it: the reply
    // carries the clock anyway, so send nothing (the next reading tells when they are short again).
    if (this.high[index]! - this.low[index]! > CLOCK_WINDOW_US / 1000) return undefined;
    // Whole ms (in µs): half a ms is far inside the window.
    return Math.round(sentAt + (this.low[index]! + this.high[index]!) / 2) * 1000;
  }

  /**
   * Voter `index` granted within CLOCK_WINDOW_US of `expectedUs` ({@link expectedUs}) a request sent
   * at `sentAt`: no step. Its reading stays the reference; the round learns the highest its offset
   * can have been, to compare it with that round's suspects (see {@link confirmed}).
   */
  noteWithin(index: number, sentAt: number, receivedAt: number, expectedUs: number): void {
    const high = (expectedUs + CLOCK_WINDOW_US) / 1000 - sentAt;
    this.suspects.roundOf[index] = sentAt;
    this.suspects.roundHigh[index] = high;
    if (this.suspects.confirmed.length > 0) this.suspects.confirmed.length = 0;
    if (this.suspects.count > 0) this.suspects.compare(index, sentAt, high, receivedAt, this.stepThresholdMs);
  }

  /**
   * Voters whose clock is offset from the voters' time (the median of every voter read) by more
   * than `thresholdMs` plus the uncertainty of the readings, when at least `quorum` others were
   * read: a steady offset is harmless to leases, but it hides steps (reported when the voters
   * connect).
   */
  disagreements(thresholdMs: number, quorum: number): Array<{ index: number; offsetMs: number }> {
    const found: Array<{ index: number; offsetMs: number }> = [];
    for (let index = 0; index < this.offsets.length; index++) {
      const offsetMs = this.offsetFromMedian(index, quorum);
      if (Math.abs(offsetMs) > thresholdMs + this.slack(index)) found.push({ index, offsetMs });
    }
    return found;
  }

  /**
   * By how many ms voter `index`'s clock is ahead of the voters' time beyond `thresholdMs` and the
   * uncertainty of the readings (as in {@link disagreements}); 0 when it is not, or when it or
   * fewer than `quorum` others were not read. Against the median of every voter, so at most a
   * minority of an odd number of voters is ever ahead of it. Allocates nothing: asked on every
   * grant under the clock guard.
   */
  aheadOfVoters(index: number, thresholdMs: number, quorum: number): number {
    const offsetMs = this.offsetFromMedian(index, quorum);
    if (!(offsetMs > thresholdMs)) return 0; // nearly always (NaN too): no slack to add up
    return offsetMs > thresholdMs + this.slack(index) ? offsetMs : 0;
  }

  /** Voter `index`'s offset minus the median of every voter's (NaN: it or fewer than `quorum` others unread). */
  private offsetFromMedian(index: number, quorum: number): number {
    const own = this.offsets[index]!;
    if (Number.isNaN(own)) return Number.NaN;
    let others = 0;
    for (let i = 0; i < this.offsets.length; i++)
      if (i !== index && !Number.isNaN(this.offsets[i]!)) others++;
    return others < quorum ? Number.NaN : own - this.medianOffset();
  }

  /** The uncertainty of voter `index`'s offset against the others': half its round trip and the longest other's. */
  private slack(index: number): number {
    let widest = 0;
    for (let i = 0; i < this.offsets.length; i++) {
      if (i !== index && !Number.isNaN(this.offsets[i]!))
        widest = Math.max(widest, this.high[i]! - this.low[i]!);
    }
    return (this.high[index]! - this.low[index]! + widest) / 2;
  }

  /** A lock with clock guard `ms` is taken: steps above it must be seen. */
  guardLocksOf(ms: number): void {
    if (ms > 0 && ms < this.stepThresholdMs) this.stepThresholdMs = ms;
  }

  /** Whether any voter's clock has been read. */
  get known(): boolean {
    return !Number.isNaN(this.medianOffset());
  }

  /**
   * The voters' time, epoch ms as they keep it, at the monotonic instant `at`; undefined when no
   * voter's clock has been read yet.
   */
  voterTime(at: number): number | undefined {
    const offset = this.medianOffset();
    return Number.isNaN(offset) ? undefined : at + offset;
  }

  /**
   * The fence seed an attempt sent at `at` proposes, µs: the middle of the `windowMs` window above
   * the voters' time, so that voters within half a window of it all take it. Undefined until a
   * voter's clock is known (the bootstrap reads them): a node judges its own clock against the
   * proposal (scripts/fence.ts), never against this process's wall clock.
   */
  seedProposalUs(at: number, windowMs: number): number | undefined {
    const offset = this.medianOffset();
    return Number.isNaN(offset) ? undefined : Math.floor((at + offset) * 1000 + windowMs * 500);
  }

  /**
   * The waiting ticket of an acquire that started at `startedAt`: the voters' time then, in ms with
   * microsecond digits, the same string for every voter. '' while no voter's clock is known: the
   * caller's first attempt then does not queue, and its busy replies tell the clocks.
   */
  ticket(startedAt: number): string {
    if (this.clientClockTickets) return String(this.wallClock!() - (this.monotonic!() - startedAt));
    const time = this.voterTime(startedAt);
    return time === undefined ? '' : time.toFixed(3);
  }

  /**
   * The median of the known offsets, recomputed after a reading. Under the clock guard every grant
   * is a reading and nearly every acquire asks for a ticket, so this allocates nothing: an
   * insertion sort into a scratch array (a handful of voters).
   */
  private medianOffset(): number {
    if (this.median !== undefined) return this.median;
    const sorted = this.scratch;
    let n = 0;
    for (let i = 0; i < this.offsets.length; i++) {
      const offset = this.offsets[i]!;
      if (Number.isNaN(offset)) continue;
      let j = n++;
      while (j > 0 && sorted[j - 1]! > offset) {
        sorted[j] = sorted[j - 1]!;
        j--;
      }
      sorted[j] = offset;
    }
    this.median =
      n === 0 ? Number.NaN : n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
    return this.median;
  }
}
