/**
 * Jepsen-style history checker for the fault-injection suite. Reads the JSON-lines histories the
 * worker processes wrote (timestamps: process.hrtime.bigint(), CLOCK_MONOTONIC, comparable across
 * the processes of one machine) and reports what a correct lock must never show.
 *
 * Definitions (all per resource):
 * - hold interval of a grant: [acquire completed, min(release called, validity end, signal
 *   aborted)], where the validity end is the latest one the holder knew (grant, or a later
 *   extension seen at abort or release); a holder whose signal aborted with a LockLostError was
 *   told it lost the lock. Two definite hold intervals that intersect are an overlap (sweep line).
 * - an acquire with no outcome in its history (the worker was killed while acquiring) is
 *   indeterminate: it possibly held [request, request + ttl]. Such intervals are reported as
 *   possible overlaps, never counted as violations (the acquire may well have failed). An acquire
 *   that returned an error (LockNotAcquiredError, QuorumUnavailableError, ...) did not hold: the
 *   library reports failure only after deciding it has no valid majority, and it frees what it got.
 * - token order: if grant A completed before acquire B was requested, token(A) < token(B); and no
 *   token is granted twice.
 * - stale write accepted: the fenced store accepted a write with token t although an operation with
 *   a higher token had already been acknowledged by the store (read or write) before the write was
 *   sent. Late writes (sent after the writer's validity ended) are counted too; they are harmless
 *   when rejected, or when no newer holder had touched the store yet.
 * - lost updates: acknowledged increments minus the final counter (writes whose reply was never
 *   seen, because the worker was killed, may or may not have landed: they widen the bound).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/** One line of a worker history, as written by worker.mjs. */
export interface HistoryEvent {
  ev: string;
  t: string;
  i?: number;
  id?: string;
  resource?: string;
  token?: number;
  validityEnd?: string;
  error?: string;
  message?: string;
  ok?: boolean;
  value?: number;
  ttl?: number;
  wait?: number;
  paused?: boolean;
  reason?: string;
  tq?: string;
  afterExpiry?: boolean;
  at?: string;
  /** The semaphore slot a grant holds (worker.mjs logs lock.permit). */
  permit?: number;
  /** The semaphore's permits, at the request. */
  permits?: number;
  /** A read-write lock's mode (S27: requested at the request, held at the grant). */
  mode?: 'read' | 'write';
}

export interface Acquire {
  worker: string;
  i: number;
  resource: string;
  ttl: number;
  wait: number;
  /** The worker stopped itself right after sending this acquire (S2). */
  paused: boolean;
  /** ms on the shared monotonic clock. */
  request: number;
  outcome: 'granted' | 'failed' | 'indeterminate';
  /** A semaphore's permits (undefined: a plain lock). */
  permits?: number;
  /** The semaphore slot granted (ours only: a peer's semaphore has no slots). */
  permit?: number;
  /** A read-write lock's mode (undefined: a plain lock, not logged as one). */
  mode?: 'read' | 'write';
  /** When the acquire returned (granted or failed). */
  end?: number;
  error?: string;
  /** First 200 characters of the error message. */
  message?: string;
  token?: number;
  /** Validity end known at the grant. */
  grantValidityEnd?: number;
  /** Latest validity end known (moves with extensions). */
  validityEnd?: number;
  releaseCalled?: number;
  abort?: { t: number; reason: string; validityEnd: number };
  extensions: Array<{
    request: number;
    t: number;
    ok: boolean;
    error?: string;
    message?: string;
    afterExpiry: boolean;
  }>;
  staleReleases: Array<{ request: number; t: number; ok: boolean }>;
  pausedInHold: boolean;
}

export interface StoreOp {
  worker: string;
  i: number;
  resource: string;
  kind: 'read' | 'write';
  token?: number;
  request: number;
  ack?: number;
  ok?: boolean;
  value?: number;
}

export interface History {
  worker: string;
  acquires: Acquire[];
  ops: StoreOp[];
  /** The worker logged its normal end. */
  ended: boolean;
  crash?: string;
}

const ms = (t: string | undefined): number => (t === undefined ? NaN : Number(BigInt(t)) / 1e6);

