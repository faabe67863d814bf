/*
 * The lease arithmetic of a lock handed over (pure functions, tested without Redis).
 *
 * A voter hands the lock over for the turn's length (`turnMs`), by its own clock, and says when
 * that was (its clock in the message). The waiter's earlier busy reply from the same voter, to a
 * request sent at `sentAt` (the waiter's clock), read that voter's clock earlier: so the hand-over
 * happened at least (clock in the message - that reading) after `sentAt`, less clock drift, and
 * the key outlives it by the turn. Each voter's lease is bounded that way without trusting clocks
 * across machines, and the lock is valid while a majority's are.
 */

/** A voter handed a lock to one of this engine's waiters (see scripts/queue.ts). */
export interface HandOff {
  /** Index of the voter. */
  readonly node: number;
  /** The waiter's lock value. */
  readonly value: string;
  /** The fencing token the voter issued with it. */
  readonly token: number;
  /** The voter's clock when it handed the lock over, microseconds. */
  readonly clockUs: number;
  /** When the waiter's engine received the message (performance.now); the hand-over came before. */
  readonly receivedAt?: number;
}

/** A voter's clock, read in a reply to a request sent at `sentAt` (performance.now) or later. */
export interface ClockReading {
  readonly sentAt: number;
  readonly clockUs: number;
}

/** Until when (performance.now) the lease of `handOff` surely lasts, given the waiter's `reading` of that voter. */
export function handOffLeaseEnd(
  handOff: HandOff,
  reading: ClockReading,
  turnMs: number,
  drift: (ms: number) => number,
): number {
  const voterMs = (handOff.clockUs - reading.clockUs) / 1000 + turnMs;
  return reading.sentAt + voterMs - drift(voterMs);
}

/** The hand-overs a waiter can count toward a lock. */
export interface CountedHandOffs {
  /** The `quorum` hand-overs whose leases last longest. */
  readonly counted: readonly HandOff[];
  /** When the lock's validity ends (performance.now): the shortest lease among `counted`. */
  readonly until: number;
}

/**
 * Whether the voter's clock moved forward by more than `clockGuardMs` beyond the time that passed
 * between the waiter's reading and the message: the hand-over cannot have happened after the
 * message arrived, so a voter whose two readings lie further apart than that stepped its clock in
 * between, and timing its lease from them would overestimate it by the step. (A step smaller than
 * the guard is covered by the validity, which is shortened by the guard.)
 */
export function handOffClockStepped(handOff: HandOff, reading: ClockReading, clockGuardMs: number): boolean {
  if (handOff.receivedAt === undefined) return false;
  const voterMs = (handOff.clockUs - reading.clockUs) / 1000;
  return reading.sentAt + voterMs > handOff.receivedAt + clockGuardMs;
}

/**
 * The hand-overs to `value` that can be counted (the waiter has a clock reading of their voter,
 * and that voter's clock did not step forward by more than `clockGuardMs` since), or undefined
 * when fewer than `quorum` can.
 */
export function countHandOffs(
  handOffs: readonly HandOff[],
  clocks: ReadonlyArray<ClockReading | undefined>,
  value: string,
  quorum: number,
  turnMs: number,
  drift: (ms: number) => number,
  clockGuardMs = 0,
): CountedHandOffs | undefined {
  const leases: Array<{ handOff: HandOff; until: number }> = [];
  for (const handOff of handOffs) {
    const reading = clocks[handOff.node];
    if (!reading || handOff.value !== value) continue;
    if (clockGuardMs > 0 && handOffClockStepped(handOff, reading, clockGuardMs)) continue;
    leases.push({ handOff, until: handOffLeaseEnd(handOff, reading, turnMs, drift) });
  }
  if (leases.length < quorum) return undefined;
  leases.sort((a, b) => b.until - a.until);
  const counted = leases.slice(0, quorum);
  return { counted: counted.map((l) => l.handOff), until: counted[quorum - 1]!.until };
}
