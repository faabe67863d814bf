import { VoterClocks } from '../../lib/core/guards/clock/readings.js';
import { CLOCK_WINDOW_US } from '../../lib/core/scripts/acquire.js';

describe("VoterClocks: the voters' time as an engine knows it", () => {
  it('knows nothing before a reading: no ticket (the first attempt does not queue)', () => {
    const clocks = new VoterClocks(5);
    expect(clocks.known).toBe(false);
    expect(clocks.voterTime(100)).toBeUndefined();
    expect(clocks.ticket(100)).toBe('');
  });

  it('reads an offset at the midpoint of the round trip', () => {
    const clocks = new VoterClocks(3);
    // Sent at 100, answered at 104 (monotonic ms): the voter read 1_000_000_002 ms.
    clocks.note(0, 100, 104, 1_000_000_002_000);
    expect(clocks.voterTime(102)).toBe(1_000_000_002);
    expect(clocks.voterTime(1102)).toBe(1_000_001_002);
    expect(clocks.ticket(102)).toBe('1000000002.000');
  });

  it('takes the median: one voter whose clock stepped (or a minority) does not move it', () => {
    const clocks = new VoterClocks(5);
    const at = (ms: number) => ms * 1000;
    clocks.note(0, 0, 0, at(5_000));
    clocks.note(1, 0, 0, at(5_001));
    clocks.note(2, 0, 0, at(5_002));
    clocks.note(3, 0, 0, at(35_000)); // 30 s ahead
    clocks.note(4, 0, 0, at(-3_595_000)); // an hour behind
    expect(clocks.voterTime(0)).toBe(5_001);
    clocks.note(1, 0, 0, at(65_001)); // a second voter steps: still a minority
    expect(clocks.voterTime(0)).toBe(5_002);
  });

  it('the newest reading of a voter replaces the older one', () => {
    const clocks = new VoterClocks(1);
    clocks.note(0, 0, 2, 10_000);
    clocks.note(0, 50, 52, 90_000);
    expect(clocks.voterTime(51)).toBe(90);
  });
});

describe('VoterClocks: steps', () => {
  it('reports a forward step above the threshold, from the first reading after it', () => {
    const clocks = new VoterClocks(1, 500);
    expect(clocks.note(0, 0, 1, 1_000_000_000)).toBe(0); // baseline
    expect(clocks.note(0, 1000, 1001, 1_001_000_000)).toBe(0); // 1 s later, 1 s more
    const step = clocks.note(0, 2000, 2001, 1_032_000_000); // 1 s later, 31 s more
    expect(step).toBeGreaterThan(29_990);
    expect(step).toBeLessThanOrEqual(30_000);
    expect(clocks.note(0, 3000, 3001, 1_033_000_000)).toBe(0); // re-baselined
  });

  it('takes neither 500 ppm of drift over a long idle period nor a reply that waited in a paused process for a step', () => {
    const clocks = new VoterClocks(1, 100);
    clocks.note(0, 0, 1, 0);
    // Three hours later the voter's clock is 500 ppm (5.4 s) ahead of this monotonic clock.
    const later = 3 * 3600_000;
    expect(clocks.note(0, later, later + 1, (later + later * 0.0005) * 1000)).toBe(0);
    // This process was stopped for 5 s while the reply waited in its socket.
    expect(clocks.note(0, later + 10, later + 5010, (later + 5.4e3 + 12) * 1000)).toBe(0);
  });

  it('a step back is reported as negative, and nothing is reported with the guard off', () => {
    const clocks = new VoterClocks(1, 500);
    clocks.note(0, 0, 1, 3_600_000_000);
    expect(clocks.note(0, 10, 11, 10_000)).toBeLessThan(-3_599_000);
    const off = new VoterClocks(1, 0);
    off.note(0, 0, 1, 0);
    expect(off.note(0, 10, 11, 60_000_000)).toBe(0);
  });
});

