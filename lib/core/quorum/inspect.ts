import { QuorumUnavailableError, type NodeFailure } from '../errors.js';
import type { KeyView } from '../scripts/index.js';
import { settleWithin, TIMED_OUT } from '../runtime.js';
import type { Voters } from './voters.js';

/** What a majority of the voters says of one resource's lock (read-only). */
export interface LockInspection {
  /** Whether one holder has the lock on a majority. */
  readonly held: boolean;
  /** When it frees on a majority, ms from now (the quorum-th longest lease); null when not held. */
  readonly ttlMs: number | null;
  /**
   * The last fencing token issued for the resource: the quorum-th highest fence counter among the
   * voters that answered. A grant leaves a majority with counter >= its token (most often exactly
   * its token), so this is never below the last token issued; a failed attempt may have raised
   * it, and the next grant's token is above it either way. null when no voter has issued one.
   */
  readonly fencingToken: number | null;
  /**
   * Semaphores only (`permits` > 1; absent for a plain lock): for them `held` says whether any
   * permit is held, `ttlMs` when a permit frees (null while one is free), `fencingToken` the
   * highest token of any permit (tokens are per permit: see `slots`).
   */
  readonly semaphore?: SemaphoreInspection;
  /**
   * Read-write locks only, while readers hold the key on a majority (absent otherwise): 'read'.
   * `held` is then true, `ttlMs` when the longest reader's lease ends, and `readers` says how many.
   */
  readonly mode?: 'read';
  /** With `mode` 'read': the readers that hold the lock on a majority of the voters. */
  readonly readers?: number;
}

/** A semaphore's view (see {@link LockInspection.semaphore}). */
export interface SemaphoreInspection {
  /** Its permits (slots). */
  readonly permits: number;
  /** Permits held on a majority. */
  readonly holders: number;
  /** Permits free: `permits - holders`. */
  readonly free: number;
  /** 'write' (each holder holds one permit exclusively). */
  readonly mode: 'write';
  /** Per permit 0..permits-1: the slot's own view, its fencing token included. */
  readonly slots: readonly LockInspection[];
}

/** Asks every voter about `lockKey` (bounded by nodeTimeout) and gives the majority's view. */
export async function inspectLock(
  voters: Voters,
  resource: string,
  lockKey: string,
  nodeTimeout: number,
): Promise<LockInspection> {
  return (await inspectKey(voters, resource, lockKey, nodeTimeout)).inspection;
}

/** A semaphore's view: each of its slot keys inspected as a lock (`slotKeys` in permit order). */
export async function inspectSemaphore(
  voters: Voters,
  resource: string,
  slotKeys: readonly string[],
  nodeTimeout: number,
): Promise<LockInspection> {
  const slots = await Promise.all(slotKeys.map((key) => inspectLock(voters, resource, key, nodeTimeout)));
  const held = slots.filter((slot) => slot.held);
  const holders = held.length;
  const ttls = held.map((slot) => slot.ttlMs ?? Infinity);
  const soonest = Math.min(...ttls);
  const tokens = slots.map((slot) => slot.fencingToken ?? 0);
  const top = Math.max(...tokens);
  return {
    held: holders > 0,
    ttlMs: holders === slots.length && Number.isFinite(soonest) ? soonest : null,
    fencingToken: top > 0 ? top : null,
    semaphore: { permits: slots.length, holders, free: slots.length - holders, mode: 'write', slots },
  };
}

/** {@link inspectLock}, with the value a majority holds the key with (null when none). */
export async function inspectKey(
  voters: Voters,
  resource: string,
  lockKey: string,
  nodeTimeout: number,
): Promise<{ inspection: LockInspection; holder: string | null }> {
  const failures: NodeFailure[] = [];
  const views: KeyView[] = [];
  await Promise.all(
    voters.list.map(async (voter) => {
      try {
        const view = await settleWithin(voters.runtime, voter.inspect(lockKey), nodeTimeout);
        if (view === TIMED_OUT)
          failures.push({ node: voter.label, reason: `no reply within ${nodeTimeout} ms` });
        else views.push(view);
      } catch (err) {
        failures.push({ node: voter.label, reason: voter.failureReason(err) });
      }
    }),
  );
  if (views.length < voters.quorum) {
    throw new QuorumUnavailableError([resource], voters.quorum, voters.list.length, failures);
  }
  const byHolder = new Map<string, number[]>();
  for (const { holder, ttlMs } of views) {
    if (holder !== null) byHolder.set(holder, [...(byHolder.get(holder) ?? []), ttlMs ?? Infinity]);
  }
  const majorityEntry = [...byHolder.entries()].find(([, ttls]) => ttls.length >= voters.quorum);
  const majority = majorityEntry?.[1];
  const fences = views.map((v) => v.fence ?? 0).sort((a, b) => b - a);
  const fence = fences[voters.quorum - 1]!;
  let ttlMs: number | null = null;
  if (majority) {
    const ttl = majority.sort((a, b) => b - a)[voters.quorum - 1]!;
    ttlMs = Number.isFinite(ttl) ? ttl : null;
  }
  return {
    inspection: { held: majority !== undefined, ttlMs, fencingToken: fence > 0 ? fence : null },
    holder: majorityEntry?.[0] ?? null,
  };
}

/**
 * A read-write lock's view while readers hold it (its key holds READ_MARKER on a majority): the
 * plain view of the key, with `mode: 'read'` and the number of readers that a majority of the
 * voters counts among its live readers (read-only; a voter that fails or has no readers' view
 * counts none).
 */
export async function inspectReaders(
  voters: Voters,
  lockKey: string,
  inspection: LockInspection,
  nodeTimeout: number,
): Promise<LockInspection> {
  const seen = new Map<string, number>();
  await Promise.all(
    voters.list.map(async (voter) => {
      try {
        const readers = await settleWithin(
          voters.runtime,
          voter.inspectReaders?.(lockKey) ?? Promise.resolve([]),
          nodeTimeout,
        );
        if (readers === TIMED_OUT) return;
        for (const reader of readers) seen.set(reader, (seen.get(reader) ?? 0) + 1);
      } catch {
        // Counts none: the majority of the others decides.
      }
    }),
  );
  const readers = [...seen.values()].filter((count) => count >= voters.quorum).length;
  return { ...inspection, mode: 'read', readers };
}
