import { QuorumUnavailableError } from '../errors.js';
import type { Preflight } from '../preflight.js';
import type { NodeStatus } from '../quorum/voters.js';
import { clockGuardFor } from '../resolve-options.js';
import type { EngineParts } from './parts.js';

/**
 * The engine's bootstrap (`Redlock.connect`): waits until every node is connected and checked
 * (preflight), at most `connectTimeout` ms, or only until a quorum of distinct servers is while
 * the others failed to connect (they join later: see Voters.connect), reads the voters' clocks for
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
  const statuses = await voters.connect(options.connectTimeout);
  if (options.clockGuard !== false) await checkClocks(parts, preflight);
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
    throw new QuorumUnavailableError([], voters.quorum, voters.count, failures);
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
 * whose clock is offset from the others' by more than the guard: harmless to leases, but such an
 * offset hides steps, and it says that the voter's clock is not synchronised.
 */
async function checkClocks(
  parts: EngineParts,
  preflight: Preflight | undefined,
  only?: readonly number[],
): Promise<void> {
  const { voters, options } = parts;
  await voters.readClocks(parts.lockKey('__clock_probe__'), only);
  if (!preflight) return;
  const guard = clockGuardFor(options.clockGuard, options.ttl);
  for (const { index, offsetMs } of voters.clocks.disagreements(guard, voters.quorum)) {
    if (only && !only.includes(index)) continue;
    const voter = voters.list[index]!;
    // Abstaining already (its identity check found its marker running: a restart, or an engine
    // that saw its clock step marked it for every client): it counts for nobody until the guard
    // has passed, so the offset needs no refusal of this bootstrap; the abstention is logged.
    if (voters.abstains(index)) continue;
    preflight.add(
      voter,
      voter.label,
      `its clock is ${Math.round(Math.abs(offsetMs))} ms ${offsetMs > 0 ? 'ahead of' : 'behind'} the median ` +
        `of the other voters' (more than clockGuard, ${guard} ms): an offset hides the clock steps the ` +
        'clock guard looks for, and keys there do not expire when the others say',
      'synchronise its clock (NTP or chrony, slewing), or raise clockGuard',
    );
  }
}
