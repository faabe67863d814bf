import { ACQUIRE } from '../../../lib/core/scripts/acquire.js';
import { EXTEND, EXTEND_MANY } from '../../../lib/core/scripts/extend.js';
import { RAISE_FENCE } from '../../../lib/core/scripts/fence.js';
import {
  CLOCK_MARK,
  fenceCounterPattern,
  IDENTITY_CHECK,
  RUN_ID,
  SEED_SLOT_MARKERS,
} from '../../../lib/core/scripts/guards.js';
import { INSPECT } from '../../../lib/core/scripts/inspect.js';
import { LET_GO } from '../../../lib/core/scripts/let-go.js';
import type { LuaScript } from '../../../lib/core/scripts/lua.js';
import {
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_INSPECT_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
} from '../../../lib/core/scripts/read.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from '../../../lib/core/scripts/semaphore.js';
import { ACL_PROBE } from '../../../lib/core/voter/acl-probe.js';

/*
 * The differential test's random inputs (differential.spec.ts): per script, its keys and arguments,
 * and a keyspace before it runs, drawn from a seed. The values are few on purpose (so that a caller
 * often meets its own value, its turn, another holder, a reader), and every time-like input lies far
 * (100 ms and more) from the threshold it is compared with, so that the few ms a Redis transaction
 * takes cannot tip a branch.
 */

