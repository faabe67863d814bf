import { slotKey } from '../../lib/core/scripts/keys.js';
import {
  READ_MARK,
  RELEASE,
  TURN_MARK,
  type AcquireVote,
  type SlotVote,
  type WakeMessage,
} from '../../lib/core/scripts/index.js';
import type { Voter } from '../../lib/core/voter/voter-api.js';
import { READ_BEHAVIOURS } from './behaviours-read.js';
import { until, type Behaviour, type Engine, type Scene } from './harness.js';

/*
 * The rows of the voter conformance table: one behaviour each, a small scenario on one voter (and
 * other clients of its server where a behaviour needs them), through the Voter interface only.
 * Every row runs on every voter (drivers.ts) and fails against its mutation (mutations.ts).
 * Durations are stated once; `scene.slack` widens them under real time.
 */

/** A lease long enough not to run out during a row, unless the row waits for it. */
const LONG = 5_000;
/** A lease a row lets run out. */
const SHORT = 300;

/** The tokens of a granted vote (fails on any other vote). */
function tokensOf(vote: AcquireVote): readonly number[] {
  if (vote.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(vote)}`);
  for (const token of vote.tokens) expect(Number.isSafeInteger(token) && token > 0).toBe(true);
  return vote.tokens;
}

/** The one token of a granted vote for one resource. */
async function grant(
  voter: Voter,
  key: string,
  value: string,
  ttlMs = LONG,
  seedUs?: number,
): Promise<number> {
  const tokens = tokensOf(await voter.acquire([key], value, ttlMs, '', seedUs));
  expect(tokens).toHaveLength(1);
  return tokens[0]!;
}

/** Expects `x` within [lo, hi]. */
function within(x: number | null, lo: number, hi: number, what: string): void {
  if (x === null || x < lo || x > hi) throw new Error(`${what}: ${x} not within [${lo}, ${hi}]`);
}

/**
 * The least a duration of `ms` set after `since` (the scene's clock, read before the command that
 * set it) can have left now: less the time that passed since, as the scene's clock tells it (a
 * busy machine stretches a row's steps; a lease never shrinks faster), and 1 ms of rounding.
 */
function leastLeft(ms: number, since: number, now: number): number {
  return ms - (now - since) - 1;
}

/**
 * Grants a fresh key with a proposed seed 3/4 of the seed window above the voter's clock, and
 * expects the proposal as the token. A voter whose clock overtook the proposal before the grant
 * (a stalled machine) rightly gives its clock instead (>= the proposal): tried again on a new key,
 * at most 3 times. A token below the proposal fails at once.
 */
async function seededGrant(
  { voter, key, serverTimeUs, settings }: Scene,
  name: string,
  value: () => string,
): Promise<{ key: string; token: number }> {
  for (let attempt = 0; ; attempt++) {
    const k = key(`${name}-${attempt}`);
    await voter.inspect(k); // a round trip first: the voter is warm (and inspect writes nothing)
    const proposal = (await serverTimeUs()) + (settings.seedWindowMs * 1000 * 3) / 4;
    const token = await grant(voter, k, value(), LONG, proposal);
    if (token === proposal || token < proposal || attempt === 2) {
      expect(token).toBe(proposal);
      return { key: k, token };
    }
  }
}

/** Waits for the hand-over message to `value` on `engine`'s channel. */
async function handedTo(engine: Engine, value: string): Promise<Extract<WakeMessage, { kind: 'handed' }>> {
  await until(() => engine.messages.some((m) => m.value === value), `the lock to be handed to ${value}`);
  const message = engine.messages.find((m) => m.value === value)!;
  if (message.kind !== 'handed') throw new Error(`expected a hand-over, got ${JSON.stringify(message)}`);
  return message;
}

/** The slot index, token and free list of a granted slot vote (fails on any other vote). */
function slotOf(vote: SlotVote): { index: number; token: number; free: readonly number[] } {
  if (vote.kind !== 'granted') throw new Error(`expected a slot, got ${JSON.stringify(vote)}`);
  expect(Number.isSafeInteger(vote.token) && vote.token > 0).toBe(true);
  return vote;
}

export const BEHAVIOURS: Behaviour[] = [
  {
    id: 'grant',
    title:
      'grant: a free key is taken for its lease, with a token; several keys all at once; the lease runs out',
    async run({ voter, key, keys, engine, advance, now }) {
      const e = engine();
      const [a, b, m] = [e.value(), e.value(), e.value(true)];
      // The short lease can run out before the look that follows the grant when the machine stalls
      // for longer (a bare machine's run: a Cluster column's first commands): then, and only then,
      // once more on a new key, at most 3 times. A key gone sooner fails at once.
      let g = key('g0');
      let granting = now();
      let token = await grant(voter, g, a, SHORT);
      let view = await voter.inspect(g);
      for (let attempt = 1; view.holder === null && now() - granting >= SHORT && attempt < 3; attempt++) {
        g = key(`g${attempt}`);
        granting = now();
        token = await grant(voter, g, a, SHORT);
        view = await voter.inspect(g);
      }
      expect(view.holder).toBe(a);
      within(view.ttlMs, leastLeft(SHORT, granting, now()), SHORT, 'lease after the grant');
      expect(view.fence).toBe(token);
      const pair = keys('g2', 2);
      expect(tokensOf(await voter.acquire(pair, m, LONG, ''))).toHaveLength(2);
      for (const k of pair) expect((await voter.inspect(k)).holder).toBe(m);
      await advance(SHORT + 20);
      expect((await voter.inspect(g)).holder).toBeNull();
      expect(await grant(voter, g, b)).toBe(token + 1);
    },
  },
  {
    id: 'busy',
    title:
      'busy: a held key answers busy with retryAfter and holder; all or none; not queued without a ticket',
    async run({ voter, key, keys, engine, advance, serverTimeUs, now }) {
      const e = engine();
      const [a, b, c] = [e.value(), e.value(true), e.value()];
      const granting = now();
      await grant(voter, key('b'), a, 1000);
      await advance(200);
      const before = await serverTimeUs();
      const vote = await voter.acquire([key('b')], c, LONG, '');
      const after = await serverTimeUs();
      if (vote.kind !== 'busy') throw new Error(`expected busy, got ${JSON.stringify(vote)}`);
      expect(vote.holder).toBe(a);
      within(vote.retryAfterMs, leastLeft(1000, granting, now()), 800, 'retryAfter');
      within(vote.clockUs, before, after, "busy vote's clock");
      // All or none: a lock of two keys, one of them held, takes neither.
      const [free, held] = keys('b2', 2);
      await grant(voter, held!, a);
      expect((await voter.acquire([free!, held!], b, LONG, '')).kind).toBe('busy');
      expect((await voter.inspect(free!)).holder).toBeNull();
      // Without a ticket nobody queued: a release frees the key for everyone.
      await voter.letGo([key('b')], a, RELEASE);
      expect((await voter.inspect(key('b'))).holder).toBeNull();
    },
  },
  {
    id: 'extend',
    title:
      'extend: the holder renews its lease (single and batch); a wrong value is refused; a lapsed lease is not renewed',
    async run({ voter, key, keys, engine, advance, now }) {
      const e = engine();
      const [a, b, c, m, x] = [e.value(), e.value(), e.value(), e.value(true), e.value()];
      await grant(voter, key('e1'), a, 1000);
      await advance(400);
      let extending = now();
      expect(await voter.extend([{ keys: [key('e1')], value: a, ttlMs: 2000 }])).toEqual([true]);
      const extended = (await voter.inspect(key('e1'))).ttlMs;
      within(extended, leastLeft(2000, extending, now()), 2000, 'lease after extend');
      expect(await voter.extend([{ keys: [key('e1')], value: b, ttlMs: LONG }])).toEqual([false]);
      const view = await voter.inspect(key('e1'));
      expect(view.holder).toBe(a);
      within(view.ttlMs, 0, 2000, 'lease after a refused extend');
      // A batch over several locks (and slots), one of several keys, one answer each.
      await grant(voter, key('e2'), b);
      await grant(voter, key('e3'), c);
      const pair = keys('e4', 2);
      tokensOf(await voter.acquire(pair, m, 1000, ''));
      extending = now();
      const answers = await voter.extend([
        { keys: [key('e1')], value: a, ttlMs: 3000 },
        { keys: [key('e2')], value: c, ttlMs: 3000 },
        { keys: [key('e3')], value: c, ttlMs: 3000 },
        { keys: pair, value: m, ttlMs: 3000 },
      ]);
      expect(answers).toEqual([true, false, true, true]);
      const views = await Promise.all([key('e3'), ...pair].map((k) => voter.inspect(k)));
      const least = leastLeft(3000, extending, now());
      for (const v of views) within(v.ttlMs, least, 3000, 'lease after a batch extend');
      const refused = await voter.inspect(key('e2'));
      expect(refused.holder).toBe(b);
      within(refused.ttlMs, 0, LONG, "lease of the refused batch item's key");
      // A lease that ran out is not renewed.
      await grant(voter, key('e5'), x, 100);
      await advance(150);
      expect(await voter.extend([{ keys: [key('e5')], value: x, ttlMs: LONG }])).toEqual([false]);
      expect((await voter.inspect(key('e5'))).holder).toBeNull();
    },
  },
  {
    id: 'clock-readings',
    title:
      "clock readings: under the clock guard every grant (one key, several, a semaphore slot) and every extension reply (single and batch, refused too, a reader's too) carries the voter's clock; without it none does",
    settings: { clockReadings: true },
    async run({ voter, key, keys, engine, serverTimeUs, voterWith }) {
      const e = engine();
      const [a, b, m, s] = [e.value(), e.value(), e.value(true), e.value(true)];
      const clockOf = async <T>(
        what: string,
        run: () => Promise<T>,
        read: (reply: T) => number | undefined,
      ) => {
        const before = await serverTimeUs();
        const reply = await run();
        within(read(reply) ?? null, before, await serverTimeUs(), what);
        return reply;
      };
      const grantClock = (vote: AcquireVote) => (vote.kind === 'granted' ? vote.clockUs : undefined);
      await clockOf("a grant's clock", () => voter.acquire([key('cr')], a, LONG, ''), grantClock);
      await clockOf(
        "a grant of several keys' clock",
        () => voter.acquire(keys('cr2', 2), m, LONG, ''),
        grantClock,
      );
      const one = [{ keys: [key('cr')], value: a, ttlMs: LONG }];
      const extended = await clockOf(
        "an extension's clock",
        () => voter.extend(one),
        (r) => r.clockUs,
      );
      expect([...extended]).toEqual([true]);
      const wrong = [{ keys: [key('cr')], value: b, ttlMs: LONG }];
      const refused = await clockOf(
        "a refused extension's clock",
        () => voter.extend(wrong),
        (r) => r.clockUs,
      );
      expect([...refused]).toEqual([false]);
      // A batch (its locks in one slot, so that a Cluster voter answers from one master's clock).
      const [x, y] = keys('cr3', 2);
      await grant(voter, x!, b);
      const batch = [
        { keys: [x!], value: b, ttlMs: LONG },
        { keys: [y!], value: b, ttlMs: LONG },
      ];
      const answers = await clockOf(
        "a batch extension's clock",
        () => voter.extend(batch),
        (r) => r.clockUs,
      );
      expect([...answers]).toEqual([true, false]);
      if (voter.acquireSlot) {
        const slots = [0, 1].map((permit) => slotKey(key('crs'), permit));
        const vote = await clockOf(
          "a slot grant's clock",
          () => voter.acquireSlot!(slots, key('crs'), s, LONG, '', undefined, 2),
          (v) => (v.kind === 'granted' ? v.clockUs : undefined),
        );
        expect(vote.kind).toBe('granted');
      }
      // A read-write lock's reader: its extension (alone, refused, a batch of readers) too.
      const reader = e.value() + READ_MARK;
      expect((await voter.acquire([key('crr')], reader, LONG, '')).kind).toBe('granted');
      const read = { keys: [key('crr')], value: reader, ttlMs: LONG };
      const stranger = { keys: [key('crr')], value: e.value() + READ_MARK, ttlMs: LONG };
      for (const [what, readers, expected] of [
        ["a reader's extension's clock", [read], [true]],
        ["a refused reader's extension's clock", [stranger], [false]],
        ["a batch of readers' extension's clock", [read, stranger], [true, false]],
      ] as const) {
        const replies = await clockOf(
          what,
          () => voter.extend(readers),
          (r) => r.clockUs,
        );
        expect([...replies]).toEqual(expected);
      }
      // Without the guard nothing is read: no clock in grants or extension replies.
      const plain = await voterWith({ clockReadings: false });
      const vote = await plain.acquire([key('cr4')], a, LONG, '');
      expect(vote.kind === 'granted' && vote.clockUs).toBeFalsy();
      expect((await plain.extend([{ keys: [key('cr4')], value: a, ttlMs: LONG }])).clockUs).toBeUndefined();
    },
  },
  {
    id: 'release',
    title:
      "release: the holder's release frees its keys; another value frees nothing; a second release is harmless",
    async run({ voter, key, keys, engine }) {
      const e = engine();
      const [a, b, c, m] = [e.value(), e.value(), e.value(), e.value(true)];
      await grant(voter, key('r'), a);
      await voter.letGo([key('r')], b, RELEASE);
      expect((await voter.inspect(key('r'))).holder).toBe(a);
      await voter.letGo([key('r')], a, RELEASE);
      expect((await voter.inspect(key('r'))).holder).toBeNull();
      await grant(voter, key('r'), c);
      await voter.letGo([key('r')], a, RELEASE); // late, repeated: c keeps it
      expect((await voter.inspect(key('r'))).holder).toBe(c);
      const pair = keys('r2', 2);
      tokensOf(await voter.acquire(pair, m, LONG, ''));
      await voter.letGo(pair, m, RELEASE);
      for (const k of pair) expect((await voter.inspect(k)).holder).toBeNull();
    },
  },
  {
    id: 'release-batch',
    title:
      "releases in one tick: each frees its holder's key, a waiter is handed its lock, another value frees nothing; a release is on the server before the acquire of its key that follows it",
    async run({ voter, key, engine }) {
      const e = engine();
      await e.listen(voter);
      const [a, b, c, w, stranger] = [e.value(), e.value(), e.value(), e.value(), e.value()];
      await grant(voter, key('rb1'), a);
      await grant(voter, key('rb2'), b);
      await grant(voter, key('rb3'), c);
      expect((await voter.acquire([key('rb2')], w, LONG, '100')).kind).toBe('busy');
      // Let go of in one tick: a voter that gathers releases sends these together.
      await Promise.all([
        voter.letGo([key('rb1')], a, RELEASE),
        voter.letGo([key('rb2')], b, RELEASE),
        voter.letGo([key('rb3')], stranger, RELEASE),
      ]);
      expect((await voter.inspect(key('rb1'))).holder).toBeNull();
      expect((await handedTo(e, w)).cause).toBe(b);
      expect((await voter.inspect(key('rb2'))).holder).toBe(w);
      expect((await voter.inspect(key('rb3'))).holder).toBe(c);
      // The same tick again, each release followed at once by an acquire of its key by another value.
      const [h1, h2, n1, n2] = [e.value(), e.value(), e.value(), e.value()];
      await grant(voter, key('rb4'), h1);
      await grant(voter, key('rb5'), h2);
      const released = [voter.letGo([key('rb4')], h1, RELEASE), voter.letGo([key('rb5')], h2, RELEASE)];
      const votes = await Promise.all([
        voter.acquire([key('rb4')], n1, LONG, ''),
        voter.acquire([key('rb5')], n2, LONG, ''),
      ]);
      await Promise.all(released);
      expect(votes.map((vote) => vote.kind)).toEqual(['granted', 'granted']);
    },
  },
  {
    id: 'requeue',
    title:
      'requeue and leave-queue: a failed attempt frees what it got and keeps its place in line; a waiter that leaves is skipped',
    async run({ voter, key, engine }) {
      const e = engine();
      await e.listen(voter);
      const [a, w, b] = [e.value(), e.value(), e.value()];
      await grant(voter, key('q'), a);
      expect((await voter.acquire([key('q')], w, LONG, '200')).kind).toBe('busy');
      expect((await voter.acquire([key('q')], b, LONG, '100')).kind).toBe('busy');
      // b's attempt failed on a majority: it frees what it got here and waits on at its ticket.
      await grant(voter, key('q-other'), b);
      await voter.letGo([key('q')], b, { op: 'requeue', ticket: '100' });
      await voter.letGo([key('q-other')], b, { op: 'requeue', ticket: '100' });
      expect((await voter.inspect(key('q-other'))).holder).toBeNull();
      // a's release hands the lock to b, first by ticket: b kept its place.
      await voter.letGo([key('q')], a, RELEASE);
      expect((await handedTo(e, b)).cause).toBe(a);
      expect((await voter.inspect(key('q'))).holder).toBe(b);
      // b gives up: leaving hands the lock on to w; w leaves too: nobody is in line, the key is free.
      await voter.letGo([key('q')], b, { op: 'leave-queue' });
      expect((await handedTo(e, w)).cause).toBe(b);
      await voter.letGo([key('q')], w, { op: 'leave-queue' });
      expect((await voter.inspect(key('q'))).holder).toBeNull();
      // A waiter that left before the release is not handed anything.
      const [h, x] = [e.value(), e.value()];
      await grant(voter, key('q2'), h);
      expect((await voter.acquire([key('q2')], x, LONG, '50')).kind).toBe('busy');
      await voter.letGo([key('q2')], x, { op: 'leave-queue' });
      await voter.letGo([key('q2')], h, RELEASE);
      expect((await voter.inspect(key('q2'))).holder).toBeNull();
      expect(e.messages.some((m) => m.value === x)).toBe(false);
    },
  },
  {
    id: 'requeue-handed',
    title:
      'requeue passing a hand-over on: what a busy node handed the old value since goes to the new one; where the attempt was granted, it is freed',
    async run({ voter, key, engine }) {
      const e = engine();
      await e.listen(voter);
      const [a, w1, w2] = [e.value(), e.value(), e.value()];
      await grant(voter, key('rh'), a);
      expect((await voter.acquire([key('rh')], w1, LONG, '100')).kind).toBe('busy');
      // The release reaches this node between w1's attempt (failed on a majority) and its requeue:
      // the lock is handed to w1, which the waiter no longer answers to.
      await voter.letGo([key('rh')], a, RELEASE);
      expect((await handedTo(e, w1)).cause).toBe(a);
      await voter.letGo([key('rh')], w1, { op: 'requeue', ticket: '100', renamedTo: w2, passOn: true });
      expect((await handedTo(e, w2)).cause).toBe(w1);
      expect((await voter.inspect(key('rh'))).holder).toBe(w2);
      // Nothing else stays behind: w2's release frees the key.
      await voter.letGo([key('rh')], w2, RELEASE);
      expect((await voter.inspect(key('rh'))).holder).toBeNull();
      // Where the attempt itself was granted (no pass-on), the requeue frees the key and hands the
      // new value nothing: it would try again at once while another holds the majority.
      const [b1, b2, c] = [e.value(), e.value(), e.value()];
      await grant(voter, key('rg'), b1);
      await voter.letGo([key('rg')], b1, { op: 'requeue', ticket: '100', renamedTo: b2 });
      expect((await voter.inspect(key('rg'))).holder).toBeNull();
      // Nor is b2 in line: c's release frees the key instead of handing it to b2.
      await grant(voter, key('rg'), c);
      await voter.letGo([key('rg')], c, RELEASE);
      expect((await voter.inspect(key('rg'))).holder).toBeNull();
      expect(e.messages.some((m) => m.value === b2)).toBe(false);
    },
  },
  {
    id: 'hand-off',
    title:
      'hand-off: a release hands the lock to the first waiter by ticket, for the turn lease, with the next token, published on its channel',
    async run({ voter, key, engine, serverTimeUs, settings, now }) {
      const [e1, e2, gone] = [engine(), engine(), engine()];
      await e1.listen(voter);
      await e2.listen(voter);
      const a = e1.value();
      const token = await grant(voter, key('h'), a);
      // Queued in this order; tickets say w2, w3, w1. `skipped` is first, but its engine is gone.
      const [w1, w2, w3, skipped] = [e1.value(), e2.value(), e1.value(), gone.value()];
      for (const [value, ticket] of [
        [w1, '300'],
        [w2, '100'],
        [w3, '200'],
        [skipped, '50'],
      ] as const) {
        expect((await voter.acquire([key('h')], value, LONG, ticket)).kind).toBe('busy');
      }
      const before = await serverTimeUs();
      const releasing = now();
      await voter.letGo([key('h')], a, RELEASE);
      const first = await handedTo(e2, w2);
      // Each hand-over issues the next token (the skipped waiter's turn used one up too).
      expect(first.cause).toBe(a);
      expect(first.token).toBeGreaterThan(token);
      within(first.clockUs, before, await serverTimeUs(), "hand-over message's clock");
      const view = await voter.inspect(key('h'));
      expect(view).toMatchObject({ holder: w2, fence: first.token });
      within(view.ttlMs, leastLeft(settings.turnMs, releasing, now()), settings.turnMs, 'turn lease');
      await voter.letGo([key('h')], w2, RELEASE);
      expect(await handedTo(e1, w3)).toMatchObject({ cause: w2, token: first.token + 1 });
      await voter.letGo([key('h')], w3, RELEASE);
      expect(await handedTo(e1, w1)).toMatchObject({ cause: w3, token: first.token + 2 });
      await voter.letGo([key('h')], w1, RELEASE);
      expect((await voter.inspect(key('h'))).holder).toBeNull();
      expect([...e1.messages, ...e2.messages].map((m) => m.value)).toEqual(
        expect.not.arrayContaining([skipped]),
      );
    },
  },
  {
    id: 'slot-search',
    title:
      "slot search: a semaphore's slot is the first free one in the caller's order (its own first), one fence per slot; busy queues in the shared line; a release gives the first waiter a turn; other permits conflict",
    async run({ voter, key, engine, now }) {
      if (!voter.acquireSlot) throw new Error('this voter cannot serve semaphores');
      const started = now(); // before the first slot's grant
      const e = engine();
      await e.listen(voter);
      const lock = key('sem');
      const slots = [0, 1, 2].map((permit) => slotKey(lock, permit));
      const [a, b, c, d] = [e.value(true), e.value(true), e.value(true), e.value(true)];
      const take = (order: readonly string[], value: string, ticket = '', permits = 3) =>
        voter.acquireSlot!(order, lock, value, LONG, ticket, undefined, permits);
      const first = slotOf(await take(slots, a));
      expect(first).toMatchObject({ index: 0, free: [0, 1, 2] });
      expect(slotOf(await take(slots, b))).toMatchObject({ index: 1, free: [1, 2] });
      // Another order: the first free slot in it.
      const reversed = [...slots].reverse();
      const third = slotOf(await take(reversed, c));
      expect(third).toMatchObject({ index: 0, free: [0] });
      expect((await voter.inspect(slots[2]!)).holder).toBe(c);
      // Its own slot comes first, wherever it is in the order.
      expect(slotOf(await take(reversed, a))).toMatchObject({ index: 2, free: [2] });
      // One fence counter per slot.
      expect((await voter.inspect(slots[0]!)).fence).toBe(first.token + 1);
      expect((await voter.inspect(slots[2]!)).fence).toBe(third.token);
      // Every slot held: busy, queued in the shared line by ticket.
      const busy = await take(slots, d, '100');
      if (busy.kind !== 'busy') throw new Error(`expected busy, got ${JSON.stringify(busy)}`);
      expect([a, b, c]).toContain(busy.holder);
      // Each slot's holder, in the order proposed: what tells a full semaphore from a split vote.
      expect(busy.holders).toEqual([a, b, c]);
      within(busy.retryAfterMs, leastLeft(LONG, started, now()), LONG, 'retryAfter');
      // A release of any slot gives its turn to the first in line, who takes that slot.
      await voter.letGo([slots[1]!], b, RELEASE);
      await until(() => e.messages.some((m) => m.value === d), 'the turn to reach the waiter');
      expect(e.messages.find((m) => m.value === d)).toMatchObject({ kind: 'turn', cause: b });
      expect((await voter.inspect(slots[1]!)).holder).toBe(TURN_MARK + d);
      expect(slotOf(await take(slots, d, '100'))).toMatchObject({ index: 1 });
      // The same key with other permits (or as a plain lock) is refused, naming the use.
      expect(await take(slots.slice(0, 2), e.value(true), '', 2)).toEqual({ kind: 'conflict', permits: 3 });
      const plain = key('plain');
      await grant(voter, plain, e.value());
      await voter.letGo([plain], e.value(), RELEASE);
      expect(
        await voter.acquireSlot(
          [slotKey(plain, 0), slotKey(plain, 1)],
          plain,
          e.value(true),
          LONG,
          '',
          undefined,
          2,
        ),
      ).toEqual({ kind: 'conflict', permits: 1 });
    },
  },
  {
    id: 'fence-seeding',
    title:
      "fence seeding: a resource's first grant takes the proposed seed within the seed window; later grants count on",
    async run(scene) {
      const { voter, engine, serverTimeUs, settings, key } = scene;
      const e = engine();
      const windowUs = settings.seedWindowMs * 1000;
      const first = await seededGrant(scene, 'f1', () => e.value());
      await voter.letGo([first.key], (await voter.inspect(first.key)).holder!, RELEASE);
      const now = await serverTimeUs();
      expect(await grant(voter, first.key, e.value(), LONG, now + 10 * windowUs)).toBe(first.token + 1);
      // A proposal beyond the window is capped at the voter's clock + the window.
      const far = await grant(voter, key('f2'), e.value(), LONG, now + 50 * windowUs);
      within(far, now, (await serverTimeUs()) + windowUs, 'a far proposal, capped');
      // A proposal below the voter's clock: the clock wins.
      within(await grant(voter, key('f3'), e.value(), LONG, 1), now, await serverTimeUs(), 'a low proposal');
      within(await grant(voter, key('f4'), e.value()), now, await serverTimeUs(), 'no proposal');
    },
  },
  {
    id: 'fence-seed-behind',
    title:
      'fence seeding under the restart guard: a voter whose clock is behind the proposed seed by more than half the guard abstains and seeds nothing; within half the guard it seeds',
    settings: { guardMs: 600 },
    async run({ voter, key, engine, advance, serverTimeUs, settings }) {
      const e = engine();
      const half = settings.guardMs / 2;
      // A new server's guard starts when the voter connects: let it pass, so that only the clock counts.
      await until(() => voter.connected, 'the voter to connect', 3000);
      await advance(settings.guardMs + 20);
      const now = await serverTimeUs();
      const behind = await voter.acquire([key('sb')], e.value(), LONG, '', now + (half + 200) * 1000);
      if (behind.kind !== 'abstaining')
        throw new Error(`expected an abstention, got ${JSON.stringify(behind)}`);
      // For how far it is behind beyond half the guard: 200 ms, less the time since `now`.
      within(behind.forMs, 1, 201, 'abstention');
      // And by how much its clock is behind the proposal: what the engine's log line says.
      within(behind.clockBehindMs ?? -1, half + 1, half + 200, 'clock behind');
      expect(await voter.inspect(key('sb'))).toMatchObject({ holder: null, fence: null });
      const then = await serverTimeUs();
      const windowUs = settings.seedWindowMs * 1000;
      const near = await grant(voter, key('sb'), e.value(), LONG, then + (half - 100) * 1000);
      within(near, then, (await serverTimeUs()) + windowUs, 'a proposal within half the guard');
    },
  },
  {
    id: 'raise-fence',
    title:
      'second fencing round: raiseFence raises (never lowers) the counters only while the value holds the keys',
    async run({ voter, key, keys, engine }) {
      const e = engine();
      const [a, b, m] = [e.value(), e.value(), e.value(true)];
      const token = await grant(voter, key('rf'), a);
      expect(await voter.raiseFence([key('rf')], a, [token + 1000])).toBe(true);
      expect((await voter.inspect(key('rf'))).fence).toBe(token + 1000);
      expect(await voter.raiseFence([key('rf')], a, [token + 10])).toBe(true);
      expect((await voter.inspect(key('rf'))).fence).toBe(token + 1000);
      expect(await voter.raiseFence([key('rf')], b, [token + 5000])).toBe(false);
      expect((await voter.inspect(key('rf'))).fence).toBe(token + 1000);
      const pair = keys('rf2', 2);
      const tokens = tokensOf(await voter.acquire(pair, m, LONG, ''));
      expect(await voter.raiseFence(pair, m, [tokens[0]! + 7, tokens[1]! + 9])).toBe(true);
      expect((await voter.inspect(pair[1]!)).fence).toBe(tokens[1]! + 9);
      await voter.letGo([key('rf')], a, RELEASE);
      expect(await voter.raiseFence([key('rf')], a, [token + 9000])).toBe(false);
      expect(await grant(voter, key('rf'), b)).toBe(token + 1001);
    },
  },
  {
    id: 'restart-guard',
    title: 'restart guard: a voter that lost its data abstains (granting nothing) until the guard has passed',
    settings: { guardMs: 600 },
    async run({ voter, key, engine, advance, loseData, serverTimeUs, settings, slack }) {
      const e = engine();
      const guard = settings.guardMs;
      // A voter that checks its server on connecting finds a new one (no marker) and starts the
      // guard there at once (it counts from boot): let that pass first, so that only the loss counts.
      await until(() => voter.connected, 'the voter to connect', 3000);
      await advance(guard + 20);
      await loseData();
      const first = await voter.acquire([key('rg')], e.value(), LONG, '');
      if (first.kind !== 'abstaining')
        throw new Error(`expected an abstention, got ${JSON.stringify(first)}`);
      within(first.forMs, guard - 2 * slack, guard, 'abstention');
      expect(first.clockBehindMs).toBeUndefined(); // the restart guard's, not its clock's
      expect(await voter.inspect(key('rg'))).toMatchObject({ holder: null, ttlMs: null, fence: null });
      await advance(guard / 2);
      const second = await voter.acquire([key('rg')], e.value(), LONG, '');
      expect(second.kind).toBe('abstaining');
      within((second as { forMs: number }).forMs, 1, guard / 2 + slack, 'abstention, later');
      // A semaphore's slot search consults the guard too, though it may bump no counter of its own.
      if (voter.acquireSlot) {
        const slots = [0, 1].map((permit) => slotKey(key('rg-sem'), permit));
        const slotVote = await voter.acquireSlot(slots, key('rg-sem'), e.value(true), LONG, '', undefined, 2);
        expect(slotVote.kind).toBe('abstaining');
        expect((await voter.inspect(slots[0]!)).holder).toBeNull();
      }
      await advance(guard / 2 + 20);
      const now = await serverTimeUs();
      expect(await grant(voter, key('rg'), e.value())).toBeGreaterThanOrEqual(now);
    },
  },
  {
    id: 'identity-guard',
    title:
      'identity guard: after its server restarted (data kept, another run_id) a voter abstains for the guard, counters dropped; so does a new client',
    // Longer than a Cluster's restart of every master and a GLIDE cluster client's reconnection
    // take here (2.4-2.5 s measured, with a 2 s guard the vote came after the guard had passed):
    // the guard outlives changeServer.
    settings: { guardMs: 5000 },
    async run({ voter, voterWith, key, engine, advance, changeServer, serverTimeUs, settings, slack }) {
      const e = engine();
      const guard = settings.guardMs;
      // A server in service for long: its marker says the guard has passed, a counter exists.
      const unguarded = await voterWith({ guardMs: 0 });
      const old = await grant(unguarded, key('ig'), e.value());
      await unguarded.letGo([key('ig')], (await unguarded.inspect(key('ig'))).holder!, RELEASE);
      // The voter under test votes before the change, so that the abstention it shows after is
      // the identity guard's. (One still under a new server's guard, counted from its boot, sends
      // nothing to the server: it sees the change only at its next probe, and its identity guard
      // then starts up to a probe interval later than the vote below, which showed the other.)
      await grant(voter, key('ig-before'), e.value());
      // The guard counts from the voter's first sight of the new server, which may come while
      // changeServer still waits for the rest (a Cluster's masters one by one, its health), and
      // never after the vote below: the final grant, guard + 20 ms after it, finds it passed.
      const changing = performance.now();
      await changeServer();
      await until(() => voter.connected, 'the voter to reconnect and check its server', 3000);
      // A voter whose check of the new server failed (a Cluster that still said CLUSTERDOWN while
      // its masters came back, or whose client did not list a restarted master yet) does not vote
      // until a check passes: its acquire fails meanwhile ("connected, but the server could not be
      // checked: ..."), and is asked again (for at most 3 s). Whatever it votes then must be an
      // abstention.
      let vote: AcquireVote | undefined;
      for (const asked = performance.now(); vote === undefined;) {
        try {
          vote = await voter.acquire([key('ig')], e.value(), LONG, '');
        } catch (err) {
          if (!/could not be checked/.test(String(err)) || performance.now() - asked > 3000) throw err;
          await advance(50);
        }
      }
      const sinceChange = performance.now() - changing;
      if (vote.kind !== 'abstaining')
        throw new Error(
          `expected an abstention ${Math.round(sinceChange)} ms after the change began, got ${JSON.stringify(vote)}`,
        );
      within(vote.forMs, Math.max(1, guard - 2 * slack - sinceChange), guard, 'abstention');
      if (voter.acquireSlot) {
        const slots = [0, 1].map((permit) => slotKey(key('ig-sem'), permit));
        const slotVote = await voter.acquireSlot(slots, key('ig-sem'), e.value(true), LONG, '', undefined, 2);
        expect(slotVote.kind).toBe('abstaining');
      }
      const late = await voterWith(); // a client that connects for the first time after the restart
      const lateVote = await late.acquire([key('ig')], e.value(), LONG, '');
      expect(lateVote.kind).toBe('abstaining');
      within((lateVote as { forMs: number }).forMs, 1, guard, 'abstention of a new client');
      expect(await voter.inspect(key('ig'))).toMatchObject({ holder: null, ttlMs: null, fence: null });
      await advance(guard + 20);
      const now = await serverTimeUs();
      const token = await grant(voter, key('ig'), e.value());
      expect(token).toBeGreaterThanOrEqual(now);
      expect(token).toBeGreaterThan(old);
    },
  },
  {
    id: 'clock-marking',
    title:
      'clock marking: a voter marked after a step of its clock abstains for every client for the guard, counters dropped, and a release hands its queued waiter a turn, not a token',
    settings: { guardMs: 600 },
    async run({ voter, voterWith, key, engine, advance, settings, slack }) {
      if (!voter.markClockStep) throw new Error('the voter has no markClockStep');
      const guard = settings.guardMs;
      const e = engine();
      await e.listen(voter);
      // A new server's guard starts when the voter connects (a Cluster's slot by slot, as the voter
      // seeds their markers): let it pass on the row's key, so that only the marking counts.
      await until(() => voter.connected, 'the voter to connect', 3000);
      const [a, w] = [e.value(), e.value()];
      let first = await voter.acquire([key('cm')], a, LONG, '');
      for (let i = 0; first.kind === 'abstaining' && i < 10; i++) {
        await advance(first.forMs + 20);
        first = await voter.acquire([key('cm')], a, LONG, '');
      }
      const old = tokensOf(first)[0]!;
      expect((await voter.acquire([key('cm')], w, LONG, '100')).kind).toBe('busy');
      // Another client, connected before the marking: what follows must happen within the guard,
      // and a Cluster client's connection (slot map, a connection per master, its checks) is the
      // longest step of this row on a loaded machine.
      const other = await voterWith();
      const markedAt = performance.now();
      const marking = await voter.markClockStep(guard);
      if (!marking) throw new Error('the voter did not mark');
      within(marking.abstainMs, guard - slack, guard, 'marking');
      expect(marking.countersDropped).toBeGreaterThanOrEqual(1);
      // A second fencing round for the lock still held there creates no counter (the voter would
      // vote again, for every client, before its guard has passed).
      expect(await voter.raiseFence([key('cm')], a, [old + 5])).toBe(false);
      expect((await voter.inspect(key('cm'))).fence).toBeNull();
      // The holder's release: no hand-over with a token from a voter under its marker, a turn instead.
      await voter.letGo([key('cm')], a, RELEASE);
      await until(() => e.messages.some((m) => m.value === w), 'the release to reach the waiter');
      expect(e.messages.filter((m) => m.value === w).map((m) => m.kind)).toEqual(['turn']);
      expect(await voter.inspect(key('cm'))).toMatchObject({ holder: TURN_MARK + w, fence: null });
      // The turn's claim abstains, and so does another client's grant (it never heard of the step).
      expect((await voter.acquire([key('cm')], w, LONG, '')).kind).toBe('abstaining');
      const vote = await other.acquire([key('cm-other')], e.value(), LONG, '');
      if (vote.kind !== 'abstaining') {
        const since = Math.round(performance.now() - markedAt);
        throw new Error(
          `expected an abstention ${since} ms after the marking began, got ${JSON.stringify(vote)}`,
        );
      }
      within(vote.forMs, 1, guard, 'abstention of another client');
      // The marker counts from the marking on the server (a Cluster's masters: each from its own call).
      await advance(guard + 20 + slack);
      expect(await grant(voter, key('cm'), w)).toBeGreaterThan(old);
    },
  },
  {
    id: 'inspect',
    title:
      "inspect: holder, remaining lease and fence counter, read-only (a free key's counter stays missing)",
    async run(scene) {
      const { voter, key, engine, advance, serverTimeUs, now } = scene;
      const e = engine();
      const a = e.value();
      // (A server voter's view also carries its clock, clockUs: what the clock guard reads at connect.)
      expect(await voter.inspect(key('i'))).toMatchObject({ holder: null, ttlMs: null, fence: null });
      const granting = now();
      const token = await grant(voter, key('i'), a, 1000);
      await advance(300);
      const view = await voter.inspect(key('i'));
      expect(view).toMatchObject({ holder: a, fence: token });
      within(view.ttlMs, leastLeft(1000, granting, now()), 700, 'remaining lease');
      await voter.letGo([key('i')], a, RELEASE);
      expect(await voter.inspect(key('i'))).toMatchObject({ holder: null, ttlMs: null, fence: token });
      expect(await grant(voter, key('i'), e.value(), LONG, (await serverTimeUs()) + 50_000)).toBe(token + 1);
      // Inspecting wrote nothing: the first grant of an inspected key still takes the proposed seed.
      await seededGrant(scene, 'i-new', () => e.value());
    },
  },
  {
    id: 'abstention-reporting',
    title:
      'abstention reporting: a voter whose server restarted tells onAbstention how long and why, and stays connected',
    settings: { guardMs: 600 },
    async run({ voter, voterWith, key, engine, changeServer, abstentionsOf, settings, slack }) {
      if (!voter.onAbstention) throw new Error('the voter has no onAbstention');
      const unguarded = await voterWith({ guardMs: 0 }); // no identity guard: nothing to report
      await grant(unguarded, key('ar'), engine().value()); // a server in service: its marker is set
      await until(() => voter.connected, 'the voter to connect', 3000);
      const heard = abstentionsOf(voter);
      // A new server may be reported at once: the restart guard counts from the first connection,
      // and its reason is the guard's own ('': the engine words it for all such voters at once).
      for (const atBoot of heard) {
        expect(atBoot.why).toBe('');
        within(atBoot.forMs, 1, settings.guardMs, 'abstention of a new server');
      }
      const before = heard.length;
      // The change of server is reported once per server that changed (a Cluster voter's masters
      // each report their own), with its reason. A report worded by the engine ('') may still come
      // in between: the new server's at boot, late on a loaded machine.
      const servers = await changeServer();
      const changed = () => heard.slice(before).filter((r) => r.why !== '');
      await until(() => changed().length >= servers, 'an abstention report per server', 3000);
      for (const late of heard.slice(before).filter((r) => r.why === ''))
        within(late.forMs, 1, settings.guardMs, 'abstention of a new server');
      expect(changed()).toHaveLength(servers);
      for (const report of changed()) {
        within(report.forMs, settings.guardMs - 2 * slack, settings.guardMs, 'reported abstention');
        expect(report.why).toMatch(/run_id/);
      }
      await until(() => voter.connected, 'the voter to count as connected', 1000); // abstaining is not being down
      expect(abstentionsOf(unguarded)).toEqual([]);
    },
  },
  {
    id: 'release-semantics',
    title:
      'release semantics: a release (one-way where the voter can) is ordered before the later commands on the same voter',
    async run({ voter, key, engine, note }) {
      const e = engine();
      const [a, b, c] = [e.value(), e.value(), e.value()];
      // One-way calls are allowed once the connection is prepared (a release of nothing is harmless).
      await voter.inspect(key('rs'));
      let oneWay = false;
      for (let i = 0; i < 10 && voter.letGoOneWay && !oneWay; i++) {
        oneWay = voter.letGoOneWay([key('rs-probe')], a, RELEASE);
        if (!oneWay) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      note(oneWay ? 'one-way' : 'answered');
      const release = (value: string) => {
        if (!(oneWay && voter.letGoOneWay!([key('rs')], value, RELEASE))) {
          voter.letGo([key('rs')], value, RELEASE).catch(() => undefined);
        }
      };
      await grant(voter, key('rs'), a);
      release(a); // not awaited: the acquire below is sent after it
      expect(await grant(voter, key('rs'), b)).toBeGreaterThan(0);
      release(a); // a late release of the old value frees nothing
      await grant(voter, key('rs-other'), c);
      expect((await voter.inspect(key('rs'))).holder).toBe(b);
    },
  },
  ...READ_BEHAVIOURS,
];
