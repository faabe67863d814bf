import { FENCE_SUFFIX, queueKeyOf } from '../keys.js';
import { OneWayWires } from '../voter/one-way-wires.js';
import { markerDerivable } from './key-layout.js';
import type { LetGo } from './release.js';
import { handOverSettingsArg, lockSettingsArg, readSettingsArg, type ScriptSettings } from './settings.js';

/*
 * The keys and arguments of the lock scripts, built once per engine call and shared (read-only)
 * by the voters asked in a row: an attempt asks every voter with the same ones, and so does a
 * release. Each builder keeps the last list it built (one per engine, not module-global: engines
 * with different settings must not share a settings argument), compared by the identity of the
 * lock keys array (a lock keeps one array from its acquire to its release) and the values.
 */

/**
 * The declared keys, on a Redis Cluster (key-layout.ts), of the scripts that touch a resource's
 * lock key, fence counter and queue: lock keys 1..n, fence counters n+1..2n, queues 2n+1..3n (see
 * release.ts and acquire.ts).
 */
export function resourceKeys(lockKeys: readonly string[]): string[] {
  const n = lockKeys.length;
  const keys = new Array<string>(3 * n);
  for (let i = 0; i < n; i++) {
    const key = lockKeys[i]!;
    keys[i] = key;
    keys[n + i] = key + FENCE_SUFFIX;
    keys[2 * n + i] = queueKeyOf(key); // a semaphore's slots share one queue
  }
  return keys;
}

/** The declared keys of RAISE_FENCE (fence.ts): lock keys, then their fence counters. */
export function fencedKeys(lockKeys: readonly string[]): string[] {
  return [...lockKeys, ...lockKeys.map((key) => key + FENCE_SUFFIX)];
}

/** The declared keys of INSPECT (inspect.ts): the lock key and its fence counter. */
export function inspectKeys(lockKey: string): string[] {
  return [lockKey, lockKey + FENCE_SUFFIX];
}

/** The keys and arguments of one engine's script calls (see the top of this file). */
export class ScriptCalls {
  /** The settings argument of the granting scripts: acquire, a semaphore's slot search (settings.ts). */
  readonly settings: string;
  /** The settings argument of the let-go scripts, a reader's included (settings.ts). */
  readonly handOverSettings: string;
  /** The settings argument of a reader's acquire (settings.ts). */
  readonly readSettings: string;
  /** The fence counters' idle expiry, ms, as RAISE_FENCE receives it. */
  readonly fenceIdleMs: string;
  /** The bytes of the last one-way call, encoded once for every voter of a release (voter/one-way.ts). */
  readonly oneWay = new OneWayWires();
  /** Whether the engine runs the clock guard: the acquire script then gets six arguments. */
  private readonly clockGuard: boolean;
  /** The marker a single server's acquire script derives, not sent (key-layout.ts); undefined: none. */
  private readonly derivedMarker: string | undefined;
  private lastKeys: { lockKeys: readonly string[]; keys: readonly string[] } | undefined;
  private lastAcquireKeys:
    { resourceKeys: readonly string[]; marker: string; keys: readonly string[] } | undefined;
  private lastAcquire:
    { value: string; ttlMs: number; ticket: string; seedUs?: number; args: readonly string[] } | undefined;
  private lastRelease: { value: string; args: readonly string[] } | undefined;

  constructor(settings: ScriptSettings) {
    this.clockGuard = settings.clockReadings === true;
    this.settings = lockSettingsArg(settings);
    this.handOverSettings = handOverSettingsArg(settings);
    this.readSettings = readSettingsArg(settings);
    this.derivedMarker = markerDerivable(settings.guardKey) ? settings.guardKey : undefined;
    this.fenceIdleMs = String(Math.max(0, Math.ceil(settings.fenceIdleMs)));
  }

  /** {@link resourceKeys}, shared by the calls on the same lock keys in a row (a Cluster's). */
  keys(lockKeys: readonly string[]): readonly string[] {
    if (this.lastKeys?.lockKeys !== lockKeys) this.lastKeys = { lockKeys, keys: resourceKeys(lockKeys) };
    return this.lastKeys.keys;
  }

  /**
   * The acquire script's keys: `keys` (the lock keys, or on a Cluster {@link keys} of them: see
   * key-layout.ts), then the restart-guard `marker` of these keys.
   */
  acquireKeys(keys: readonly string[], marker: string): readonly string[] {
    const last = this.lastAcquireKeys;
    if (last?.resourceKeys === keys && last.marker === marker) return last.keys;
    this.lastAcquireKeys = { resourceKeys: keys, marker, keys: [...keys, marker] };
    return this.lastAcquireKeys.keys;
  }

  /**
   * A single server's acquire keys (key-layout.ts): the lock keys, and the `marker` after them
   * unless the script derives it from them.
   */
  serverAcquireKeys(lockKeys: readonly string[], marker: string): readonly string[] {
    return marker === this.derivedMarker ? lockKeys : this.acquireKeys(lockKeys, marker);
  }

  /**
   * The acquire script's arguments (acquire.ts); with `expectedClockUs` (the clock guard: where the
   * engine expects this voter's clock, one value per voter) a list of this call's own. Under the
   * clock guard there are always six, the last two '' when absent: the count tells the script that
   * the guard runs.
   */
  acquireArgs(
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): readonly string[] {
    const shared = this.sharedAcquireArgs(value, ttlMs, ticket, seedUs);
    // Without the guard there is no sixth argument to fill (and the engine sends no expectation).
    if (expectedClockUs === undefined || !this.clockGuard) return shared;
    const args = shared.slice();
    // Whole ms in µs (VoterClocks.expectedUs): String, not toFixed, so that V8's number-to-string
    // cache serves the repeats.
    args[5] = String(expectedClockUs);
    return args;
  }

  /** The acquire arguments every voter of an attempt shares (all but the expected clock). */
  private sharedAcquireArgs(
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
  ): readonly string[] {
    const last = this.lastAcquire;
    if (
      last &&
      last.value === value &&
      last.ttlMs === ttlMs &&
      last.ticket === ticket &&
      last.seedUs === seedUs
    ) {
      return last.args;
    }
    const args = [value, this.settings, String(Math.ceil(ttlMs)), ticket];
    if (seedUs !== undefined) args.push(seedUs.toFixed(0));
    if (this.clockGuard) {
      if (seedUs === undefined) args.push('');
      args.push('');
    }
    this.lastAcquire = { value, ttlMs, ticket, seedUs, args };
    return args;
  }

  /** The arguments of a {@link LetGo} operation's script (release.ts). */
  letGoArgs(value: string, how: LetGo): readonly string[] {
    if (how.op !== 'requeue') {
      if (this.lastRelease?.value !== value)
        this.lastRelease = { value, args: [value, this.handOverSettings] };
      return this.lastRelease.args;
    }
    const { ticket, renamedTo } = how;
    return renamedTo === undefined
      ? [value, this.handOverSettings, ticket]
      : [value, this.handOverSettings, ticket, renamedTo];
  }

  /** RAISE_FENCE's arguments (fence.ts). */
  raiseFenceArgs(value: string, tokens: readonly number[]): string[] {
    return [value, this.fenceIdleMs, ...tokens.map(String)];
  }
}