/** A seeded random source (mulberry32). */
export class Random {
  constructor(private state: number) {}

  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A command that writes the keyspace before the script (SET, ZADD, HSET, PEXPIRE). */
export type Write = readonly [string, ...string[]];

/** One case: the script, its keys and arguments, and the keyspace it starts from. */
export interface Case {
  readonly keys: string[];
  readonly args: string[];
  readonly state: Write[];
}

const P = 'd:';
export const MARKER = `${P}__restart_guard__`;
/** Engines a and b listen on their wake channel; c does not (its waiters are skipped). */
export const LISTENING = ['a', 'b'];
const WRITERS = ['a:1', 'a:2', 'b:3', 'c:4'];
const MULTI = ['a:5*', 'b:6*', 'c:7*'];
const READERS = ['a:8^', 'b:9^', 'c:10^', 'a:11^'];
const VALUES = [...WRITERS, ...MULTI, ...READERS];
const RUN_IDS = ['1'.repeat(40), 'ab'.repeat(20)];
const lock = (r: string) => `${P}{${r}}`;

/**
 * The keyspace before a case: each key a content of its kind, or none. `now`: the clock, ms. The
 * caller's own value (`mine`) comes up often: in a lock key, its turn, a queue, a readers hash.
 */
function stateFor(rnd: Random, keys: readonly string[], now: number, mine: string): Write[] {
  const writes: Write[] = [];
  const value = (pool: readonly string[]) => (rnd.chance(0.4) ? mine : rnd.pick(pool));
  const ttl = (choices: ReadonlyArray<number | undefined>, key: string) => {
    const ms = rnd.pick(choices);
    if (ms !== undefined) writes.push(['PEXPIRE', key, String(ms)]);
  };
  // A time near now: on either side, or on a boundary (the clocks stand still: boundaries are exact).
  const around = () =>
    String(now + (rnd.chance(0.2) ? rnd.pick([0, 1000, 2000]) : rnd.pick([-1, 1]) * rnd.int(200, 3000)));
  for (const key of new Set(keys)) {
    if (rnd.chance(0.35)) continue;
    if (key.endsWith(':fence')) {
      writes.push(['SET', key, String(rnd.pick([rnd.int(1, 200), 63, 95, 127, 1_000_000]))]);
      ttl([undefined, 60_000], key);
    } else if (key.endsWith(':queue')) {
      for (let i = rnd.int(1, 4); i > 0; i--)
        writes.push(['ZADD', key, 'NX', String(rnd.int(1, 50) * 10), value(VALUES)]);
      ttl([undefined, 30, 3000, 10_000], key);
    } else if (key.endsWith(':readers')) {
      for (let i = rnd.int(1, 3); i > 0; i--)
        writes.push(['HSET', key, value([...READERS, 'b:3']), around()]);
      ttl([undefined, 1000, 5000], key);
    } else if (key.endsWith(':id')) {
      writes.push(['SET', key, `${rnd.pick(RUN_IDS)} ${rnd.int(0, 1)}`]);
    } else if (key.includes('__restart_guard__')) {
      writes.push(['SET', key, rnd.chance(0.4) ? '0' : around()]);
    } else {
      const marks = ['~read', '~read', '~permits:2', '~permits:3', `~${mine}`, ...VALUES.map((v) => `~${v}`)];
      writes.push(['SET', key, rnd.chance(0.5) ? value(VALUES) : rnd.pick(marks)]);
      ttl([100, 300, 1000, 2000, 5000, rnd.chance(0.1) ? undefined : 1000], key);
    }
  }
  return writes;
}

/** The settings argument: guard 0 or 2 s, a queue idle expiry below or above the queues' ttls, clock readings or not. */
function settings(rnd: Random): string {
  return `${rnd.pick([0, 2000])} 60000 200 ${rnd.pick([50, 5000])} 300 ${rnd.int(0, 1)}`;
}

/** A seed proposal below the clock, within the 200 ms window above it, or beyond. */
function seed(rnd: Random, now: number): string {
  const us = now * 1000;
  return rnd.pick([
    '',
    String(us - rnd.int(100, 5000) * 1000),
    String(us + rnd.int(50, 150) * 1000),
    String(us + rnd.int(250, 5000) * 1000),
  ]);
}

const ticket = (rnd: Random) => (rnd.chance(0.3) ? '' : String(rnd.int(1, 50) * 10 + 5));
const ttlArg = (rnd: Random) => String(rnd.pick([150, 400, 1500, 3000, 6000]));
const locks = (n: number) => ['r1', 'r2', 'r3'].slice(0, n).map(lock);
const triples = (keys: string[]) => [
  ...keys,
  ...keys.map((k) => `${k}:fence`),
  ...keys.map((k) => `${k}:queue`),
];
/**
 * A let-go's operation, and for a requeue its ticket and (sometimes) the value it waits on under,
 * then (sometimes) the pass-on flag of a voter that answered the attempt busy.
 */
function letGoOp(rnd: Random): string[] {
  const op = rnd.pick(['release', 'requeue', 'leave-queue']);
  if (op !== 'requeue') return [op];
  const ticket = String(rnd.int(1, 50) * 10 + 5);
  if (!rnd.chance(0.5)) return [op, ticket];
  return [op, ticket, rnd.pick(VALUES), ...(rnd.chance(0.5) ? ['1'] : [])];
}

type Generator = (rnd: Random, now: number) => Omit<Case, 'state'> & { stateKeys?: string[] };

const GENERATORS: Array<[LuaScript, Generator]> = [
  [
    ACQUIRE,
    (rnd, now) => {
      const keys = locks(rnd.pick([1, 1, 1, 2, 3]));
      const args = [
        rnd.pick([...WRITERS, ...MULTI]),
        settings(rnd),
        ttlArg(rnd),
        ticket(rnd),
        seed(rnd, now),
      ];
      if (rnd.chance(0.5)) {
        const off = rnd.pick([0, rnd.int(-8, 8), rnd.int(40, 200), -rnd.int(40, 200)]) * 1000;
        args.push(rnd.pick(['', String(now * 1000 + off)]));
      }
      return { keys: [...triples(keys), MARKER], args };
    },
  ],
  [
    LET_GO,
    (rnd) => ({
      keys: triples(locks(rnd.pick([1, 1, 2]))),
      args: [rnd.pick(VALUES), settings(rnd), ...letGoOp(rnd)],
    }),
  ],
  [
    EXTEND,
    (rnd) => ({
      keys: locks(rnd.int(1, 2)),
      args: [rnd.pick(VALUES), ttlArg(rnd), ...(rnd.chance(0.5) ? ['c'] : [])],
    }),
  ],
  [
    EXTEND_MANY,
    (rnd) => {
      const count = rnd.int(1, 3);
      const keys: string[] = [];
      const args = [String(count)];
      for (let i = 0; i < count; i++) {
        const size = rnd.int(1, 2);
        keys.push(...Array.from({ length: size }, () => rnd.pick(locks(3))));
        args.push(String(size), rnd.pick(VALUES), ttlArg(rnd));
      }
      if (rnd.chance(0.5)) args.push('c');
      return { keys, args };
    },
  ],
  [
    RAISE_FENCE,
    (rnd) => {
      const keys = locks(rnd.int(1, 2));
      const tokens = keys.map(() => String(rnd.pick([rnd.int(1, 300), 2_000_000])));
      return {
        keys: [...keys, ...keys.map((k) => `${k}:fence`)],
        args: [rnd.pick(VALUES), settings(rnd), ...tokens],
      };
    },
  ],
  [INSPECT, () => ({ keys: [lock('r1'), `${lock('r1')}:fence`], args: [] })],
  [
    SEMAPHORE_ACQUIRE_SCRIPT,
    (rnd, now) => {
      const k = rnd.int(1, 3);
      const key = lock('s');
      const slots = Array.from({ length: k }, (_, i) => `${key}:permit:${i}`);
      if (rnd.chance(0.5)) slots.reverse();
      const keys = [
        ...slots,
        ...slots.map((s) => `${s}:fence`),
        `${key}:permits:queue`,
        key,
        `${key}:fence`,
        MARKER,
      ];
      const permits = String(rnd.pick([k, k, 2, 3]));
      return {
        keys,
        args: [rnd.pick(MULTI), settings(rnd), ttlArg(rnd), ticket(rnd), seed(rnd, now), permits],
      };
    },
  ],
  [
    READ_ACQUIRE_SCRIPT,
    (rnd, now) => {
      const key = lock('rw');
      const keys = [key, `${key}:fence`, `${key}:queue`, `${key}:readers`, MARKER];
      return { keys, args: [rnd.pick(READERS), settings(rnd), ttlArg(rnd), ticket(rnd), seed(rnd, now)] };
    },
  ],
  [
    READ_EXTEND_SCRIPT,
    (rnd) => ({
      keys: [lock('rw'), `${lock('rw')}:readers`],
      args: [rnd.pick(READERS), ttlArg(rnd), ...(rnd.chance(0.5) ? ['c'] : [])],
    }),
  ],
  [
    READ_LET_GO_SCRIPT,
    (rnd) => {
      const key = lock('rw');
      return {
        keys: [key, `${key}:fence`, `${key}:queue`, `${key}:readers`],
        args: [rnd.pick(READERS), settings(rnd), ...letGoOp(rnd)],
      };
    },
  ],
  [
    READ_RAISE_FENCE_SCRIPT,
    (rnd) => {
      const key = lock('rw');
      const token = String(rnd.pick([rnd.int(1, 300), 2_000_000]));
      return {
        keys: [key, `${key}:fence`, `${key}:readers`],
        args: [rnd.pick(READERS), settings(rnd), token],
      };
    },
  ],
  [READ_INSPECT_SCRIPT, () => ({ keys: [lock('rw'), `${lock('rw')}:readers`], args: [] })],
  [
    IDENTITY_CHECK,
    (rnd) => ({
      keys: [MARKER, `${MARKER}:id`],
      args: [
        rnd.pick(RUN_IDS),
        String(rnd.int(0, 1)),
        String(rnd.pick([1000, 2000, 5000])),
        fenceCounterPattern(P),
      ],
      stateKeys: [`${lock('r1')}:fence`, `${lock('r2')}:fence`, lock('r1')],
    }),
  ],
  [RUN_ID, () => ({ keys: [], args: [] })],
  [
    CLOCK_MARK,
    (rnd, now) => {
      const markers = [MARKER, `${MARKER}{a}`, `${MARKER}{b}`].slice(0, rnd.int(1, 3));
      const past = rnd.pick(['', String(now - rnd.int(200, 3000)), String(now + rnd.int(200, 3000))]);
      const args = [String(rnd.pick([600, 2000])), fenceCounterPattern(P), past, ...markers];
      return {
        keys: [],
        args,
        stateKeys: [...markers, `${lock('r1')}:fence`, `${lock('r2')}:fence`, lock('r1')],
      };
    },
  ],
  [
    SEED_SLOT_MARKERS,
    (rnd) => {
      const markers = [`${MARKER}{a}`, `${MARKER}{b}`, `${MARKER}{c}`, `${MARKER}{d}`].slice(
        0,
        rnd.int(1, 4),
      );
      return { keys: [], args: [String(rnd.pick([0, 2000])), ...markers], stateKeys: markers };
    },
  ],
  [
    ACL_PROBE,
    () => ({ keys: [`${P}{__preflight__}`, `${P}{__preflight__}:z`], args: ['__redlock_wake__:a'] }),
  ],
];

/** The scripts the voter and its guards run, each with a case generator. */
export const SCRIPTS: ReadonlyArray<[LuaScript, (rnd: Random, now: number) => Case]> = GENERATORS.map(
  ([script, generate]) => [
    script,
    (rnd, now) => {
      const { keys, args, stateKeys = [] } = generate(rnd, now);
      return { keys, args, state: stateFor(rnd, [...keys, ...stateKeys], now, args[0] ?? '') };
    },
  ],
);
