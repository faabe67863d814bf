/**
 * Semaphore checks over the histories (S25, S26): how many holders a k-permit semaphore had at
 * once, and whether its grants were shared fairly. Per-permit exclusion, token order and stale
 * writes are checker.ts's ordinary checks, run per slot (`slotOf`).
 */
import type { Acquire } from './checker.js';

/** The definite hold interval of a grant, as checker.ts defines it (ms, shared monotonic clock). */
export function holdInterval(a: Acquire): { start: number; stop: number } {
  return {
    start: a.end!,
    stop: Math.min(
      a.releaseCalled ?? Infinity,
      a.validityEnd ?? Infinity,
      a.abort?.reason === 'LockLostError' ? a.abort.t : Infinity,
    ),
  };
}

export interface HoldersAtOnce {
  /** Most definite holders of the resource at one instant. */
  readonly max: number;
  /** Grants that made the holders more than `permits` (each one an admission too many). */
  readonly excessGrants: number;
  /** Time with more than `permits` holders, ms. */
  readonly excessMs: number;
  /** A few of the excess grants, for the failure message. */
  readonly examples: readonly string[];
}

/**
 * Sweeps the definite hold intervals of every grant of `resource` (every slot, or a peer's
 * semaphore without slots): a start at the same instant as a stop counts after it.
 */
export function holdersAtOnce(
  acquires: readonly Acquire[],
  resource: string,
  permits: number,
): HoldersAtOnce {
  const events: Array<{ t: number; delta: 1 | -1; a: Acquire }> = [];
  for (const a of acquires) {
    if (a.resource !== resource || a.outcome !== 'granted') continue;
    const { start, stop } = holdInterval(a);
    if (stop <= start) continue;
    events.push({ t: start, delta: 1, a }, { t: stop, delta: -1, a });
  }
  events.sort((x, y) => x.t - y.t || x.delta - y.delta);
  let holders = 0;
  let max = 0;
  let excessGrants = 0;
  let excessMs = 0;
  let since = 0;
  const examples: string[] = [];
  for (const e of events) {
    if (holders > permits) excessMs += e.t - since;
    since = e.t;
    holders += e.delta;
    max = Math.max(max, holders);
    if (e.delta === 1 && holders > permits) {
      excessGrants++;
      if (examples.length < 5)
        examples.push(
          `${e.a.worker}#${e.a.i} granted ${resource}${e.a.permit === undefined ? '' : ` permit ${e.a.permit}`} ` +
            `as holder ${holders} of ${permits} permits`,
        );
    }
  }
  return { max, excessGrants, excessMs, examples };
}

/** Grants per worker of `resource`, and the worst ratio of a worker's share to the median share. */
export function shares(
  acquires: readonly Acquire[],
  resource: string,
  workers: readonly string[],
): { grants: number[]; median: number; worstRatio: number } {
  const grants = workers.map(
    (w) =>
      acquires.filter((a) => a.worker === w && a.resource === resource && a.outcome === 'granted').length,
  );
  const sorted = [...grants].sort((x, y) => x - y);
  const mid =
    sorted.length % 2
      ? sorted[(sorted.length - 1) / 2]!
      : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  // A starved worker (0 grants while the median got some) is infinitely far from its share.
  const ratio = (n: number) =>
    n === 0 || mid === 0 ? (n === mid ? 1 : Infinity) : Math.max(n / mid, mid / n);
  const worstRatio = Math.max(...grants.map(ratio));
  return { grants, median: mid, worstRatio };
}
