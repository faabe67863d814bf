import fc from 'fast-check';
import { RedlockOptionsError, type LockOptions, type RedlockOptions } from '../../lib/core/index.js';
import type { ResolvedOptions } from '../../lib/core/options.js';
import { normaliseResources, resolveLockOptions, resolveOptions } from '../../lib/core/resolve-options.js';

/**
 * Property-based tests of option validation (issue 14, item 4): arbitrary values for every
 * option are either accepted with sane resolved values or refused with a RedlockOptionsError that
 * names an option the caller set; never another error type. "Sane" includes "usable": a
 * duration that Node's timers cannot represent (above 2^31 - 1 ms they fire after 1 ms) or that
 * Redis cannot take as an integer number of ms must not be accepted, since it would break later,
 * far from the mistake. Resource names: any non-empty string is accepted as given; anything else
 * is refused.
 *
 * Runs per property: NUM_RUNS (reported in the test names).
 */

const NUM_RUNS = 1000;
const URLS = ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6380', 'redis://127.0.0.1:6381'];
/** The longest delay Node's setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Values a caller might pass for a duration: edge numbers, numbers and anything at all. */
const durationLike: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    0.5,
    1,
    1.5,
    99.7,
    100,
    1000,
    60_000,
    MAX_TIMER_MS,
    MAX_TIMER_MS + 1,
    1e21,
    Number.MAX_SAFE_INTEGER,
    Infinity,
    -Infinity,
    Number.NaN,
    '1000',
    null,
    true,
    false,
  ),
  fc.double(),
  fc.integer({ min: -10, max: 200_000 }),
  fc.anything(),
);

const engineOverrides = fc.record(
  {
    ttl: durationLike,
    nodeTimeout: durationLike,
    wait: durationLike,
    retryDelay: durationLike,
    retryJitter: durationLike,
    restartGuard: fc.oneof(durationLike, fc.constant(false)),
    fenceIdleTtl: durationLike,
    connectTimeout: durationLike,
    maxHold: durationLike,
    driftFactor: fc.oneof(fc.double(), fc.constantFrom(0, 0.01, 0.49, 0.5, -0.1), fc.anything()),
    keyPrefix: fc.oneof(fc.string(), fc.anything()),
    preflight: fc.oneof(fc.constantFrom('error', 'warn', 'off', 'ERROR', ''), fc.anything()),
    confirmRelease: fc.oneof(fc.boolean(), fc.constantFrom('true', 0, 1, null), fc.anything()),
  },
  { requiredKeys: [] },
);

/** Options checked against each other: ttl <= restartGuard, nodeTimeout < ttl. */
const RELATED: Record<string, string[]> = {
  ttl: ['nodeTimeout', 'restartGuard'],
  nodeTimeout: ['ttl'],
  restartGuard: ['ttl'],
};

/** A resolved duration is a finite number of ms that a timer and a Redis PX can both take. */
function expectUsableDuration(name: string, value: number, { min }: { min: number }): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value >= min && value <= MAX_TIMER_MS)) {
    throw new Error(`accepted ${name} = ${String(value)}: not a usable duration`);
  }
}

function expectSane(o: ResolvedOptions): void {
  expectUsableDuration('ttl', o.ttl, { min: Number.MIN_VALUE });
  expectUsableDuration('nodeTimeout', o.nodeTimeout, { min: Number.MIN_VALUE });
  expect(o.nodeTimeout).toBeLessThan(o.ttl);
  expectUsableDuration('wait', o.wait, { min: 0 });
  expectUsableDuration('retryDelay', o.retryDelay, { min: 0 });
  expectUsableDuration('retryJitter', o.retryJitter, { min: 0 });
  expectUsableDuration('connectTimeout', o.connectTimeout, { min: 0 });
  // maxHold is compared with the clock, not given to a timer: any positive number, or Infinity.
  expect(o.maxHold).toBeGreaterThan(0);
  if (o.restartGuard !== false) {
    expectUsableDuration('restartGuard', o.restartGuard, { min: Number.MIN_VALUE });
    expect(o.ttl).toBeLessThanOrEqual(o.restartGuard);
  }
  expect(o.fenceIdleTtl).toBeGreaterThan(0);
  // Written into the fence script's source, where 1e21 and above print as 1e+21: not a PX to Redis.
  expect(o.fenceIdleTtl).toBeLessThan(1e21);
  expect(o.driftFactor).toBeGreaterThanOrEqual(0);
  expect(o.driftFactor).toBeLessThan(0.5);
  expect(typeof o.keyPrefix).toBe('string');
  expect(['error', 'warn', 'off']).toContain(o.preflight);
  expect(typeof o.confirmRelease).toBe('boolean');
}

function outcome<T>(fn: () => T): { ok: T } | { err: unknown } {
  try {
    return { ok: fn() };
  } catch (err) {
    return { err };
  }
}

