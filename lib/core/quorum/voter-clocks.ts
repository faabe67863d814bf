/**
 * The voters' time as this engine knows it: per voter, the offset of its wall clock from this
 * engine's monotonic clock, estimated from the clock readings its replies carry (a busy reply
 * carries the voter's clock). Nothing here reads the client's own wall clock: a client whose clock
 * is seconds off still stamps its place in line, and proposes fence seeds, in the voters' time.
 *
 * An offset is read as (voter clock) - (midpoint of the request's send and reply times), so it is
 * off by at most half a round trip; the newest reading of a voter replaces the older one (a voter
 * whose clock steps is followed at once). The voters' time is the median over the voters read so
 * far: one voter whose clock stepped, or a minority, does not move it.
 */
export class VoterClocks {
  /** Per voter: its clock (ms) minus performance.now() at the reading; NaN until read. */
  private readonly offsets: Float64Array;
  /** The median of the known offsets; NaN when none is known, undefined when it must be recomputed. */
  private median: number | undefined = Number.NaN;
  /**
   * Test control only (fault scenario S23's control run): stamp waiting tickets with this
   * process's wall clock, as the engine did before tickets followed the voters' time.
   */
  clientClockTickets = false;

  constructor(count: number) {
    this.offsets = new Float64Array(count).fill(Number.NaN);
  }

  /**
   * Records voter `index`'s clock, `clockUs` microseconds, read in its reply to a request sent at
   * `sentAt` and answered at `receivedAt` (both performance.now()).
   */
  note(index: number, sentAt: number, receivedAt: number, clockUs: number): void {
    this.offsets[index] = clockUs / 1000 - (sentAt + receivedAt) / 2;
    this.median = undefined;
  }

  /** Whether any voter's clock has been read. */
  get known(): boolean {
    return !Number.isNaN(this.medianOffset());
  }

  /**
   * The voters' time, epoch ms as they keep it, at the monotonic instant `at` (performance.now());
   * undefined when no voter's clock has been read yet.
   */
  voterTime(at: number): number | undefined {
    const offset = this.medianOffset();
    return Number.isNaN(offset) ? undefined : at + offset;
  }

  /**
   * The waiting ticket of an acquire that started at `startedAt` (performance.now()): the voters'
   * time then, in ms with microsecond digits, the same string for every voter. '' while no voter's
   * clock is known: the caller's first attempt then does not queue, and its busy replies tell the
   * clocks.
   */
  ticket(startedAt: number): string {
    if (this.clientClockTickets) return String(Date.now() - (performance.now() - startedAt));
    const time = this.voterTime(startedAt);
    return time === undefined ? '' : time.toFixed(3);
  }

  private medianOffset(): number {
    if (this.median !== undefined) return this.median;
    const known = Array.from(this.offsets).filter((o) => !Number.isNaN(o));
    known.sort((a, b) => a - b);
    const n = known.length;
    this.median =
      n === 0 ? Number.NaN : n % 2 === 1 ? known[(n - 1) / 2]! : (known[n / 2 - 1]! + known[n / 2]!) / 2;
    return this.median;
  }
}
