import { isReader, type AcquireVote, type LetGo } from '../../lib/core/scripts/index.js';
import type { Voter } from '../../lib/core/voter/voter-api.js';
import type { Mutation } from './harness.js';

/*
 * One deliberately broken voter per row of the table (behaviours.ts): a wrapper around a working
 * voter that breaks exactly that row's behaviour, through the Voter interface. mutations.spec.ts
 * runs each row against its mutant and expects the row to fail: a row that cannot fail proves
 * nothing.
 */

/** `voter` with some operations replaced (the rest, and every property, are the voter's own). */
function override(voter: Voter, parts: (inner: Voter) => Partial<Voter>): Voter {
  const replaced = parts(voter) as Record<PropertyKey, unknown>;
  return new Proxy(voter, {
    get(target, property) {
      if (property in replaced) return replaced[property];
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A granted vote that no voter gave: tokens that look right. */
const fakeGrant = (keys: readonly string[]): AcquireVote => ({
  kind: 'granted',
  tokens: keys.map((_, i) => Date.now() * 1000 + i),
});

/** The value holding `key` now (what a broken voter would act for instead of the caller). */
async function holderOf(voter: Voter, key: string, otherwise: string): Promise<string> {
  return (await voter.inspect(key)).holder ?? otherwise;
}

const isRelease = (how: LetGo) => how.op === 'release';

/** A row's mutant: what it breaks (shown in the results) and the wrapper that breaks it. */
export interface Mutant {
  readonly breaks: string;
  readonly wrap: Mutation;
}

const mutant = (breaks: string, wrap: Mutation): Mutant => ({ breaks, wrap });

export const MUTATIONS: Record<string, Mutant> = {
  'read-write': mutant(
    'A reader is let in beside a writer: a busy vote for a reader becomes a grant.',
    (voter) =>
      override(voter, (inner) => ({
        acquire: async (keys, value, ttlMs, ticket, seedUs) => {
          const vote = await inner.acquire(keys, value, ttlMs, ticket, seedUs);
          return vote.kind === 'busy' && isReader(value) ? fakeGrant(keys) : vote;
        },
      })),
  ),

  grant: mutant('Answers "granted" without taking the key.', (voter) =>
    override(voter, () => ({ acquire: async (keys) => fakeGrant(keys) })),
  ),

  busy: mutant('Always grants: a busy vote becomes a grant.', (voter) =>
    override(voter, (inner) => ({
      acquire: async (keys, value, ttlMs, ticket, seedUs) => {
        const vote = await inner.acquire(keys, value, ttlMs, ticket, seedUs);
        return vote.kind === 'busy' ? fakeGrant(keys) : vote;
      },
    })),
  ),

  extend: mutant('Extends for anyone: each lock of the batch is extended for whoever holds it.', (voter) =>
    override(voter, (inner) => ({
      extend: async (batch) =>
        inner.extend(
          await Promise.all(
            batch.map(async (r) => ({ ...r, value: await holderOf(inner, r.keys[0]!, r.value) })),
          ),
        ),
    })),
  ),

  release: mutant("Frees anyone's key: a release acts for the current holder.", (voter) =>
    override(voter, (inner) => ({
      letGo: async (keys, value, how) =>
        inner.letGo(keys, isRelease(how) ? await holderOf(inner, keys[0]!, value) : value, how),
    })),
  ),

  'release-batch': mutant(
    'A release goes out after what the caller sends next (held back to the next turn of the event loop).',
    (voter) =>
      override(voter, (inner) => ({
        letGo: (keys, value, how) =>
          new Promise((resolve) => setImmediate(resolve)).then(() => inner.letGo(keys, value, how)),
      })),
  ),

  requeue: mutant('A requeue loses the place in line (it leaves the queue instead).', (voter) =>
    override(voter, (inner) => ({
      letGo: (keys, value, how) =>
        inner.letGo(keys, value, how.op === 'requeue' ? { op: 'leave-queue' } : how),
    })),
  ),

  'requeue-handed': mutant(
    'A requeue does not pass a hand-over on: the node frees what it handed the old value.',
    (voter) =>
      override(voter, (inner) => ({
        letGo: (keys, value, how) =>
          inner.letGo(keys, value, how.op === 'requeue' ? { ...how, passOn: false } : how),
      })),
  ),

  'hand-off': mutant('Ignores ticket order: waiters are served first come, first served.', (voter) => {
    let arrival = 0;
    return override(voter, (inner) => ({
      acquire: (keys, value, ttlMs, ticket, seedUs) =>
        inner.acquire(keys, value, ttlMs, ticket === '' ? '' : String(++arrival), seedUs),
    }));
  }),

  'slot-search': mutant(
    "Searches the slots in its own order (the last first), not the caller's: voters split the vote.",
    (voter) =>
      override(voter, (inner) => ({
        acquireSlot: async (keys, lockKey, value, ttlMs, ticket, seedUs, permits) => {
          const last = keys.length - 1;
          const vote = await inner.acquireSlot!(
            [...keys].reverse(),
            lockKey,
            value,
            ttlMs,
            ticket,
            seedUs,
            permits,
          );
          if (vote.kind !== 'granted') return vote;
          return {
            ...vote,
            index: last - vote.index,
            free: vote.free.map((i) => last - i).sort((x, y) => x - y),
          };
        },
      })),
  ),

  'fence-seeding': mutant(
    "Ignores the proposed seed: first tokens come from the voter's clock alone.",
    (voter) =>
      override(voter, (inner) => ({
        acquire: (keys, value, ttlMs, ticket) => inner.acquire(keys, value, ttlMs, ticket),
      })),
  ),

  'fence-seed-behind': mutant(
    "Ignores the proposed seed: a voter whose clock is far behind seeds from it, below the voters' time.",
    (voter) =>
      override(voter, (inner) => ({
        acquire: (keys, value, ttlMs, ticket) => inner.acquire(keys, value, ttlMs, ticket),
      })),
  ),

  'raise-fence': mutant(
    "Raises the counters for anyone, holder or not (a late call lifts a lost lock's counter).",
    (voter) =>
      override(voter, (inner) => ({
        raiseFence: async (keys, value, tokens) =>
          inner.raiseFence(keys, await holderOf(inner, keys[0]!, value), tokens),
      })),
  ),

  'restart-guard': mutant('No restart guard: an abstention reads as a grant.', (voter) =>
    override(voter, (inner) => ({
      acquire: async (keys, value, ttlMs, ticket, seedUs) => {
        const vote = await inner.acquire(keys, value, ttlMs, ticket, seedUs);
        return vote.kind === 'abstaining' ? fakeGrant(keys) : vote;
      },
    })),
  ),

  'identity-guard': mutant(
    'No identity guard: the abstention after a change of server reads as a grant.',
    (voter) =>
      override(voter, (inner) => ({
        acquire: async (keys, value, ttlMs, ticket, seedUs) => {
          const vote = await inner.acquire(keys, value, ttlMs, ticket, seedUs);
          return vote.kind === 'abstaining' ? fakeGrant(keys) : vote;
        },
      })),
  ),

  'clock-marking': mutant(
    'Pretends to mark: reports a marking, but the voter keeps its counters and votes on.',
    (voter) =>
      override(voter, () => ({
        markClockStep: (forMs) => Promise.resolve({ abstainMs: forMs, countersDropped: 1 }),
      })),
  ),

  inspect: mutant('Inspect hides the fence counter.', (voter) =>
    override(voter, (inner) => ({
      inspect: async (key) => ({ ...(await inner.inspect(key)), fence: null }),
    })),
  ),

  'clock-readings': mutant(
    'Extension replies carry no clock: a step seen first there goes unnoticed.',
    (voter) =>
      override(voter, (inner) => ({
        extend: async (batch) => [...(await inner.extend(batch))],
      })),
  ),

  'abstention-reporting': mutant('Abstentions go unreported: onAbstention drops its listener.', (voter) =>
    override(voter, () => ({ onAbstention: () => undefined })),
  ),

  'release-semantics': mutant(
    'A release lands after later commands on the same voter (sent late).',
    (voter) =>
      override(voter, (inner) => ({
        letGoOneWay: (keys, value, how) => {
          setTimeout(() => inner.letGo(keys, value, how).catch(() => undefined), 50);
          return true;
        },
        letGo: (keys, value, how) =>
          new Promise((resolve) => setTimeout(resolve, 50)).then(() => inner.letGo(keys, value, how)),
      })),
  ),
};