describe('VoterClocks: confirming a step against the other voters (marking for every client)', () => {
  /** Five voters read in one round sent at `at` (answered 1 ms later), with these clocks in ms. */
  function round(clocks: VoterClocks, at: number, clocksMs: number[], order = [0, 1, 2, 3, 4]): number[] {
    const confirmed: number[] = [];
    for (const i of order) {
      clocks.note(i, at, at + 1, clocksMs[i]! * 1000);
      confirmed.push(...clocks.confirmed);
    }
    return confirmed;
  }
  const base = 1_000_000_000;

  it('confirms one voter that stepped forward ahead of a quorum of the others read in the same round', () => {
    const clocks = new VoterClocks(5, 500);
    expect(round(clocks, 0, [base, base, base, base, base])).toEqual([]);
    // 1 s later voter 2 stepped 30 s ahead; its reply comes first, the others' after it.
    const later = base + 1000;
    expect(round(clocks, 1000, [later, later, later + 30_000, later, later], [2, 0, 1, 3, 4])).toEqual([2]);
    // And in any order of the replies: here voter 2 answers last.
    const again = new VoterClocks(5, 500);
    round(again, 0, [base, base, base, base, base]);
    expect(round(again, 1000, [later, later, later + 30_000, later, later])).toEqual([2]);
  });

  it('confirms none when every voter moves alike (a client whose own clock stood still: a suspended machine)', () => {
    const clocks = new VoterClocks(5, 500);
    round(clocks, 0, [base, base, base, base, base]);
    // The monotonic clock says 1 s passed; every voter says 31 s: each is a step for this engine alone.
    const later = base + 31_000;
    const steps: number[] = [];
    const confirmed: number[] = [];
    for (let i = 0; i < 5; i++) {
      steps.push(clocks.note(i, 1000, 1001, later * 1000));
      confirmed.push(...clocks.confirmed);
    }
    expect(steps.every((s) => s > 29_000)).toBe(true);
    expect(confirmed).toEqual([]);
  });

  it('confirms none when a majority steps together (each stepped voter agrees with the others that stepped)', () => {
    const clocks = new VoterClocks(5, 500);
    round(clocks, 0, [base, base, base, base, base]);
    const later = base + 1000;
    expect(round(clocks, 1000, [later + 30_000, later + 30_000, later + 30_000, later, later])).toEqual([]);
  });

  it('compares only readings of the same round, with their round trips', () => {
    const clocks = new VoterClocks(5, 500);
    round(clocks, 0, [base, base, base, base, base]);
    // The others were read in earlier rounds only: no evidence against them.
    expect(clocks.note(2, 5000, 5001, (base + 35_000) * 1000)).toBeGreaterThan(29_000);
    expect(clocks.confirmed).toEqual([]);
    // A round whose replies took 40 s (a stalled network, or this process stopped) allows 40 s.
    const slow = new VoterClocks(5, 500);
    round(slow, 0, [base, base, base, base, base]);
    const sent = 1000;
    const at = base + 1000;
    slow.note(2, sent, sent + 40_000, (at + 31_000) * 1000);
    for (const i of [0, 1, 3, 4]) slow.note(i, sent, sent + 40_000, at * 1000);
    expect(slow.confirmed).toEqual([]);
  });
});

describe('VoterClocks: grants within the expected window (no clock in the reply)', () => {
  const base = 1_000_000_000;

  it('expects a clock only after a recent reading, with a threshold of at least 8 windows', () => {
    const clocks = new VoterClocks(2, 500);
    expect(clocks.expectedUs(0, 0)).toBeUndefined(); // never read
    clocks.note(0, 0, 2, base * 1000); // offset between base - 2 and base
    expect(clocks.expectedUs(0, 500)).toBe((base - 1 + 500) * 1000);
    expect(clocks.expectedUs(0, 1001)).toBe((base - 1 + 1001) * 1000); // readAt 2: 999 ms old
    expect(clocks.expectedUs(0, 1003)).toBeUndefined(); // older than 1 s: a full reading again
    expect(clocks.expectedUs(1, 500)).toBeUndefined();
    // A reading whose round trip was longer than the window: the grants would miss it.
    clocks.note(1, 0, 1 + CLOCK_WINDOW_US / 1000, base * 1000);
    expect(clocks.expectedUs(1, 500)).toBeUndefined();
    const small = new VoterClocks(1, 8 * (CLOCK_WINDOW_US / 1000) - 1);
    small.note(0, 0, 2, base * 1000);
    expect(small.expectedUs(0, 10)).toBeUndefined();
  });

  it('a grant within the window keeps the last reading as the reference: a later step is measured from it', () => {
    const clocks = new VoterClocks(1, 500);
    clocks.note(0, 0, 1, base * 1000);
    for (let at = 100; at <= 900; at += 100) clocks.noteWithin(0, at, at + 1, clocks.expectedUs(0, at)!);
    // The reading at 0 is still the reference: 1 s later, 600 ms more than expected is a step.
    expect(clocks.note(0, 1000, 1001, (base + 1600) * 1000)).toBeGreaterThan(500);
  });

  it('confirms a stepped voter against others that granted within their windows in the same round', () => {
    const clocks = new VoterClocks(5, 500);
    for (let i = 0; i < 5; i++) clocks.note(i, 0, 1, base * 1000);
    const sent = 500;
    const expected = [0, 1, 2, 3, 4].map((i) => clocks.expectedUs(i, sent)!);
    const confirmed: number[] = [];
    for (const i of [0, 1]) {
      clocks.noteWithin(i, sent, sent + 1, expected[i]!);
      confirmed.push(...clocks.confirmed);
    }
    // Voter 2 stepped 30 s ahead (its clock was outside the window: the reply carries it).
    expect(clocks.note(2, sent, sent + 1, (base + 500 + 30_000) * 1000)).toBeGreaterThan(29_000);
    confirmed.push(...clocks.confirmed);
    for (const i of [3, 4]) {
      clocks.noteWithin(i, sent, sent + 1, expected[i]!);
      confirmed.push(...clocks.confirmed);
    }
    expect(confirmed).toEqual([2]);
  });

  it('compares a suspect with the top of the others’ windows: no confirmation within the window', () => {
    // Voter 0 is ahead of the others by just over the threshold, less than it plus the window.
    const clocks = new VoterClocks(3, 500);
    for (let i = 0; i < 3; i++) clocks.note(i, 0, 0, base * 1000);
    const sent = 500;
    const expected = [0, 1, 2].map((i) => clocks.expectedUs(i, sent)!);
    clocks.note(0, sent, sent, (base + 500 + 501) * 1000);
    for (const i of [1, 2]) clocks.noteWithin(i, sent, sent, expected[i]!);
    expect(clocks.confirmed).toEqual([]);
  });
});
