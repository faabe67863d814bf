import type { EngineParts } from './engine-parts.js';
import type { LockEvents } from './events.js';
import { KeySpace } from './keys.js';
import type { RedlockLogger } from './logger.js';
import type { RedlockNode, ResolvedOptions } from './options.js';
import type { Preflight } from './preflight.js';
import { Voters } from './quorum/voters.js';
import { QUEUE_RECHECK_MS } from './queue/retry-backoff.js';
import { clockGuardFor } from './resolve-options.js';
import { LockValues, SCRIPTS, ScriptCalls, type ScriptSettings } from './scripts/index.js';
import { createVoter } from './voter/create-voter.js';
import type { VoterContext } from './voter/voter.js';
import { WriteWindow } from './voter/write-batching.js';

/** Largest window above a voter's clock within which it seeds a new counter with the caller's proposal, ms. */
const SEED_WINDOW_MS = 200;

/**
 * Builds what the parts of one engine share (see engine-parts.ts) from its resolved options: the
 * scripts' settings, a voter for each of `nodes`, the voters as one, the key space, and the
 * timing the parts agree on (hand-over turns, fence seeds, drift).
 */
export function buildEngineParts(
  nodes: readonly RedlockNode[],
  resolved: ResolvedOptions,
  logger: RedlockLogger,
  events: LockEvents,
  preflight: Preflight | undefined,
): EngineParts {
  // Long enough for a woken waiter to answer on a busy machine, short enough that a dead one
  // holds the lock up for less than a retry delay would.
  const turnMs = Math.max(4 * resolved.nodeTimeout, 200);
  const keys = new KeySpace(resolved.keyPrefix);
  const guardMs = resolved.restartGuard === false ? 0 : resolved.restartGuard;
  // Seeds agree when voters' clocks agree within the window; it stays well below the times after
  // which a counter can be seeded again (restart guard, idle expiry), which keeps seeds increasing.
  const seedWindowMs = Math.min(SEED_WINDOW_MS, (guardMs || Infinity) / 2, resolved.fenceIdleTtl / 2);
  const settings: ScriptSettings = {
    guardMs,
    guardKey: keys.guardMarker,
    fenceIdleMs: resolved.fenceIdleTtl,
    turnMs,
    queueIdleMs: 10 * QUEUE_RECHECK_MS + turnMs,
    seedWindowMs,
    // The clock guard reads each voter's clock in its grants.
    clockReadings: resolved.clockGuard !== false,
  };
  const context: VoterContext = {
    scripts: SCRIPTS,
    settings,
    calls: new ScriptCalls(settings),
    logger,
    connectTimeout: resolved.connectTimeout,
    preflight,
    writes: new WriteWindow(),
    nodeTimeout: resolved.nodeTimeout,
  };
  const voters = new Voters(
    nodes.map((node, i) => createVoter(node, context, resolved.client, `nodes[${i}]`)),
    resolved.nodeTimeout,
    resolved.restartGuard,
    logger,
    events,
    context.writes,
    {
      thresholdMs: clockGuardFor(resolved.clockGuard, resolved.ttl),
      excludeForMs: resolved.restartGuard === false ? resolved.ttl : resolved.restartGuard,
    },
    (voter) => preflight?.serverOf(voter),
  );
  const { driftFactor } = resolved;
  const { clocks } = voters;
  return {
    options: resolved,
    voters,
    keys,
    values: new LockValues(),
    clocks,
    turnMs,
    // The middle of the window above the voters' time (this process's clock until a voter's
    // clock is known): voters whose clocks are within half a window of it all take it.
    seedProposalUs: () => {
      const now = performance.now();
      const time = clocks.voterTime(now) ?? performance.timeOrigin + now;
      return Math.floor(time * 1000 + seedWindowMs * 500);
    },
    drift: (ttl) => Math.floor(ttl * driftFactor) + 2,
  };
}
