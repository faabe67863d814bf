import { QUEUE_RECHECK_MS } from '../../lib/core/engine/retry-backoff.js';
import type { Report } from '../faults/checker.js';
import { checkRun, type Violation } from './checks.js';
import { drawConfig, type RunConfig, type SimOptions } from './config.js';
import { FaultDriver } from './faults.js';
import { Random } from './random.js';
import { Scheduler, SimProcess } from './scheduler.js';
import { realSetImmediate, seal, unseal } from './sealed.js';
import { World, type Client } from './world.js';
import { Workload } from './workload.js';

/** What one run did and found. */
export interface RunResult {
  readonly seed: number;
  readonly config: RunConfig;
  /** Simulated time the run covered, ms. */
  readonly simulatedMs: number;
  readonly operations: number;
  readonly events: number;
  /** A hash of every event fired: a replay of the seed ends with the same. */
  readonly trace: string;
  readonly violations: readonly Violation[];
  readonly report: Report;
  readonly world: World;
  /** The liveness bound of this run, ms. */
  readonly bound: number;
  /** The most commands one client sent one voter in a simulated second. */
  readonly busiest: { link: string; commands: number };
}

/**
 * How long a waiter may take once every fault has healed (the liveness invariant), ms: a voter
 * that restarted or was marked just before the heal abstains for the restart guard, one whose
 * clock stepped is excluded for as long from its first reply after it (and both can follow each
 * other), a step back keeps keys (and markers) there longer by as much, the holds and waits still
 * running when the load stopped end within 3 ttl (a watchdog hold) + 2 ttl (a wait), a crashed
 * holder's lock expires within its ttl, and each probe ahead in line is handed over within a turn;
 * plus the back-off between attempts (QUEUE_RECHECK_MS, retryDelay + retryJitter).
 */
export function livenessBound(config: RunConfig, maxBackStepMs: number): number {
  const { ttl, restartGuard, nodeTimeout, retryDelay, retryJitter } = config.settings;
  const guard = restartGuard === false ? ttl : restartGuard;
  const turnMs = Math.max(4 * nodeTimeout, 200);
  const ahead = config.options.clients * config.keys.length;
  return (
    2 * guard +
    2 * maxBackStepMs +
    6 * ttl +
    (ahead + 1) * turnMs +
    QUEUE_RECHECK_MS +
    retryDelay +
    retryJitter
  );
}

/**
 * Most commands a client may send one voter in a simulated second: the load sends a few hundred at
 * most (waiters back off, at least by the collision back-off); a loop that retries without a pause
 * sends thousands (one per round trip).
 */
const STORM_PER_SECOND = 2000;

/**
 * Node's own drain of the microtask (and nextTick) queue, the one it runs between two setImmediate
 * callbacks (`process._tickCallback`, kept for compatibility): called from a macrotask, it lets the
 * pump fire many events per callback, each followed by the very drain setImmediate would have given
 * it (the same order, without a timer object and its async-hook records per event).
 */
const drainMicrotasks = (process as unknown as { _tickCallback?: () => void })._tickCallback;

/** Events fired per real macrotask (the process still sees its I/O between batches). */
const BATCH = 1024;

/** The pump that drains microtasks between events: a batch of events per setImmediate callback. */
function immediatePump(step: () => boolean, done: (err?: unknown) => void): void {
  if (typeof drainMicrotasks !== 'function') return onePerImmediate(step, done);
  const batch = () => {
    try {
      for (let i = 0; i < BATCH; i++) {
        if (!step()) return done();
        drainMicrotasks.call(process);
      }
    } catch (err) {
      return done(err);
    }
    realSetImmediate(batch);
  };
  realSetImmediate(batch);
}