/** Parses one worker's history file (a truncated last line, from a SIGKILL, is ignored). */
export function parseHistory(text: string, worker: string): History {
  const acquires: Acquire[] = [];
  const ops: StoreOp[] = [];
  const byI = new Map<number, Acquire>();
  const pendingOps = new Map<string, StoreOp>();
  let ended = false;
  let crash: string | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let e: HistoryEvent;
    try {
      e = JSON.parse(line) as HistoryEvent;
    } catch {
      continue;
    }
    const t = ms(e.t);
    const a = e.i === undefined ? undefined : byI.get(e.i);
    switch (e.ev) {
      case 'request': {
        const acq: Acquire = {
          worker,
          i: e.i!,
          resource: e.resource!,
          ttl: e.ttl!,
          wait: e.wait ?? 0,
          paused: e.paused === true,
          permits: e.permits,
          mode: e.mode,
          request: t,
          outcome: 'indeterminate',
          extensions: [],
          staleReleases: [],
          pausedInHold: false,
        };
        acquires.push(acq);
        byI.set(acq.i, acq);
        break;
      }
      case 'grant':
        if (!a) break;
        a.outcome = 'granted';
        a.end = t;
        a.token = e.token;
        a.permit = e.permit;
        if (e.mode) a.mode = e.mode;
        a.grantValidityEnd = a.validityEnd = ms(e.validityEnd);
        break;
      case 'fail':
        if (!a) break;
        a.outcome = 'failed';
        a.end = t;
        a.error = e.error;
        a.message = e.message;
        break;
      case 'abort':
        if (!a) break;
        a.abort = { t, reason: e.reason ?? '?', validityEnd: ms(e.validityEnd) };
        a.validityEnd = Math.max(a.validityEnd ?? -Infinity, ms(e.validityEnd));
        break;
      case 'release':
        if (!a) break;
        a.releaseCalled ??= t;
        a.validityEnd = Math.max(a.validityEnd ?? -Infinity, ms(e.validityEnd));
        break;
      case 'extend':
        a?.extensions.push({
          request: ms(e.tq),
          t,
          ok: e.ok === true,
          error: e.error,
          message: e.message,
          afterExpiry: !!e.afterExpiry,
        });
        break;
      case 'stale-release':
        if (!a) break;
        a.staleReleases.push({ request: ms(e.tq), t, ok: e.ok === true });
        a.releaseCalled ??= ms(e.tq);
        break;
      case 'pause':
        if (a && e.at === 'hold') a.pausedInHold = true;
        break;
      case 'read-req':
      case 'write-req': {
        const op: StoreOp = {
          worker,
          i: e.i!,
          resource: e.resource!,
          kind: e.ev === 'read-req' ? 'read' : 'write',
          token: e.token,
          request: t,
          value: e.value,
        };
        ops.push(op);
        pendingOps.set(`${op.kind}:${op.i}`, op);
        break;
      }
      case 'read-ack':
      case 'write-ack': {
        const op = pendingOps.get(`${e.ev === 'read-ack' ? 'read' : 'write'}:${e.i}`);
        if (!op) break;
        op.ack = t;
        op.ok = e.ok === true;
        if (op.kind === 'read') op.value = e.value;
        break;
      }
      case 'end':
        ended = true;
        break;
      case 'crash':
        crash = e.message;
        break;
    }
  }
  return { worker, acquires, ops, ended, crash };
}

export function readHistory(file: string): History {
  return parseHistory(readFileSync(file, 'utf8'), basename(file).replace(/\.jsonl$/, ''));
}

