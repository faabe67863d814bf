import { QuorumUnavailableError } from '../errors.js';
import type { Preflight } from '../preflight.js';
import { settleWithin, TIMED_OUT } from '../runtime.js';
import { connectVoters, type NodeStatus } from '../quorum/health.js';
import { clockGuardFor } from '../resolve-options.js';
import { lockKeyOf } from '../scripts/keys.js';
import type { EngineParts } from './parts.js';

/**
 * The engine's bootstrap (`Redlock.connect`): waits until every node is connected and checked
 * (preflight), at most `connectTimeout` ms, or only until a quorum of distinct servers is while
 * the others failed to connect (they join later: see connectVoters), reads the voters' clocks for
 * the clock guard (of late ones when they join), and
 * fails the bootstrap when a node is misconfigured (`preflight: 'error'`) or, under
 * `failWithoutQuorum`, when fewer than a quorum connected. `close` runs before either error is
 * thrown, so that a failed bootstrap leaves no connection open.
 */
export async function bootstrap(
  parts: EngineParts,
  preflight: Preflight | undefined,
  close: () => Promise<void>,
): Promise<NodeStatus[]> {
  const { voters, options } = parts;
  const statuses = await connectVoters(voters, options.connectTimeout);
  // The voters' time, which seeds proposed for new fence counters follow (parts.ts), is read
  // with the clock guard off too; only the guard judges the offsets.
  if (options.clockGuard !== false) await checkClocks(parts, preflight);
  else await readClocks(parts);
  const misconfigured = preflight?.bootstrapDone(voters.list);
  if (misconfigured) {
    await close();
    throw misconfigured;
  }
  if (options.failWithoutQuorum && statuses.filter((s) => s.reachable).length < voters.quorum) {
    await close();
    const failures = statuses
      .filter((s) => !s.reachable)
      .map((s) => ({
        node: s.node,
        reason: s.error ?? `no connection within ${options.connectTimeout} ms`,
      }));
    throw new QuorumUnavailableError([], voters.quorum, voters.list.length, failures);
  }
  if (options.clockGuard !== false) {
    // Those that were down join later: the same clock check then (preflight reviews each new
    // connection already), reported in the log since the bootstrap has passed.
    statuses.forEach((status, index) => {
      if (status.reachable) return;
      voters.whenJoined(index, options.connectTimeout, () => void checkClocks(parts, preflight, [index]));
    });
  }
  return statuses;
}

/**
 * The clock guard at bootstrap: reads every voter's clock (its baseline), and reports a voter
 * whose clock is offset from the others' by more than the guard: such an offset hides steps, and
 * it says that the voter's clock is not synchronised. A voter ahead is also excluded for now: this
 * engine cannot tell a steady offset from a step made before it first read the voter (which may
 * have expired locks that other engines hold there early).
 */
async function checkClocks(
  parts: EngineParts,
  preflight: Preflight | undefined,
  only?: readonly number[],
): Promise<void> {
  const { voters, options } = parts;
  await readClocks(parts, only);
  const guard = clockGuardFor(options.clockGuard, options.ttl);
  for (const { index, offsetMs } of voters.clockGuard.clocks.disagreements(guard, voters.quorum)) {
    if (only && !only.includes(index)) continue;
    // Abstaining already (its identity check found its marker running: a restart, or an engine
    // that saw its clock step marked it for every client): it counts for nobody until the guard
    // has passed, so the offset needs no refusal of this bootstrap; the abstention is logged.
    const abstaining = voters.abstains(index);
    const reported = preflight !== undefined && !abstaining;
    const excludedMs = offsetMs > 0 ? voters.clockGuard.excludeAhead(index, offsetMs, reported) : 0;
    if (!reported) continue;
    const voter = voters.list[index]!;
    preflight.add(
      voter,
      voter.label,
      `its clock is ${Math.round(Math.abs(offsetMs))} ms ${offsetMs > 0 ? 'ahead of' : 'behind'} the median ` +
        `of the voters' clocks (more than clockGuard, ${guard} ms): an offset hides the clock steps the ` +
        'clock guard looks for, and keys there do not expire when the others say' +
        (excludedMs > 0
          ? `; it does not count toward this engine's lock quorums for ${Math.round(excludedMs)} ms, since a ` +
            'step made before this engine first read it looks the same (it may have expired held locks early)'
          : ''),
      'synchronise its clock (NTP or chrony, slewing), or raise clockGuard',
    );
  }
}

/**
 * Reads every connected voter's clock once, or those of `only` (a read-only script on a probe key,
 * bounded by five node timeouts, at least 500 ms): the baseline the clock guard compares later
 * readings with, and what waiting tickets are stamped with from the first acquire on.
 */
async function readClocks(
  { voters, runtime, options }: EngineParts,
  only?: readonly number[],
): Promise<void> {
  const probeKey = lockKeyOf(options.keyPrefix, '__clock_probe__');
  await Promise.all(
    voters.list.map(async (voter, index) => {
      if (!voter.connected || (only && !only.includes(index))) return;
      const sentAt = runtime.now();
      // Once, at bootstrap: a voter still busy with its first connection gets some slack.
      const inspection = settleWithin(
        runtime,
        voter.inspect(probeKey),
        Math.max(5 * voters.nodeTimeout, 500),
      );
      const view = await inspection.catch(() => undefined);
      if (view === undefined || view === TIMED_OUT || view.clockUs === undefined) return;
      // The bootstrap judges a lead itself, against every voter read (checkClocks), and reports it.
      voters.clockGuard.noteClock(index, sentAt, runtime.now(), view.clockUs, false);
    }),
  );
}
