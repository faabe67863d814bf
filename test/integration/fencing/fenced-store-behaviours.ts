/*
 * The behaviour of a fenced store, one table for every implementation: the real FencedWriter (Redis
 * hashes) and FencedTable (PostgreSQL rows), and their in-memory doubles of nest-quorum-lock/testing.
 * Each row drives a store through the same calls; fenced-doubles.spec.ts runs it against a real
 * store and its double and then compares, call by call, what each returned or threw.
 */

/** What a row expects of an accepted or refused write. */
export interface WriteOutcome {
  readonly accepted: boolean;
  readonly lastToken: number;
}

/** A fenced read: whether it was accepted, the values it gave (without the token), the token after it. */
export interface ReadOutcome extends WriteOutcome {
  /** Fields or columns other than the key and the token; unset (`NULL`) columns left out. */
  readonly values: Record<string, string> | undefined;
}

/** What the store holds for a key, looked at directly (redis HGETALL, SQL SELECT). */
export interface Stored {
  readonly values: Record<string, string>;
  readonly token: number;
}

/** One call as it went: what it returned as the store's API gives it, or what it threw. */
export type Call =
  | { readonly call: string; readonly reply: unknown }
  | { readonly call: string; readonly threw: string; readonly message: string };

/**
 * A fenced store under test, with values as strings (hash fields; `text` columns). It records each
 * call of the store's own API in `calls`, for the comparison of a double with its real store.
 */
export interface FencedStoreUnderTest {
  /** What the store keeps the token in (the hash's fence field, the table's token column). */
  readonly tokenName: string;
  read(key: string, token: unknown): Promise<ReadOutcome>;
  write(key: string, token: unknown, values: Record<string, string>): Promise<WriteOutcome>;
  /** Undefined when the store holds nothing for the key. */
  stored(key: string): Promise<Stored | undefined>;
  readonly calls: Call[];
}

export interface FencedBehaviour {
  readonly name: string;
  run(store: FencedStoreUnderTest): Promise<void>;
}

/** Tokens as real locks issue them: counters seeded from a node's clock in microseconds (16 digits). */
const T = 1_765_012_345_678_901;