export interface Report {
  workers: number;
  attempts: number;
  grants: number;
  failures: Record<string, number>;
  /** grants / attempts with an outcome. */
  availability: number;
  indeterminateAcquires: number;
  overlaps: number;
  possibleOverlaps: number;
  tokenOrderViolations: number;
  duplicateTokens: number;
  /** Grants whose validity had already ended, or (single-attempt acquires) took >= ttl. */
  lateGrants: number;
  maxAttemptMs: number;
  /** Largest jump between consecutive granted tokens of a resource. */
  maxTokenStep: number;
  reads: number;
  readsRejected: number;
  writes: number;
  writesAccepted: number;
  writesRejected: number;
  writesIndeterminate: number;
  staleWritesAccepted: number;
  /** The stale writes the store accepted (for the timelines). */
  staleWrites: StoreOp[];
  lateWrites: number;
  lateWritesAccepted: number;
  finalCounter: number;
  acknowledgedIncrements: number;
  lostUpdates: number;
  /** Final counter above acknowledged + indeterminate increments: should never happen. */
  unexplainedIncrements: number;
  examples: string[];
  acquires: Acquire[];
  ops: StoreOp[];
}

const fmt = (n: number) => n.toFixed(1);

/**
 * What the exclusion, token and store checks run per: the resource of a plain lock, one slot of
 * our semaphore (`<resource>#<permit>`: each permit is a lock of its own, with its own tokens and
 * fenced counter), and nothing for a peer's semaphore, which has neither slots nor tokens (its
 * holders are counted by semaphore-checks.ts), nor for a read of a read-write lock: readers share
 * the key and the last write's token, so these checks run over the writes alone, and
 * read-write-checks.ts checks the reads against them (S27).
 */
export function slotOf(a: Pick<Acquire, 'resource' | 'permit' | 'permits' | 'mode'>): string | undefined {
  if (a.permit !== undefined) return `${a.resource}#${a.permit}`;
  if (a.mode === 'read') return undefined;
  return (a.permits ?? 1) > 1 ? undefined : a.resource;
}

/**
 * Checks the histories of one run. `finalCounters` maps each resource to the fenced store's final
 * value (resources missing from it are left out of the lost-update count).
 */
