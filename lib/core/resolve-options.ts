import { chooseClientPackage, clientOption } from './clients/load.js';
import type { RedisClientPackage } from './clients/types.js';
import { RedlockOptionsError } from './errors.js';
import { validateNodes } from './node-checks.js';
import {
  checkTtlWithinGuard,
  MAX_FENCE_IDLE_MS,
  nonNegative,
  positive,
  positiveOrInfinity,
  show,
} from './option-checks.js';
import {
  DEFAULTS,
  MAX_PERMITS,
  type LockOptions,
  type RedlockOptions,
  type ResolvedLockOptions,
  type ResolvedOptions,
} from './options.js';
import type { PreflightMode } from './preflight.js';

/**
 * The clock guard of a lock of `ttl` ms: the configured one (checked against the ttl: at most a
 * quarter of it), or by default 500 ms, at most a quarter of the ttl; 0 when off.
 */
export function clockGuardFor(clockGuard: number | false | undefined, ttl: number): number {
  if (clockGuard === false) return 0;
  if (clockGuard === undefined) return Math.min(DEFAULTS.clockGuard, Math.floor(ttl / 4));
  if (clockGuard > ttl / 4) {
    throw new RedlockOptionsError(
      'clockGuard',
      `${clockGuard} ms is more than a quarter of ttl ${ttl} ms`,
      `Use at most ${Math.floor(ttl / 4)} ms (every lock's validity is shortened by it), a longer ttl, or false to turn the guard off.`,
    );
  }
  return clockGuard;
}

/** The clock drift allowance of a lease of `ttl` ms: ttl * driftFactor + 2 ms (the Redlock paper's). */
export function driftFor(driftFactor: number, ttl: number): number {
  return Math.floor(ttl * driftFactor) + 2;
}

/** Validates engine options and fills defaults. Throws {@link RedlockOptionsError} naming the fix. */
export function resolveOptions(options: RedlockOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedlockOptionsError(
      'options',
      'missing',
      'Pass an object such as { nodes: ["redis://localhost:6379"] }.',
    );
  }
  const client = resolveClient(options);
  const ttl = positive('ttl', options.ttl ?? DEFAULTS.ttl);
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new RedlockOptionsError(
      'driftFactor',
      `got ${show(driftFactor)}`,
      'Use a number in [0, 0.5), e.g. 0.01.',
    );
  }
  const nodeTimeout = positive('nodeTimeout', options.nodeTimeout ?? DEFAULTS.nodeTimeout);
  if (nodeTimeout >= ttl) {
    throw new RedlockOptionsError(
      'nodeTimeout',
      `${nodeTimeout} ms is not below ttl ${ttl} ms`,
      'A node timeout must leave most of the lease as validity: use a few ms to a few hundred ms.',
    );
  }
  const restartGuard = options.restartGuard ?? Math.max(DEFAULTS.minRestartGuard, ttl);
  if (restartGuard !== false) {
    positive('restartGuard', restartGuard);
    checkTtlWithinGuard('ttl', ttl, restartGuard);
  }
  const clockGuard = options.clockGuard;
  if (clockGuard !== undefined && clockGuard !== false) {
    nonNegative('clockGuard', clockGuard);
    clockGuardFor(clockGuard, ttl);
  }
  const keyPrefix = options.keyPrefix ?? DEFAULTS.keyPrefix;
  if (typeof keyPrefix !== 'string') {
    throw new RedlockOptionsError('keyPrefix', `got ${typeof keyPrefix}`, 'Use a string such as "redlock:".');
  }
  return {
    ttl,
    driftFactor,
    nodeTimeout,
    wait: nonNegative('wait', options.wait ?? DEFAULTS.wait),
    retryDelay: nonNegative('retryDelay', options.retryDelay ?? DEFAULTS.retryDelay),
    retryJitter: nonNegative('retryJitter', options.retryJitter ?? DEFAULTS.retryJitter),
    keyPrefix,
    restartGuard,
    fenceIdleTtl: positive('fenceIdleTtl', options.fenceIdleTtl ?? DEFAULTS.fenceIdleTtl, MAX_FENCE_IDLE_MS),
    connectTimeout: nonNegative('connectTimeout', options.connectTimeout ?? DEFAULTS.connectTimeout),
    failWithoutQuorum: flag('failWithoutQuorum', options.failWithoutQuorum ?? DEFAULTS.failWithoutQuorum),
    maxHold: positiveOrInfinity('maxHold', options.maxHold ?? DEFAULTS.maxHold),
    drainTimeout: nonNegative('drainTimeout', options.drainTimeout ?? DEFAULTS.drainTimeout),
    preflight: preflightMode(options.preflight ?? DEFAULTS.preflight),
    scripts: scriptMode(options.scripts ?? DEFAULTS.scripts),
    confirmRelease: flag('confirmRelease', options.confirmRelease ?? DEFAULTS.confirmRelease),
    clockGuard,
    healHolds: flag('healHolds', options.healHolds ?? DEFAULTS.healHolds),
    client,
  };
}

/**
 * Validates `nodes` and `client`, and settles which client package opens the connections of URL
 * strings and option objects (undefined when there are none: no package is loaded for them).
 */
