import { QUIET_NETWORK, type NetworkFaults } from './network.js';
import { Random } from './random.js';
import type { EngineSettings, Persistence } from './world.js';

/** The faults the world can cause (`--faults` selects among them). */
export const FAULT_KINDS = [
  'delay', // slow packets, up to twice nodeTimeout (head-of-line: later ones wait)
  'drop', // connections that drop on a command's arrival, with the command run or not
  'partition', // a client cut off from voters, both ways, then healed
  'asymmetric', // the same one way: commands arrive and run, replies do not (or the reverse)
  'crash', // a voter crashes and restarts (no persistence: empty; AOF always: whole)
  'aof', // voters on AOF everysec: a crash loses the writes since the last fsync (up to 1 s)
  'failover', // a voter replaced by its replica, which lagged behind
  'flush', // FLUSHALL on a voter
  'stop', // a voter stopped (SIGSTOP) for a while: everything sent to it waits
  'clock', // a voter's wall clock steps forward or back
  'drift', // voters' clocks drift, up to 500 ppm
  'pause', // a client paused (GC, SIGSTOP), often past the ttl
  'client-crash', // a client process dies without releasing; a new one starts
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What a control switches off, and the violation it must then show. */
export const CONTROLS = ['restart', 'clock', 'fencing'] as const;
export type Control = (typeof CONTROLS)[number];

/** The options of a series of runs (the command line's). */
export interface SimOptions {
  readonly voters: number;
  readonly clients: number;
  /** The fault kinds a run may draw. */
  readonly faults: readonly FaultKind[];
  /** Every selected kind in every run (no swarm): the speed measurement. */
  readonly allFaults: boolean;
  readonly control?: Control;
  /**
   * State loss and forward clock steps each on a minority, but together on a majority (the known
   * issue of test/sim/cases.ts); by default they share one budget: a minority of voters in all.
   */
  readonly separateBudgets?: boolean;
}

export const DEFAULT_OPTIONS: SimOptions = { voters: 5, clients: 3, faults: FAULT_KINDS, allFaults: false };

/** How a key is used in a run (a key keeps one use: the engine refuses mixing them). */
export type KeyUse =
  { readonly kind: 'mutex' } | { readonly kind: 'rw' } | { readonly kind: 'sem'; readonly permits: number };

/** What a client may start. */
export const OPS = [
  'plain',
  'try',
  'multi',
  'watchdog',
  'atLeast',
  'extend',
  'sem',
  'read',
  'write',
] as const;
export type OpKind = (typeof OPS)[number];

/** Everything one run is made of, drawn from its seed and the options. */
export interface RunConfig {
  readonly seed: number;
  readonly options: SimOptions;
  readonly settings: EngineSettings;
  /** The faulty, loaded phase, ms; then every fault heals and the liveness probes run. */
  readonly durationMs: number;
  readonly voters: ReadonlyArray<{ persistence: Persistence; driftPpm: number; replicaLagMs: number }>;
  /** Each client's wall clock offset, ms. */
  readonly clientOffsets: readonly number[];
  readonly network: NetworkFaults;
  /** The fault kinds of this run, each with its mean interval between events, ms. */
  readonly faults: ReadonlyMap<FaultKind, number>;
  readonly keys: readonly KeyUse[];
  readonly ops: ReadonlyArray<readonly [OpKind, number]>;
  /** The largest gap between two operations a client starts, ms (ttl / 20). */
  readonly opGapMs: number;
  readonly storeChecksTokens: boolean;
  /** Faults keep to the assumptions (state loss and forward steps on a minority at a time). */
  readonly assumptions: boolean;
}

const logUniform = (rng: Random, min: number, max: number) =>
  Math.exp(rng.between(Math.log(min), Math.log(max)));

/** Draws a run's configuration from its seed ("swarm" testing: each run its own mix). */
export function drawConfig(seed: number, options: SimOptions): RunConfig {
  const rng = Random.stream(seed, 'config');
  const kindsRng = (kind: string) => Random.stream(seed, `fault:${kind}`);
  const control = options.control;
  const ttl = Math.round(rng.pick([1000, 2000, 5000, 10_000]) * rng.between(0.8, 1.2));
  const nodeTimeout = rng.pick([50, 100, 100, 200]);
  const guardOff = control === 'restart';
  const restartGuard = guardOff ? false : Math.round(ttl * rng.between(1, 3));
  const settings: EngineSettings = {
    ttl,
    nodeTimeout,
    restartGuard,
    clockGuard: control === 'clock' ? false : undefined,
    healHolds: true,
    retryDelay: 200,
    retryJitter: 50,
  };
  let kinds = options.faults.filter((kind) => options.allFaults || kindsRng(kind).chance(0.5));
  if (control === 'restart') kinds = ['crash'];
  if (control === 'clock') kinds = ['clock', 'delay'];
  if (control === 'fencing') kinds = ['pause'];
  const faults = new Map<FaultKind, number>();
  for (const kind of kinds) faults.set(kind, logUniform(kindsRng(kind), 1, 8) * ttl);
  if (control) for (const kind of kinds) faults.set(kind, ttl * (control === 'fencing' ? 1 : 0.5));
  const aof = faults.has('aof');
  const voters = Array.from({ length: options.voters }, () => ({
    persistence: (aof
      ? rng.pick(['none', 'everysec', 'everysec', 'always'])
      : rng.pick(['none', 'none', 'always'])) as Persistence,
    driftPpm: faults.has('drift') ? rng.between(-500, 500) : 0,
    replicaLagMs: Math.round(logUniform(rng, 100, 1000)),
  }));
  if (control === 'restart') for (const v of voters) v.persistence = 'none';
  const network: NetworkFaults = {
    ...QUIET_NETWORK,
    ...(faults.has('delay') ? { slowShare: logUniform(rng, 0.001, 0.05), slowDelayMs: 2 * nodeTimeout } : {}),
    ...(faults.has('drop') ? { dropShare: logUniform(rng, 0.0002, 0.01) } : {}),
  };
  const keys: KeyUse[] = Array.from({ length: 5 }, (_, i) => {
    if (i === 0 || control) return { kind: 'mutex' };
    const r = rng.next();
    return r < 0.5 ? { kind: 'mutex' } : r < 0.75 ? { kind: 'rw' } : { kind: 'sem', permits: rng.int(2, 3) };
  });
  const usable = (op: OpKind) =>
    op === 'sem'
      ? keys.some((k) => k.kind === 'sem')
      : op === 'read' || op === 'write'
        ? keys.some((k) => k.kind === 'rw')
        : true;
  let ops = OPS.filter(usable).map((op) => [op, rng.chance(0.7) ? logUniform(rng, 0.2, 5) : 0] as const);
  if (control === 'fencing')
    ops = [
      ['watchdog', 1],
      ['plain', 1],
    ];
  if (ops.every(([, weight]) => weight === 0)) ops = [['plain', 1]];
  return {
    seed,
    options,
    settings,
    durationMs: Math.round(ttl * rng.between(10, 30)),
    voters,
    clientOffsets: Array.from({ length: options.clients }, () =>
      rng.chance(0.3) ? rng.between(-10_000, 10_000) : 0,
    ),
    network,
    faults,
    keys,
    ops,
    opGapMs: ttl / 20,
    storeChecksTokens: control !== 'fencing',
    assumptions: control === undefined || control === 'fencing' || control === 'clock',
  };
}

/** One line that says what a run was made of (printed with its seed). */
export function describeConfig(c: RunConfig): string {
  const s = c.settings;
  const faults = [...c.faults].map(([kind, ms]) => `${kind}/${(ms / 1000).toFixed(1)}s`).join(' ') || 'none';
  const keys = c.keys.map((k) => (k.kind === 'sem' ? `sem${k.permits}` : k.kind)).join(',');
  return (
    `ttl ${s.ttl} ms, nodeTimeout ${s.nodeTimeout}, restartGuard ${s.restartGuard}, clockGuard ${s.clockGuard ?? 'default'}, ` +
    `healHolds ${s.healHolds}; ${(c.durationMs / 1000).toFixed(1)} s; voters ${c.voters.map((v) => v.persistence).join(',')}; ` +
    `keys ${keys}; faults ${faults}`
  );
}