export function check(
  histories: readonly History[],
  finalCounters: Readonly<Record<string, number>>,
): Report {
  const acquires = histories.flatMap((h) => h.acquires);
  const ops = histories.flatMap((h) => h.ops);
  const examples: string[] = [];
  const example = (text: string) => {
    if (examples.length < 8) examples.push(text);
  };
  const resources = [
    ...new Set([...acquires.map(slotOf).filter((slot) => slot !== undefined), ...ops.map((o) => o.resource)]),
  ];
  const granted = acquires.filter((a) => a.outcome === 'granted');
  const failures: Record<string, number> = {};
  for (const a of acquires)
    if (a.outcome === 'failed') failures[a.error ?? '?'] = (failures[a.error ?? '?'] ?? 0) + 1;
  const decided = acquires.filter((a) => a.outcome !== 'indeterminate');

  let overlaps = 0;
  let possibleOverlaps = 0;
  let tokenOrderViolations = 0;
  let duplicateTokens = 0;
  let maxTokenStep = 0;
  let staleWritesAccepted = 0;
  const staleWrites: StoreOp[] = [];
  for (const resource of resources) {
    const grants = granted.filter((a) => slotOf(a) === resource);

    // Overlaps: sweep over definite hold intervals sorted by start.
    const holds = grants
      // A lock whose signal aborted (LockLostError: the holder was told it lost the majority, and
      // its engine then freed its keys) is no longer held from that moment.
      .map((a) => ({
        a,
        start: a.end!,
        stop: Math.min(
          a.releaseCalled ?? Infinity,
          a.validityEnd!,
          a.abort?.reason === 'LockLostError' ? a.abort.t : Infinity,
        ),
      }))
      .filter((h) => h.stop > h.start)
      .sort((x, y) => x.start - y.start);
    let active: (typeof holds)[number] | undefined;
    for (const h of holds) {
      if (active && h.start < active.stop) {
        overlaps++;
        example(
          `overlap on ${resource}: ${active.a.worker}#${active.a.i} (token ${active.a.token}) held until ` +
            `${fmt(active.stop - h.start)} ms after ${h.a.worker}#${h.a.i} (token ${h.a.token}) was granted`,
        );
      }
      if (!active || h.stop > active.stop) active = h;
    }
    // Possible overlaps with indeterminate acquires (reported, not violations).
    for (const x of acquires.filter((a) => a.resource === resource && a.outcome === 'indeterminate')) {
      if (holds.some((h) => h.start < x.request + x.ttl && x.request < h.stop)) possibleOverlaps++;
    }

    // Token order: grants completed before a request carry lower tokens.
    const byEnd = [...grants].sort((x, y) => x.end! - y.end!);
    const byRequest = [...grants].sort((x, y) => x.request - y.request);
    let p = 0;
    let maxBefore: Acquire | undefined;
    for (const b of byRequest) {
      while (p < byEnd.length && byEnd[p]!.end! < b.request) {
        if (!maxBefore || byEnd[p]!.token! > maxBefore.token!) maxBefore = byEnd[p];
        p++;
      }
      if (maxBefore && maxBefore.token! >= b.token!) {
        tokenOrderViolations++;
        example(
          `token order on ${resource}: ${maxBefore.worker}#${maxBefore.i} got ${maxBefore.token} before ` +
            `${b.worker}#${b.i} asked, which got ${b.token}`,
        );
      }
    }
    const tokens = grants
      .map((a) => a.token)
      .filter((t) => t !== undefined)
      .sort((x, y) => x - y);
    for (let k = 1; k < tokens.length; k++) {
      if (tokens[k] === tokens[k - 1]) {
        duplicateTokens++;
        example(`token ${tokens[k]} granted twice on ${resource}`);
      }
      maxTokenStep = Math.max(maxTokenStep, tokens[k]! - tokens[k - 1]!);
    }

    // Stale writes: accepted although the store had acknowledged a higher token before it was sent.
    const fenced = ops.filter((o) => o.resource === resource && o.token !== undefined);
    const acked = fenced.filter((o) => o.ok && o.ack !== undefined).sort((x, y) => x.ack! - y.ack!);
    const accepted = fenced.filter((o) => o.kind === 'write' && o.ok).sort((x, y) => x.request - y.request);
    let q = 0;
    let highest: StoreOp | undefined;
    for (const w of accepted) {
      while (q < acked.length && acked[q]!.ack! < w.request) {
        if (!highest || acked[q]!.token! > highest.token!) highest = acked[q];
        q++;
      }
      if (highest && highest.token! > w.token!) {
        staleWritesAccepted++;
        staleWrites.push(w);
        example(
          `stale write accepted on ${resource}: ${w.worker}#${w.i} wrote with token ${w.token} after the store ` +
            `had acknowledged token ${highest.token} (${highest.worker}#${highest.i} ${highest.kind})`,
        );
      }
    }
  }

  let lateGrants = 0;
  for (const a of granted) {
    const tooLate = a.grantValidityEnd! <= a.end! || (a.wait === 0 && a.end! - a.request >= a.ttl);
    if (tooLate) {
      lateGrants++;
      example(`late grant: ${a.worker}#${a.i} took ${fmt(a.end! - a.request)} ms (ttl ${a.ttl})`);
    }
  }

  const byKey = new Map(acquires.map((a) => [`${a.worker}:${a.i}`, a]));
  const writes = ops.filter((o) => o.kind === 'write');
  const lateWrites = writes.filter((w) => {
    const a = byKey.get(`${w.worker}:${w.i}`);
    return a?.validityEnd !== undefined && w.request > a.validityEnd;
  });

  let finalCounter = 0;
  let acknowledgedIncrements = 0;
  let lostUpdates = 0;
  let unexplainedIncrements = 0;
  for (const [resource, final] of Object.entries(finalCounters)) {
    const w = writes.filter((o) => o.resource === resource);
    const ok = w.filter((o) => o.ok === true).length;
    const unknown = w.filter((o) => o.ack === undefined).length;
    finalCounter += final;
    acknowledgedIncrements += ok;
    lostUpdates += Math.max(0, ok - final);
    unexplainedIncrements += Math.max(0, final - ok - unknown);
  }

  const attemptMs = decided.map((a) => a.end! - a.request);
  return {
    workers: histories.length,
    attempts: acquires.length,
    grants: granted.length,
    failures,
    availability: decided.length ? granted.length / decided.length : 0,
    indeterminateAcquires: acquires.length - decided.length,
    overlaps,
    possibleOverlaps,
    tokenOrderViolations,
    duplicateTokens,
    lateGrants,
    maxAttemptMs: attemptMs.length ? Math.max(...attemptMs) : 0,
    maxTokenStep,
    reads: ops.filter((o) => o.kind === 'read').length,
    readsRejected: ops.filter((o) => o.kind === 'read' && o.ok === false).length,
    writes: writes.length,
    writesAccepted: writes.filter((o) => o.ok === true).length,
    writesRejected: writes.filter((o) => o.ok === false).length,
    writesIndeterminate: writes.filter((o) => o.ack === undefined).length,
    staleWritesAccepted,
    staleWrites,
    lateWrites: lateWrites.length,
    lateWritesAccepted: lateWrites.filter((o) => o.ok === true).length,
    finalCounter,
    acknowledgedIncrements,
    lostUpdates,
    unexplainedIncrements,
    examples,
    acquires,
    ops,
  };
}

