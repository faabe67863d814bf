import { READ_MARK, RELEASE, type AcquireVote } from '../../lib/core/scripts/index.js';
import { until, type Behaviour } from './harness.js';

/*
 * The read-write lock's row of the voter conformance table (behaviours.ts): readers share a key,
 * a writer is kept out by them and keeps later readers out while it waits, a reader's release
 * hands the key to the waiting writer, and the writer's release lets the readers at the head of
 * the line in. Through the Voter interface only: a reader is a value ending with READ_MARK.
 */

const LONG = 5_000;

/** The one token of a granted vote (fails on any other vote). */
function tokenOf(vote: AcquireVote, who: string): number {
  if (vote.kind !== 'granted') throw new Error(`expected a grant for ${who}, got ${JSON.stringify(vote)}`);
  expect(vote.tokens).toHaveLength(1);
  expect(Number.isSafeInteger(vote.tokens[0]) && vote.tokens[0]! > 0).toBe(true);
  return vote.tokens[0]!;
}

export const READ_BEHAVIOURS: Behaviour[] = [
  {
    id: 'read-write',
    title:
      'read-write: readers share a key (one token, not bumped); a writer waits for them and keeps later readers out; releases hand over to the writer, then to the readers at the head',
    async run({ voter, key, engine }) {
      const e = engine();
      await e.listen(voter);
      const reader = () => e.value() + READ_MARK;
      const [r1, r2, r3] = [reader(), reader(), reader()];
      const w = e.value();
      const k = key('rw');
      const t1 = tokenOf(await voter.acquire([k], r1, LONG, ''), 'r1');
      expect(tokenOf(await voter.acquire([k], r2, LONG, ''), 'r2')).toBe(t1); // shared, not bumped
      expect((await voter.inspectReaders?.(k))?.sort()).toEqual([r1, r2].sort());
      // A writer finds the readers: busy, and queued by its ticket.
      const busy = await voter.acquire([k], w, LONG, '100');
      if (busy.kind !== 'busy') throw new Error(`expected the writer busy, got ${JSON.stringify(busy)}`);
      // A later reader does not overtake the waiting writer.
      expect((await voter.acquire([k], r3, LONG, '200')).kind).toBe('busy');
      // The last reader's release hands the key to the writer, with a token above the readers'.
      await voter.letGo([k], r1, RELEASE);
      expect((await voter.inspect(k)).holder).not.toBe(w); // r2 still reads
      await voter.letGo([k], r2, RELEASE);
      await until(() => e.messages.some((m) => m.value === w), 'the key to be handed to the writer');
      const handed = e.messages.find((m) => m.value === w)!;
      if (handed.kind !== 'handed') throw new Error(`expected a hand-over, got ${JSON.stringify(handed)}`);
      expect(handed.token).toBeGreaterThan(t1);
      expect((await voter.inspect(k)).holder).toBe(w);
      expect((await voter.acquire([k], r3, LONG, '200')).kind).toBe('busy');
      // The writer's release gives the reader at the head its turn; its claim reads the writer's token.
      await voter.letGo([k], w, RELEASE);
      await until(() => e.messages.some((m) => m.value === r3), 'the readers to be given their turn');
      expect(e.messages.find((m) => m.value === r3)!.kind).toBe('turn');
      expect(tokenOf(await voter.acquire([k], r3, LONG, '200'), 'r3')).toBe(handed.token);
      expect(await voter.extend([{ keys: [k], value: r3, ttlMs: LONG }])).toEqual([true]);
      expect(await voter.extend([{ keys: [k], value: r1, ttlMs: LONG }])).toEqual([false]); // released
      expect(await voter.inspectReaders?.(k)).toEqual([r3]);
      await voter.letGo([k], r3, RELEASE);
      expect((await voter.inspect(k)).holder).toBeNull();
    },
  },
];
