/*
 * The voters whose clock an engine saw step forward (VoterClocks.note), kept as suspects until the
 * other voters of the round that saw the step confirm it, or that round is long over: evidence of
 * the voters against each other, not against the engine's own clock.
 */

/**
 * How long a voter whose clock stepped stays a suspect, ms: the other voters' replies in the
 * round that saw the step arrive well within it (a round is bounded by nodeTimeout).
 */
const SUSPECT_WINDOW_MS = 10_000;

/**
 * Per voter, the round of its newest reading (VoterClocks records it) and, per voter whose clock
 * stepped forward, the round of that reading (NaN: none), the bounds of its offset then, and how
 * many other voters of that round its clock was ahead of by more than the threshold; a quorum of
 * them confirms it (VoterClocks.confirmed).
 */
export class StepSuspects {
  /**
   * Per voter: when the request behind its newest reading was sent, which names the round it was
   * read in: the readings of one round are compared with each other.
   */
  readonly roundOf: Float64Array;
  /**
   * Per voter: the highest its offset can have been in that round (the `high` of a reading; for a
   * grant within the expected window, the window's top): what a suspect of the round is compared with.
   */
  readonly roundHigh: Float64Array;
  /** How many voters are suspects: 0 (nearly always) skips every comparison. */
  count = 0;
  /** Suspects confirmed by the last reading, at most until the next one (VoterClocks.confirmed). */
  readonly confirmed: number[] = [];
  private readonly round: Float64Array;
  private readonly low: Float64Array;
  private readonly high: Float64Array;
  private readonly ahead: Int32Array;

  /** `quorum`: how many other voters of one round a voter's clock must be ahead of to be confirmed. */
  constructor(
    count: number,
    private readonly quorum: number,
  ) {
    this.roundOf = new Float64Array(count).fill(Number.NaN);
    this.roundHigh = new Float64Array(count);
    this.round = new Float64Array(count).fill(Number.NaN);
    this.low = new Float64Array(count);
    this.high = new Float64Array(count);
    this.ahead = new Int32Array(count);
  }

  /** Voter `index` stepped forward in the round sent at `sentAt`: compare it with that round's others. */
  add(index: number, sentAt: number, low: number, high: number, thresholdMs: number): void {
    if (Number.isNaN(this.round[index]!)) this.count++;
    this.round[index] = sentAt;
    this.low[index] = low;
    this.high[index] = high;
    let ahead = 0;
    for (let j = 0; j < this.roundOf.length; j++) {
      if (j !== index && this.roundOf[j] === sentAt && low - this.roundHigh[j]! > thresholdMs) ahead++;
    }
    this.ahead[index] = ahead;
    if (ahead >= this.quorum) this.confirm(index);
  }

  /** Voter `index`, read in the round sent at `sentAt` (offset at most `high`): compared with that round's suspects. */
  compare(index: number, sentAt: number, high: number, receivedAt: number, thresholdMs: number): void {
    for (let i = 0; i < this.round.length; i++) {
      const round = this.round[i]!;
      if (Number.isNaN(round) || i === index) continue;
      if (round === sentAt) {
        if (this.low[i]! - high > thresholdMs && ++this.ahead[i]! >= this.quorum) {
          this.confirm(i);
        }
      } else if (receivedAt - round > SUSPECT_WINDOW_MS) {
        this.clear(i); // its round is long over
      }
    }
  }

  private confirm(index: number): void {
    this.clear(index);
    this.confirmed.push(index);
  }

  private clear(index: number): void {
    this.round[index] = Number.NaN;
    this.count--;
  }
}
