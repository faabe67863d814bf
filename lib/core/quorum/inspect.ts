import { QuorumUnavailableError, type NodeFailure } from '../errors.js';
import type { KeyView } from '../scripts/index.js';
import { settleWithin, TIMED_OUT } from '../timeouts.js';
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
}

/** Asks every voter about `lockKey` (bounded by nodeTimeout) and gives the majority's view. */
export async function inspectLock(
  voters: Voters,
  resource: string,
  lockKey: string,
  nodeTimeout: number,
): Promise<LockInspection> {
  const failures: NodeFailure[] = [];
  const views: KeyView[] = [];
  await Promise.all(
    voters.list.map(async (voter) => {
      try {
        const view = await settleWithin(voter.inspect(lockKey), nodeTimeout);
        if (view === TIMED_OUT)
          failures.push({ node: voter.label, reason: `no reply within ${nodeTimeout} ms` });
        else views.push(view);
      } catch (err) {
        failures.push({ node: voter.label, reason: voter.failureReason(err) });
      }
    }),
  );
  if (views.length < voters.quorum) {
    throw new QuorumUnavailableError([resource], voters.quorum, voters.count, failures);
  }
  const byHolder = new Map<string, number[]>();
  for (const { holder, ttlMs } of views) {
    if (holder !== null) byHolder.set(holder, [...(byHolder.get(holder) ?? []), ttlMs ?? Infinity]);
  }
  const majority = [...byHolder.values()].find((ttls) => ttls.length >= voters.quorum);
  const fences = views.map((v) => v.fence ?? 0).sort((a, b) => b - a);
  const fence = fences[voters.quorum - 1]!;
  let ttlMs: number | null = null;
  if (majority) {
    const ttl = majority.sort((a, b) => b - a)[voters.quorum - 1]!;
    ttlMs = Number.isFinite(ttl) ? ttl : null;
  }
  return {
    held: majority !== undefined,
    ttlMs,
    fencingToken: fence > 0 ? fence : null,
  };
}
