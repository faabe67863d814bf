import { settleWithin, TIMED_OUT } from '../timeouts.js';
import type { LockInspection } from './inspect.js';
import type { Voters } from './voters.js';

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
