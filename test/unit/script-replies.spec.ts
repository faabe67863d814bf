import { decodeAcquireReply } from '../../lib/core/scripts/acquire.js';
import {
  decodeExtendManyReply,
  decodeExtendOneReply,
  decodeExtendReply,
  extendArgs,
  extendManyCall,
} from '../../lib/core/scripts/extend.js';
import { decodeSlotReply } from '../../lib/core/scripts/semaphore.js';
import { clockOf, wasExtended } from '../../lib/core/engine/extend-batcher.js';
import { realRuntime } from '../../lib/core/runtime.js';
import { settingsArg } from '../../lib/core/scripts/settings.js';
import { decodeWakeMessage, LockValues, MULTI_RESOURCE_MARK } from '../../lib/core/scripts/keys.js';
import { quorumOf } from '../../lib/core/quorum/voters.js';

describe('the TypeScript side of the Lua contract (no Redis)', () => {
  test('acquire replies decode to granted / busy / abstaining', () => {
    expect(decodeAcquireReply(1_700_000_000_000_001)).toEqual({
      kind: 'granted',
      tokens: [1_700_000_000_000_001],
    });
    expect(decodeAcquireReply([1, 5, 9])).toEqual({ kind: 'granted', tokens: [5, 9] });
    expect(decodeAcquireReply([0, 740, 'abc:1', 1_700_000_000_123_456])).toEqual({
      kind: 'busy',
      retryAfterMs: 740,
      holder: 'abc:1',
      clockUs: 1_700_000_000_123_456,
    });
    expect(decodeAcquireReply([-1, 59_000])).toEqual({ kind: 'abstaining', forMs: 59_000 });
    expect(decodeAcquireReply([-1, 2_000, 5_000])).toEqual({
      kind: 'abstaining',
      forMs: 2_000,
      clockBehindMs: 5_000,
    });
    expect(() => decodeAcquireReply('OK')).toThrow(TypeError);
  });

  test('wake messages decode by tag; anything else is ignored', () => {
    expect(decodeWakeMessage('H abc:7 abc:6 1700000000000001 1700000000123456')).toEqual({
      kind: 'handed',
      value: 'abc:7',
      cause: 'abc:6',
      token: 1700000000000001,
      clockUs: 1700000000123456,
    });
    expect(decodeWakeMessage('T abc:7* abc:6')).toEqual({ kind: 'turn', value: 'abc:7*', cause: 'abc:6' });
    for (const junk of ['', 'hello', 'H abc:7 abc:6 x y', 'T abc:7', 'X a b', 'H a b 1']) {
      expect(decodeWakeMessage(junk)).toBeUndefined();
    }
  });

  test('extend replies and the batched call', () => {
    expect(decodeExtendReply(1)).toBe(true);
    expect(decodeExtendReply(0)).toBe(false);
    expect(decodeExtendManyReply([1, 0, 1], 3)).toEqual([true, false, true]);
    expect(decodeExtendManyReply(null, 2)).toEqual([false, false]);
    expect(
      extendManyCall([
        { keys: ['a'], value: 'v1', ttlMs: 1000.2 },
        { keys: ['b', 'c'], value: 'v2', ttlMs: 500 },
      ]),
    ).toEqual({ keys: ['a', 'b', 'c'], args: [2, 1, 'v1', 1001, 2, 'v2', 500] });
  });

  test('under the clock guard grants, slot grants and extension replies carry the clock', () => {
    const clock = 1_700_000_000_123_456;
    // One resource: {token, clock} (a plain lock), {2, token, clock} (a reader's grant); the pair
    // is never read as an abstention, nor as a grant of several resources whose first token is 1 or 2.
    expect(decodeAcquireReply([1_700_000_000_000_077, clock])).toEqual({
      kind: 'granted',
      tokens: [1_700_000_000_000_077],
      clockUs: clock,
    });
    expect(decodeAcquireReply([1, clock])).toEqual({ kind: 'granted', tokens: [1], clockUs: clock });
    expect(decodeAcquireReply([2, clock])).toEqual({ kind: 'granted', tokens: [2], clockUs: clock });
    expect(decodeAcquireReply([-1, 59_000])).toEqual({ kind: 'abstaining', forMs: 59_000 });
    expect(decodeAcquireReply([2, 77, clock])).toEqual({ kind: 'granted', tokens: [77], clockUs: clock });
    expect(decodeAcquireReply([2, 5, 9, clock])).toEqual({ kind: 'granted', tokens: [5, 9], clockUs: clock });
    expect(decodeSlotReply([2, 1, 42, clock, 0, 1])).toEqual({
      kind: 'granted',
      index: 1,
      token: 42,
      free: [0, 1],
      clockUs: clock,
    });
    expect(decodeSlotReply([1, 0, 42, 0])).toEqual({ kind: 'granted', index: 0, token: 42, free: [0] });
    // EXTEND: the clock when extended, negated when refused; 1 / 0 without the guard.
    expect(extendArgs({ keys: ['a'], value: 'v', ttlMs: 9.5 }, true)).toEqual(['v', 10, 'c']);
    expect(extendArgs({ keys: ['a'], value: 'v', ttlMs: 9.5 })).toEqual(['v', 10]);
    const extended = decodeExtendOneReply(clock);
    expect([...extended]).toEqual([true]);
    expect(extended.clockUs).toBe(clock);
    const refused = decodeExtendOneReply(-clock);
    expect([...refused]).toEqual([false]);
    expect(refused.clockUs).toBe(clock);
    expect(decodeExtendOneReply(1).clockUs).toBeUndefined();
    expect(decodeExtendOneReply(0).clockUs).toBeUndefined();
    // EXTEND_MANY: the clock after the answers.
    expect(extendManyCall([{ keys: ['a'], value: 'v', ttlMs: 5 }], true).args).toEqual([1, 1, 'v', 5, 'c']);
    const many = decodeExtendManyReply([1, 0, clock], 2);
    expect([...many]).toEqual([true, false]);
    expect(many.clockUs).toBe(clock);
    expect(decodeExtendManyReply([1, 0], 2).clockUs).toBeUndefined();
    // One lock's outcome in the batcher: one number.
    expect([wasExtended(clock), clockOf(clock)]).toEqual([true, clock]);
    expect([wasExtended(-clock), clockOf(-clock)]).toEqual([false, clock]);
    expect([wasExtended(1), clockOf(1)]).toEqual([true, undefined]);
    expect([wasExtended(0), clockOf(0)]).toEqual([false, undefined]);
  });

  test('the settings travel as one argument with one layout for every script (safe-side rounding)', () => {
    const settings = {
      guardMs: 0,
      guardKey: 'g',
      fenceIdleMs: 1000,
      turnMs: 200,
      queueIdleMs: 1000,
      seedWindowMs: 100,
    };
    // guardMs fenceIdleMs seedWindowMs queueIdleMs turnMs clock
    expect(settingsArg(settings)).toBe('0 1000 100 1000 200 0');
    expect(settingsArg({ ...settings, clockReadings: true })).toBe('0 1000 100 1000 200 1');
    // A fraction: the window rounds down, durations round up (never below what was asked).
    expect(settingsArg({ ...settings, guardMs: 10.2, seedWindowMs: 99.9, turnMs: 0.5 })).toBe(
      '11 1000 99 1000 1 0',
    );
  });

  test('lock values name their engine channel; several resources are marked', () => {
    const values = new LockValues(realRuntime);
    const one = values.next(false);
    const many = values.next(true);
    expect(one).not.toBe(many.slice(0, -1));
    expect(many.endsWith(MULTI_RESOURCE_MARK)).toBe(true);
    // The channel the scripts derive from a value (its text before ':') is the engine's own.
    expect(values.channel.endsWith(one.split(':')[0]!)).toBe(true);
    expect(values.channel.endsWith(many.split(':')[0]!)).toBe(true);
  });

  test('the quorum is a strict majority', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });
});
