/**
 * Read-write lock checks over the histories (S27). Every grant logs its mode (worker.mjs,
 * `readShare`); checker.ts runs its exclusion, token and store checks over the writes alone
 * (`slotOf`), and these check the reads against the writes:
 *
 * - writer overlaps: a write's definite hold interval intersecting any other definite hold of the
 *   resource, a read's or a write's (each such pair once). Reads intersecting reads are fine: that
 *   is the sharing (`readerOverlaps`, `maxReadersAtOnce` say it happened).
 * - token order, on the definite order of the histories (A's grant returned before B was
 *   requested): a write's token is above every write's before it; a read's token is at least every
 *   write's before it, and below every write's after it. Reads do not bump the counter, so readers
 *   share tokens: no duplicate-token check for them.
 * - writers' progress: the share of the grants that were writes against the share of the requests
 *   that were, the longest wait of a granted write, the writes that failed, and the reads that
 *   overtook a waiting writer (requested `overtakeSlackMs` or more after it, granted before it):
 *   figures; S27 asserts the share, not a bound on the wait, which faults and load move.
 */
import type { Acquire } from './checker.js';
import { holdInterval } from './semaphore-checks.js';

export interface ReadWriteReport {
  readGrants: number;
  writeGrants: number;
  /** Pairs of definite holds, at least one of them a write, that intersect. Must be 0. */
  writerOverlaps: number;
  /** Pairs of reads that held together (allowed; shows the readers shared). */
  readerOverlaps: number;
  maxReadersAtOnce: number;
  /** Writes not above an earlier write, reads below an earlier write or not below a later one. */
  tokenOrderViolations: number;
  /** Writes among the requests (with an outcome) and among the grants. */
  writeRequestShare: number;
  writeShare: number;
  /** writeShare / writeRequestShare: 1 when writes are granted as often as they are asked for. */
  writeShareRatio: number;
  writesFailed: number;
  readsFailed: number;
  longestWriteWaitMs: number;
  /** Reads requested at least overtakeSlackMs after a write that was waiting, granted before it. */
  overtakingReads: number;
  examples: string[];
}

const fmt = (n: number) => n.toFixed(1);
const name = (a: Acquire) => `${a.mode ?? 'write'} ${a.worker}#${a.i} (token ${a.token})`;

/** Index of the first element of `xs` for which `past` holds (false up to it, true from it on). */
function firstIndex<T>(xs: readonly T[], past: (x: T) => boolean): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (!past(xs[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function readWriteChecks(
  acquires: readonly Acquire[],
  resource: string,
  { overtakeSlackMs = 50 }: { overtakeSlackMs?: number } = {},
): ReadWriteReport {
  const examples: string[] = [];
  const example = (text: string) => {
    if (examples.length < 8) examples.push(text);
  };
  const mine = acquires.filter((a) => a.resource === resource && a.outcome !== 'indeterminate');
  const isRead = (a: Acquire) => a.mode === 'read';
  const granted = mine.filter((a) => a.outcome === 'granted');
  const reads = granted.filter(isRead);
  const writes = granted.filter((a) => !isRead(a));

  // (a) Exclusion: sweep the definite holds by start; each pair that intersects is seen once.
  const holds = granted
    .map((a) => ({ a, ...holdInterval(a) }))
    .filter((h) => h.stop > h.start)
    .sort((x, y) => x.start - y.start);
  let writerOverlaps = 0;
  let readerOverlaps = 0;
  for (let k = 0; k < holds.length; k++) {
    const h = holds[k]!;
    for (let j = k + 1; j < holds.length && holds[j]!.start < h.stop; j++) {
      const o = holds[j]!;
      if (isRead(h.a) && isRead(o.a)) {
        readerOverlaps++;
        continue;
      }
      writerOverlaps++;
      example(
        `writer overlap on ${resource}: ${name(h.a)} held until ${fmt(h.stop - o.start)} ms after ` +
          `${name(o.a)} was granted`,
      );
    }
  }
  let readers = 0;
  let maxReadersAtOnce = 0;
  const edges = holds
    .filter((h) => isRead(h.a))
    .flatMap((h) => [
      { t: h.start, d: 1 },
      { t: h.stop, d: -1 },
    ])
    .sort((x, y) => x.t - y.t || x.d - y.d);
  for (const e of edges) {
    readers += e.d;
    maxReadersAtOnce = Math.max(maxReadersAtOnce, readers);
  }

  // (b) Token order against the writes, on the definite order of the histories.
  const tokened = writes.filter((w) => w.token !== undefined);
  const byEnd = [...tokened].sort((x, y) => x.end! - y.end!);
  const maxUpTo: Acquire[] = []; // maxUpTo[k]: the highest-token write among byEnd[0..k]
  for (const w of byEnd) {
    const prev = maxUpTo[maxUpTo.length - 1];
    maxUpTo.push(prev && prev.token! >= w.token! ? prev : w);
  }
  const byRequest = [...tokened].sort((x, y) => x.request - y.request);
  const minFrom: Acquire[] = new Array<Acquire>(byRequest.length); // lowest token among byRequest[k..]
  for (let k = byRequest.length - 1; k >= 0; k--) {
    const next = minFrom[k + 1];
    minFrom[k] = next && next.token! <= byRequest[k]!.token! ? next : byRequest[k]!;
  }
  /** The highest-token write whose grant returned before t. */
  const before = (t: number) => maxUpTo[firstIndex(byEnd, (w) => w.end! >= t) - 1];
  /** The lowest-token write requested after t. */
  const after = (t: number) => minFrom[firstIndex(byRequest, (w) => w.request > t)];
  let tokenOrderViolations = 0;
  for (const b of granted) {
    if (b.token === undefined) continue;
    const w = before(b.request);
    if (w && (isRead(b) ? w.token! > b.token : w.token! >= b.token)) {
      tokenOrderViolations++;
      example(`token order on ${resource}: ${name(w)} was granted before ${name(b)} asked`);
    }
    const later = isRead(b) ? after(b.end!) : undefined;
    if (later && later.token! <= b.token) {
      tokenOrderViolations++;
      example(`token order on ${resource}: ${name(later)} asked after ${name(b)} was granted`);
    }
  }

  // (c) Writers' progress.
  const writeRequests = mine.filter((a) => !isRead(a)).length;
  const writeRequestShare = mine.length ? writeRequests / mine.length : 0;
  const writeShare = granted.length ? writes.length / granted.length : 0;
  const longestWriteWaitMs = Math.max(0, ...writes.map((w) => w.end! - w.request));
  const readsByEnd = [...reads].sort((x, y) => x.end! - y.end!);
  let overtakingReads = 0;
  for (const w of writes) {
    const from = firstIndex(readsByEnd, (r) => r.end! >= w.request);
    for (let k = from; k < readsByEnd.length && readsByEnd[k]!.end! < w.end!; k++) {
      if (readsByEnd[k]!.request >= w.request + overtakeSlackMs) overtakingReads++;
    }
  }
  return {
    readGrants: reads.length,
    writeGrants: writes.length,
    writerOverlaps,
    readerOverlaps,
    maxReadersAtOnce,
    tokenOrderViolations,
    writeRequestShare,
    writeShare,
    writeShareRatio: writeRequestShare ? writeShare / writeRequestShare : 0,
    writesFailed: mine.filter((a) => !isRead(a) && a.outcome === 'failed').length,
    readsFailed: mine.filter((a) => isRead(a) && a.outcome === 'failed').length,
    longestWriteWaitMs,
    overtakingReads,
    examples,
  };
}