function expectOptionsError(err: unknown, allowed: readonly string[]): void {
  if (!(err instanceof RedlockOptionsError)) {
    throw new Error(`expected RedlockOptionsError, got ${fc.stringify(err)}`);
  }
  if (!allowed.includes(err.option)) {
    throw new Error(`the error names \`${err.option}\`, not one of the options set (${allowed.join(', ')})`);
  }
}

describe(`options (fast-check, ${NUM_RUNS} runs per property)`, () => {
  test(`engine options: sane resolved values, or RedlockOptionsError naming an option set (${NUM_RUNS} runs)`, () => {
    fc.assert(
      fc.property(engineOverrides, (overrides) => {
        const result = outcome(() => resolveOptions({ nodes: URLS, ...overrides } as RedlockOptions));
        if ('ok' in result) return expectSane(result.ok);
        // A conflict between two options may name either one (the message names both).
        const set = Object.keys(overrides);
        const related = set.flatMap((k) => RELATED[k] ?? []);
        expectOptionsError(result.err, [...set, ...related]);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`the options object and nodes: anything at all gives RedlockOptionsError or sane values (${NUM_RUNS} runs)`, () => {
    const nodesLike = fc.oneof(
      fc.array(fc.oneof(fc.webUrl(), fc.string(), fc.constantFrom('redis://h:1', 'rediss://', 'redis://')), {
        maxLength: 4,
      }),
      fc.array(fc.anything(), { maxLength: 3 }),
      fc.anything(),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          nodesLike.map((nodes) => ({ nodes })),
          fc.anything(),
        ),
        (options) => {
          const result = outcome(() => resolveOptions(options as RedlockOptions));
          if ('ok' in result) return expectSane(result.ok);
          if (!(result.err instanceof RedlockOptionsError)) {
            throw new Error(`expected RedlockOptionsError, got ${fc.stringify(result.err)}`);
          }
          expect(result.err.option).toMatch(/^(options|nodes(\[\d+\])?)$/);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  test(`per-call options: sane, or RedlockOptionsError naming an option set (${NUM_RUNS} runs)`, () => {
    const engine = resolveOptions({ nodes: URLS, ttl: 2000, restartGuard: 10_000 });
    const callOverrides = fc.record(
      {
        ttl: durationLike,
        wait: durationLike,
        retryDelay: durationLike,
        retryJitter: durationLike,
        maxHold: durationLike,
        holdAtLeast: durationLike,
        watchdog: fc.oneof(fc.boolean(), fc.anything()),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(callOverrides, (overrides) => {
        const result = outcome(() => resolveLockOptions(engine, overrides as LockOptions, true));
        if ('err' in result) return expectOptionsError(result.err, Object.keys(overrides));
        const o = result.ok;
        expectUsableDuration('ttl', o.ttl, { min: engine.nodeTimeout });
        expect(o.ttl).toBeLessThanOrEqual(10_000);
        expectUsableDuration('wait', o.wait, { min: 0 });
        expectUsableDuration('retryDelay', o.retryDelay, { min: 0 });
        expectUsableDuration('retryJitter', o.retryJitter, { min: 0 });
        expectUsableDuration('holdAtLeast', o.holdAtLeast, { min: 0 });
        expect(o.holdAtLeast).toBeLessThanOrEqual(10_000);
        expect(o.maxHold).toBeGreaterThan(0);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`resource names: non-empty strings as given (unicode, braces, 10 kB), else RedlockOptionsError (${NUM_RUNS} runs)`, () => {
    const name = fc.oneof(
      fc.string({ minLength: 1, unit: 'grapheme' }),
      fc.string({ minLength: 1, unit: fc.constantFrom('{', '}', 'a', ':', '*', '?', '[', '\\', ' ') }),
      fc.string({ minLength: 10_000, maxLength: 10_000, unit: 'binary' }),
    );
    const keys = fc.oneof(
      name,
      fc.array(name, { minLength: 1, maxLength: 4 }),
      fc.array(fc.oneof(name, fc.anything()), { maxLength: 4 }),
      fc.anything(),
    );
    fc.assert(
      fc.property(keys, (input) => {
        const result = outcome(() => normaliseResources(input as string | string[]));
        const list = typeof input === 'string' ? [input] : input;
        const valid =
          Array.isArray(list) &&
          list.length > 0 &&
          list.every((k: unknown) => typeof k === 'string' && k.length > 0);
        if (valid) {
          if ('err' in result) throw new Error(`refused a valid name: ${fc.stringify(result.err)}`);
          expect(result.ok).toEqual([...new Set(list as string[])]);
        } else {
          if ('ok' in result) throw new Error(`accepted ${fc.stringify(input)}`);
          if (!(result.err instanceof RedlockOptionsError)) {
            throw new Error(`expected RedlockOptionsError, got ${fc.stringify(result.err)}`);
          }
          expect(result.err.option).toMatch(/^keys(\[\d+\])?$/);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
