import { check, type Acquire, type Report } from '../faults/checker.js';
import { readWriteChecks } from '../faults/read-write-checks.js';
import { holdersAtOnce } from '../faults/semaphore-checks.js';
import type { RunConfig } from './config.js';
import type { Probe } from './workload.js';
import type { ClientHistory } from './history.js';

/** One invariant a run broke. */
export interface Violation {
  readonly invariant: string;
  readonly detail: string;
  /** The keys involved (their events are printed with the violation). */
  readonly keys: readonly string[];
}

/** The invariants (issue 37, item 4) over a run's histories, with the fault suite's checkers. */
export function checkRun(
  config: RunConfig,
  histories: readonly ClientHistory[],
  finalCounters: Record<string, number>,
  probes: readonly Probe[],
  expectedProbes: number,
  bound: number,
  /** Each client process's pauses, [from, to] in simulated ms. */
  pauses: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>> = new Map(),
): { violations: Violation[]; report: Report } {
  const report = check(histories, finalCounters);
  const violations: Violation[] = [];
  const add = (invariant: string, count: number, examples: readonly string[]) => {
    if (count <= 0) return;
    const related = examples.filter((e) => e.startsWith(invariant.split(' ')[0]!));
    const detail = `${count}: ${(related.length ? related : examples).slice(0, 3).join('; ')}`;
    violations.push({ invariant, detail, keys: keysIn(related.length ? related : examples) });
  };
  // Under the token assumptions: tokens strictly increase in grant order; the fenced store takes no
  // write from a holder after a later holder's; no update is lost.
  add('token order', report.tokenOrderViolations, report.examples);
  add('token granted twice', report.duplicateTokens, report.examples);
  add('stale write accepted', report.staleWritesAccepted, report.examples);
  add('lost update', report.lostUpdates, [`${report.lostUpdates} acknowledged increments lost`]);
  add('unexplained increment', report.unexplainedIncrements, ['the store counted more than was written']);
  // A grant whose validity had ended when the engine returned it; or a single attempt that took
  // the ttl or more, unless its client was paused meanwhile: the checker's rule for the fault suite,
  // where no pause lands between two rounds of one attempt (a semaphore's slots), as it does here.
  const paused = (a: Acquire) =>
    (pauses.get(a.worker) ?? []).some(([from, to]) => from < a.end! && to > a.request);
  const late = report.acquires.filter(
    (a) =>
      a.outcome === 'granted' &&
      (a.grantValidityEnd! <= a.end! || (a.wait === 0 && a.end! - a.request >= a.ttl && !paused(a))),
  );
  add(
    'late grant',
    late.length,
    late.map(
      (a) => `late grant: ${a.worker}#${a.i} took ${(a.end! - a.request).toFixed(1)} ms (ttl ${a.ttl})`,
    ),
  );
  // Under the timing assumptions: no two write holders at once, no reader beside a writer, never
  // more than k semaphore holders.
  add('overlap', report.overlaps, report.examples);
  config.keys.forEach((use, i) => {
    const key = `k${i}`;
    if (use.kind === 'sem') {
      const held = holdersAtOnce(report.acquires, key, use.permits);
      add(
        'more semaphore holders than permits',
        held.excessGrants,
        held.examples.map((e) => `${e} on ${key}`),
      );
    }
    if (use.kind === 'rw') {
      const rw = readWriteChecks(report.acquires, key);
      add('writer beside a reader or writer', rw.writerOverlaps, rw.examples);
      add('token order (read-write)', rw.tokenOrderViolations, rw.examples);
    }
  });
  // Liveness: once every fault healed, each probe (a waiter whose wait covers the bound) is granted.
  const missing = expectedProbes - probes.length;
  const refused = probes.filter((p) => p.granted === undefined);
  if (missing > 0 || refused.length > 0) {
    const lines = refused
      .slice(0, 3)
      .map(
        (p) =>
          `${p.worker} ${p.key} asked at ${(p.requestedAt / 1000).toFixed(3)} s: ${p.error ?? 'no answer'}`,
      );
    violations.push({
      invariant: 'liveness',
      detail: `${refused.length + missing} of ${expectedProbes} probes not granted within ${Math.round(bound)} ms${missing > 0 ? ` (${missing} never asked)` : ''}: ${lines.join('; ')}`,
      keys: [...new Set(refused.map((p) => p.key))],
    });
  }
  return { violations, report };
}

/** The keys (`k0`..`k4`) named in checker examples. */
export function keysIn(examples: readonly string[]): string[] {
  return [...new Set(examples.flatMap((e) => [...e.matchAll(/\bk\d+\b/g)].map((m) => m[0])))];
}