export const FENCED_BEHAVIOURS: FencedBehaviour[] = [
  {
    name: 'a write to a missing key is accepted and creates it with the token',
    async run(store) {
      expect(await store.write('alice', 10, { balance: '100' })).toEqual({ accepted: true, lastToken: 10 });
      expect(await store.stored('alice')).toEqual({ values: { balance: '100' }, token: 10 });
    },
  },
  {
    name: 'a higher token overwrites; a lower one is refused with the higher token and changes nothing',
    async run(store) {
      await store.write('a', 10, { balance: '100', note: 'ten' });
      expect(await store.write('a', 11, { balance: '90' })).toEqual({ accepted: true, lastToken: 11 });
      expect(await store.write('a', 7, { balance: '1', note: 'stale' })).toEqual({
        accepted: false,
        lastToken: 11,
      });
      expect(await store.stored('a')).toEqual({ values: { balance: '90', note: 'ten' }, token: 11 });
    },
  },
  {
    name: 'an equal token is the same grant: read, write, write again are accepted',
    async run(store) {
      expect(await store.read('job', 5)).toMatchObject({ accepted: true, lastToken: 5 });
      expect(await store.write('job', 5, { note: 'running' })).toEqual({ accepted: true, lastToken: 5 });
      expect(await store.write('job', 5, { note: 'done' })).toEqual({ accepted: true, lastToken: 5 });
      expect(await store.write('job', 4, { note: 'late' })).toEqual({ accepted: false, lastToken: 5 });
      expect(await store.stored('job')).toEqual({ values: { note: 'done' }, token: 5 });
    },
  },
  {
    name: 'a fenced read of a missing key records its token there: an older holder cannot create it',
    async run(store) {
      expect(await store.read('new', 8)).toEqual({ accepted: true, values: {}, lastToken: 8 });
      expect(await store.stored('new')).toEqual({ values: {}, token: 8 });
      expect(await store.write('new', 7, { balance: '5' })).toEqual({ accepted: false, lastToken: 8 });
      expect(await store.stored('new')).toEqual({ values: {}, token: 8 });
    },
  },
  {
    name: 'a newer reader makes an older holder stale: its write and its read are refused',
    async run(store) {
      await store.write('bob', 1, { balance: '500' });
      expect(await store.read('bob', 2)).toEqual({
        accepted: true,
        values: { balance: '500' },
        lastToken: 2,
      });
      // Holder 2 is paused after its read; its lock passes to holder 3, which reads the same balance.
      expect(await store.read('bob', 3)).toEqual({
        accepted: true,
        values: { balance: '500' },
        lastToken: 3,
      });
      expect(await store.write('bob', 2, { balance: '400' })).toEqual({ accepted: false, lastToken: 3 });
      expect(await store.read('bob', 2)).toMatchObject({ accepted: false, lastToken: 3 });
      expect(await store.write('bob', 3, { balance: '450' })).toEqual({ accepted: true, lastToken: 3 });
      expect(await store.stored('bob')).toEqual({ values: { balance: '450' }, token: 3 });
    },
  },
  {
    name: 'tokens as real locks issue them (16 digits) compare exactly, and a refusal reports the exact one',
    async run(store) {
      expect(await store.write('big', T, { balance: '1' })).toEqual({ accepted: true, lastToken: T });
      expect(await store.read('big', T - 1)).toMatchObject({ accepted: false, lastToken: T });
      expect(await store.write('big', T - 1, { balance: '2' })).toEqual({ accepted: false, lastToken: T });
      expect(await store.read('big', T + 1)).toEqual({
        accepted: true,
        values: { balance: '1' },
        lastToken: T + 1,
      });
      expect(await store.stored('big')).toEqual({ values: { balance: '1' }, token: T + 1 });
    },
  },
  {
    name: 'a write sets only the values it names; the others keep theirs',
    async run(store) {
      await store.write('p', 3, { balance: '10', note: 'opened' });
      await store.write('p', 4, { note: 'paid' });
      expect(await store.read('p', 5)).toEqual({
        accepted: true,
        values: { balance: '10', note: 'paid' },
        lastToken: 5,
      });
    },
  },
  {
    name: 'holders one after another: each write is judged against the highest token so far',
    async run(store) {
      const outcomes = [];
      for (const token of [5, 9, 7, 9, 12, 3, 12]) {
        outcomes.push(await store.write('seq', token, { balance: String(token) }));
      }
      expect(outcomes).toEqual([
        { accepted: true, lastToken: 5 },
        { accepted: true, lastToken: 9 },
        { accepted: false, lastToken: 9 },
        { accepted: true, lastToken: 9 },
        { accepted: true, lastToken: 12 },
        { accepted: false, lastToken: 12 },
        { accepted: true, lastToken: 12 },
      ]);
      expect(await store.stored('seq')).toEqual({ values: { balance: '12' }, token: 12 });
    },
  },
  {
    name: 'keys are fenced each on its own',
    async run(store) {
      await store.write('k1', 100, { balance: '1' });
      expect(await store.write('k2', 3, { balance: '2' })).toEqual({ accepted: true, lastToken: 3 });
      expect(await store.read('k2', 3)).toEqual({ accepted: true, values: { balance: '2' }, lastToken: 3 });
      expect(await store.stored('k1')).toEqual({ values: { balance: '1' }, token: 100 });
    },
  },
  {
    name: 'a token that is not a positive safe integer is refused before anything is stored',
    async run(store) {
      for (const bad of [0, -1, 1.5, Number.NaN, '7', 2 ** 53, undefined]) {
        await expect(store.write('bad', bad, { balance: '1' })).rejects.toThrow(
          /A fencing token must be a positive safe integer/,
        );
        await expect(store.read('bad', bad)).rejects.toThrow(
          /A fencing token must be a positive safe integer/,
        );
      }
      expect(await store.stored('bad')).toBeUndefined();
    },
  },
  {
    name: 'the token cannot be written as a value: the store sets it itself',
    async run(store) {
      await expect(store.write('t', 5, { [store.tokenName]: '99' })).rejects.toThrow(/cannot set/);
      expect(await store.stored('t')).toBeUndefined();
    },
  },
];
