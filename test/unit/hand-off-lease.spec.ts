import {
  countHandOffs,
  handOffClockStepped,
  handOffLeaseEnd,
  type HandOff,
} from '../../lib/core/engine/hand-off.js';

const drift = (ms: number) => Math.floor(ms * 0.01) + 2;
const handOff = (node: number, clockUs: number, value = 'w:1'): HandOff => ({
  node,
  value,
  token: 10 + node,
  clockUs,
});

describe('the lease of a lock handed over (pure arithmetic)', () => {
  test("a voter's lease is timed from the waiter's own send time, plus the voter's clock difference", () => {
    // Sent at 1000 ms (waiter clock); the voter's clock read 5,000,000 us in that reply and
    // 5,030,000 us when it handed over: the hand-over was at least 30 ms after the send.
    const end = handOffLeaseEnd(handOff(0, 5_030_000), { sentAt: 1000, clockUs: 5_000_000 }, 400, drift);
    expect(end).toBe(1000 + 430 - drift(430));
  });

  test('a majority of countable hand-overs is needed; the lock lasts as long as the shortest counted lease', () => {
    const clocks = [
      { sentAt: 1000, clockUs: 0 },
      { sentAt: 1000, clockUs: 0 },
      { sentAt: 1010, clockUs: 0 },
      undefined, // no busy reply from voter 3: its hand-over cannot be timed
    ];
    const handOffs = [handOff(0, 10_000), handOff(1, 20_000), handOff(2, 0), handOff(3, 50_000)];
    const counted = countHandOffs(handOffs, clocks, 'w:1', 3, 400, drift)!;
    expect(counted.counted.map((h) => h.node).sort()).toEqual([0, 1, 2]);
    // Leases end at 1000+410-6, 1000+420-6, 1010+400-6: the third-longest is 1404.
    expect(counted.until).toBe(1404);
    expect(countHandOffs(handOffs.slice(0, 2), clocks, 'w:1', 3, 400, drift)).toBeUndefined();
  });

  test('hand-overs to another value (one the waiter gave up) do not count', () => {
    const clocks = [0, 1, 2].map(() => ({ sentAt: 0, clockUs: 0 }));
    const handOffs = [handOff(0, 0, 'w:1'), handOff(1, 0, 'w:0'), handOff(2, 0, 'w:1')];
    expect(countHandOffs(handOffs, clocks, 'w:1', 2, 400, drift)?.counted).toHaveLength(2);
    expect(countHandOffs(handOffs, clocks, 'w:1', 3, 400, drift)).toBeUndefined();
  });
});

describe('hand-over leases and clock steps', () => {
  const reading = { sentAt: 1000, clockUs: 5_000_000_000 };

  it("a voter whose clock stepped forward between the waiter's reading and the hand-over is not counted", () => {
    // 300 ms passed here between the reading and the message; the voter's clock moved 30.3 s.
    const stepped = { node: 0, value: 'v', token: 7, clockUs: 5_030_300_000, receivedAt: 1300 };
    const steady = { node: 1, value: 'v', token: 7, clockUs: 5_000_290_000, receivedAt: 1300 };
    expect(handOffClockStepped(stepped, reading, 100)).toBe(true);
    expect(handOffClockStepped(steady, reading, 100)).toBe(false);
    const clocks = [reading, reading];
    expect(countHandOffs([stepped, steady], clocks, 'v', 2, 400, drift, 100)).toBeUndefined();
    expect(countHandOffs([stepped, steady], clocks, 'v', 1, 400, drift, 100)?.counted).toEqual([steady]);
  });
});