function resolveClient(options: RedlockOptions): RedisClientPackage | undefined {
  const chosen = clientOption(options.client);
  // The package is only asked for the advice of a URL error: its own error must not hide that one.
  const needsPackage = validateNodes(options.nodes, () => {
    try {
      return chooseClientPackage(chosen);
    } catch {
      return undefined;
    }
  });
  return needsPackage ? chooseClientPackage(chosen) : chosen;
}

function flag(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new RedlockOptionsError(name, `got ${show(value)}`, 'Use true or false.');
}

function preflightMode(mode: unknown): PreflightMode {
  if (mode === 'error' || mode === 'warn' || mode === 'off') return mode;
  throw new RedlockOptionsError('preflight', `got ${show(mode)}`, "Use 'error', 'warn' or 'off'.");
}

function scriptMode(mode: unknown): 'eval' | 'functions' {
  if (mode === 'eval' || mode === 'functions') return mode;
  throw new RedlockOptionsError(
    'scripts',
    `got ${show(mode)}`,
    "Use 'eval' (EVALSHA), or 'functions' (FCALL, Redis 7+ or Valkey) where the servers refuse EVAL.",
  );
}

/** Merges per-call options over the engine's, validating them. */
export function resolveLockOptions(
  engine: ResolvedOptions,
  options: LockOptions | undefined,
  watchdogDefault: boolean,
): ResolvedLockOptions {
  const o = options ?? {};
  const ttl = o.ttl === undefined ? engine.ttl : positive('ttl', o.ttl);
  if (engine.restartGuard !== false) checkTtlWithinGuard('ttl', ttl, engine.restartGuard);
  if (ttl <= engine.nodeTimeout) {
    throw new RedlockOptionsError(
      'ttl',
      `${ttl} ms is not above nodeTimeout ${engine.nodeTimeout} ms`,
      'Use a longer ttl.',
    );
  }
  if (o.mode !== undefined && o.mode !== 'write' && o.mode !== 'read') {
    throw new RedlockOptionsError('mode', `got ${show(o.mode)}`, "Use 'read' or 'write' (the default).");
  }
  return {
    ttl,
    wait: o.wait === undefined ? engine.wait : nonNegative('wait', o.wait),
    retryDelay: o.retryDelay === undefined ? engine.retryDelay : nonNegative('retryDelay', o.retryDelay),
    retryJitter: o.retryJitter === undefined ? engine.retryJitter : nonNegative('retryJitter', o.retryJitter),
    watchdog: o.watchdog ?? watchdogDefault,
    maxHold: o.maxHold === undefined ? engine.maxHold : positiveOrInfinity('maxHold', o.maxHold),
    holdAtLeast: o.holdAtLeast === undefined ? 0 : resolveHoldAtLeast(engine, o.holdAtLeast),
    holder: o.holder === undefined ? undefined : holderName(o.holder),
    clockGuard: clockGuardFor(engine.clockGuard, ttl),
    drift: driftFor(engine.driftFactor, ttl),
    signal: o.signal,
    permits: o.permits === undefined ? 1 : resolvePermits(o.permits, o.mode),
    mode: o.mode ?? 'write',
  };
}

function holderName(holder: unknown): string {
  if (typeof holder === 'string') return holder;
  throw new RedlockOptionsError(
    'holder',
    `got ${show(holder)}`,
    'Use a name for log lines, e.g. "Jobs.nightly".',
  );
}

function resolvePermits(permits: number, mode: string | undefined): number {
  if (!Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
    throw new RedlockOptionsError(
      'permits',
      `got ${String(permits)}`,
      `Pass a whole number from 1 (a plain lock) to ${MAX_PERMITS}.`,
    );
  }
  if (permits > 1 && mode === 'read') {
    throw new RedlockOptionsError(
      'mode',
      "'read' with permits > 1",
      'A semaphore has no read mode: pass one of them.',
    );
  }
  return permits;
}

function resolveHoldAtLeast(engine: ResolvedOptions, holdAtLeast: number): number {
  nonNegative('holdAtLeast', holdAtLeast);
  if (engine.restartGuard !== false) checkTtlWithinGuard('holdAtLeast', holdAtLeast, engine.restartGuard);
  return holdAtLeast;
}

/** Normalises and validates resource names: a non-empty list of non-empty strings, de-duplicated. */
export function normaliseResources(keys: string | readonly string[]): string[] {
  if (typeof keys === 'string' && keys.length > 0) return [keys]; // the common case, on the hot path
  const list = typeof keys === 'string' ? [keys] : keys;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RedlockOptionsError(
      'keys',
      'no resource given',
      'Pass a non-empty string or a non-empty array of strings.',
    );
  }
  for (const [i, key] of list.entries()) {
    if (typeof key !== 'string' || key.length === 0) {
      throw new RedlockOptionsError(
        `keys[${i}]`,
        `got ${key === '' ? 'an empty string' : typeof key}`,
        'Every resource must be a non-empty string (check the key template and the arguments it reads).',
      );
    }
  }
  return [...new Set(list)];
}
