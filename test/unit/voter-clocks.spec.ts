import { VoterClocks } from '../../lib/core/quorum/voter-clocks.js';

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