/** The same, one event per setImmediate callback (Node drains microtasks between them). */
function onePerImmediate(step: () => boolean, done: (err?: unknown) => void): void {
  let finished = false;
  let left = 0;
  const tick = () => {
    if (finished) return;
    let more: boolean;
    try {
      more = step();
    } catch (err) {
      finished = true;
      return done(err);
    }
    if (!more) {
      finished = true;
      return done();
    }
    if (--left === 0) queue();
  };
  const queue = () => {
    left = 512;
    for (let i = 0; i < 512; i++) realSetImmediate(tick);
  };
  queue();
}

/** Each client process's pauses, from the world's log. */
function pausesOf(world: World): Map<string, Array<[number, number]>> {
  const pauses = new Map<string, Array<[number, number]>>();
  for (const e of world.log) {
    const who = /^(\S+) paused$/.exec(e.what)?.[1];
    if (who) pauses.set(who, [...(pauses.get(who) ?? []), [e.at, e.at + (e.forMs ?? 0)]]);
  }
  return pauses;
}

/** Runs the seed once, sealed (no real clock, timer or randomness reachable), and checks it. */
export async function runOnce(seed: number, options: SimOptions): Promise<RunResult> {
  const config = drawConfig(seed, options);
  const sim = new Scheduler(new SimProcess('world'), immediatePump);
  const unexpected: Violation[] = [];
  seal();
  // No stack traces (the engine reads none; capturing them is a tenth of a run's time), unless
  // SIM_STACKS=1 asks for them to see where an unexpected error came from.
  const stackTraceLimit = Error.stackTraceLimit;
  if (process.env.SIM_STACKS !== '1') Error.stackTraceLimit = 0;
  try {
    const world = new World(
      sim,
      seed,
      config.settings,
      config.network,
      config.voters,
      config.storeChecksTokens,
    );
    const workload = new Workload(world, config, {
      unexpected: (worker, what, err) =>
        unexpected.push({
          invariant: 'unexpected error',
          detail: `${worker} ${what}: ${(err as Error)?.stack ?? String(err)}`,
          keys: [],
        }),
    });
    const loadEnd = config.durationMs;
    // The largest step back the driver may make (4 ttl): the bound is fixed before the run.
    const bound = livenessBound(config, 4 * config.settings.ttl);
    const clients: Client[] = [];
    const start = (slot: number) => {
      const client = world.startClient(slot, config.clientOffsets[slot]!);
      clients[slot] = client;
      workload.drive(client, Random.stream(seed, `load:${client.process.name}`), loadEnd, bound);
    };
    for (let slot = 0; slot < options.clients; slot++) start(slot);
    const driver = new FaultDriver(world, config, seed, {
      live: () => clients.filter((c) => !c.process.dead),
      replace: (dead) => start(dead.slot),
    });
    driver.start(loadEnd);
    const expectedProbes = options.clients * config.keys.length;
    const settled = () =>
      workload.probes.length === expectedProbes &&
      workload.probes.every((p) => p.granted !== undefined || p.error !== undefined);
    const watch = () =>
      sim.at(sim.now + config.settings.ttl / 4, sim.world, () => (settled() ? sim.halt() : watch()));
    sim.at(loadEnd, sim.world, watch);
    const limit = loadEnd + bound + 4 * config.settings.ttl;
    await sim.run(limit);
    const { violations, report } = checkRun(
      config,
      workload.histories,
      world.store.values(),
      workload.probes,
      expectedProbes,
      bound,
      pausesOf(world),
    );
    const busiest = world.busiestLink();
    if (busiest.commands > STORM_PER_SECOND)
      violations.push({
        invariant: 'command storm',
        detail: `${busiest.link} sent ${busiest.commands} commands in one simulated second (more than ${STORM_PER_SECOND}: a retry loop without back-off)`,
        keys: [],
      });
    return {
      seed,
      config,
      simulatedMs: sim.now,
      operations: workload.operations,
      events: sim.fired,
      trace: (sim.trace >>> 0).toString(16).padStart(8, '0'),
      violations: [...unexpected, ...violations],
      report,
      world,
      bound,
      busiest,
    };
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
    unseal();
  }
}