/** Attempts (with an outcome) requested inside any of `windows` (ms), optionally of one resource. */
export function attemptsWithin(
  acquires: readonly Acquire[],
  windows: ReadonlyArray<{ start: number; end: number }>,
  resource?: string,
): { attempts: number; grants: number } {
  const inside = acquires.filter(
    (a) =>
      a.outcome !== 'indeterminate' &&
      (resource === undefined || a.resource === resource) &&
      windows.some((w) => a.request >= w.start && a.request < w.end),
  );
  return { attempts: inside.length, grants: inside.filter((a) => a.outcome === 'granted').length };
}

/** The writes of holders paused between their read and their write (S1), sorted by what they risk. */
export interface PausedWrites {
  /** Holders that paused in their hold. */
  readonly pauses: number;
  /** Writes sent after the pause, all of them. */
  readonly writes: number;
  /** Superseded writes (a newer token was granted first) that the store rejected: fencing worked. */
  readonly rejected: number;
  /** Superseded writes the store accepted: a stale write got in. Must be 0 with fencing. */
  readonly accepted: number;
  /**
   * Writes nobody superseded: no newer token was granted during the pause (e.g. the run ended and
   * every other worker had stopped), so the write is not stale, and the store rightly took it.
   */
  readonly notSuperseded: number;
}

/**
 * Sorts the writes of paused holders: a write is stale only if a newer token (of the same
 * resource) was granted before it was sent; a paused holder whose lock nobody took in the
 * meantime writes last, and rightly so.
 */
export function pausedWrites(report: Pick<Report, 'acquires' | 'ops'>): PausedWrites {
  const paused = report.acquires.filter((a) => a.pausedInHold);
  const writes = report.ops.filter(
    (o) => o.kind === 'write' && paused.some((a) => a.worker === o.worker && a.i === o.i),
  );
  const superseded = (o: StoreOp) =>
    report.acquires.some(
      (a) =>
        a.outcome === 'granted' &&
        a.resource === o.resource &&
        a.token !== undefined &&
        o.token !== undefined &&
        a.token > o.token &&
        a.end !== undefined &&
        a.end < o.request,
    );
  const stale = writes.filter(superseded);
  return {
    pauses: paused.length,
    writes: writes.length,
    rejected: stale.filter((o) => o.ok === false).length,
    accepted: stale.filter((o) => o.ok === true).length,
    notSuperseded: writes.length - stale.length,
  };
}

/** The figures and the note of an S1 row: what became of the paused holders' writes at `store`. */
export function describePausedWrites(
  w: PausedWrites,
  store: string,
): { figures: Record<string, number>; note: string } {
  return {
    figures: {
      pauses: w.pauses,
      pausedWritesRejected: w.rejected,
      pausedWritesAccepted: w.accepted,
      pausedWritesNotSuperseded: w.notSuperseded,
    },
    note:
      `${w.pauses} holders paused between read and write; of their ${w.writes} writes after resuming, ` +
      `${w.writes - w.notSuperseded} came after a newer token's grant: ${w.rejected} rejected by ${store}, ` +
      `${w.accepted} accepted` +
      (w.notSuperseded ? `; ${w.notSuperseded} not superseded (nobody took the lock meanwhile)` : ''),
  };
}
