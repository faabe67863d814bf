import type { LockEvents } from '../events.js';
import type { VoterClocks } from '../guards/clock/readings.js';
import type { RedlockLogger } from '../logger.js';
import type { RedlockNode, ResolvedOptions } from '../options.js';
import type { Preflight } from '../preflight.js';
import { Voters } from '../quorum/voters.js';
import { clockGuardFor } from '../resolve-options.js';
import type { Runtime } from '../runtime.js';
import { GUARD_MARKER_NAME, LockValues } from '../scripts/keys.js';
import type { ScriptSettings } from '../scripts/settings.js';
import { createVoter } from '../transport/pick.js';
import type { Voter, VoterContext } from '../voter/voter-api.js';
import { QUEUE_RECHECK_MS } from './retry-backoff.js';

/** Largest window above a voter's clock within which it seeds a new counter with the caller's proposal, ms. */
const SEED_WINDOW_MS = 200;

/** What the parts of one engine share (built once by `Redlock`). */
export interface EngineParts {
  readonly options: ResolvedOptions;
  readonly runtime: Runtime;
  readonly voters: Voters;
  readonly values: LockValues;
  /** The voters' time as this engine knows it (waiting tickets, fence seeds). */
  readonly clocks: VoterClocks;
  /**
   * How long a voter hands the lock to the first waiter for (a lock handed over, or a turn to
   * claim), ms: a waiter that died or stalls holds the lock up no longer than this.
   */
  readonly turnMs: number;
  /** The window above the voters' time that fence seeds are proposed in, ms (VoterClocks.seedProposalUs). */
  readonly seedWindowMs: number;
}

/**
 * Builds what the parts of one engine share from its resolved options: the scripts' settings, a
 * voter for each of `nodes`, the voters as one, and the timing the parts agree on (hand-over turns,
 * fence seeds).
 */
export function buildEngineParts(
  nodes: readonly RedlockNode[],
  resolved: ResolvedOptions,
  logger: RedlockLogger,
  events: LockEvents,
  preflight: Preflight | undefined,
  runtime: Runtime,
): EngineParts {
  // Long enough for a woken waiter to answer on a busy machine, short enough that a dead one
  // holds the lock up for less than a retry delay would.
  const turnMs = Math.max(4 * resolved.nodeTimeout, 200);
  const guardMs = resolved.restartGuard === false ? 0 : resolved.restartGuard;
  // Seeds agree when voters' clocks agree within the window; it stays well below the times after
  // which a counter can be seeded again (restart guard, idle expiry), which keeps seeds increasing.
  const seedWindowMs = Math.min(SEED_WINDOW_MS, (guardMs || Infinity) / 2, resolved.fenceIdleTtl / 2);
  const settings: ScriptSettings = {
    guardMs,
    guardKey: resolved.keyPrefix + GUARD_MARKER_NAME,
    fenceIdleMs: resolved.fenceIdleTtl,
    turnMs,
    queueIdleMs: 10 * QUEUE_RECHECK_MS + turnMs,
    seedWindowMs,
    clockReadings: resolved.clockGuard !== false,
  };
  const context: VoterContext = {
    settings,
    logger,
    connectTimeout: resolved.connectTimeout,
    nodeTimeout: resolved.nodeTimeout,
    preflight,
    scripts: resolved.scripts,
    runtime,
  };
  const voters = new Voters(
    createVoters(nodes, context, resolved),
    resolved.nodeTimeout,
    resolved.restartGuard,
    logger,
    events,
    runtime,
    {
      thresholdMs: clockGuardFor(resolved.clockGuard, resolved.ttl),
      excludeForMs: resolved.restartGuard === false ? resolved.ttl : resolved.restartGuard,
    },
  );
  return {
    options: resolved,
    runtime,
    voters,
    values: new LockValues(runtime),
    clocks: voters.clockGuard.clocks,
    turnMs,
    seedWindowMs,
  };
}

/**
 * A voter per node, or none: when one node is refused (bad options), the connections already opened
 * for the nodes before it are closed, or they would reconnect with nobody left to close them.
 */
function createVoters(
  nodes: readonly RedlockNode[],
  context: VoterContext,
  resolved: ResolvedOptions,
): Voter[] {
  const built: Voter[] = [];
  try {
    for (const [i, node] of nodes.entries())
      built.push(createVoter(node, context, resolved.client, `nodes[${i}]`));
    return built;
  } catch (err) {
    for (const voter of built) voter.close(0).catch(() => undefined);
    throw err;
  }
}
