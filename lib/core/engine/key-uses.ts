import { LockUsageError, RedlockOptionsError } from '../errors.js';
import { describeUse } from './semaphore-request.js';

/**
 * How many keys used as a semaphore or a read-write lock this engine remembers after their last
 * lock, wait or hold ended: the window of the check beyond what it holds and waits on.
 */
export const RECENT_USES = 1000;

/**
 * How this engine uses keys as semaphores (their permits) or read-write locks (0, a reader's
 * use): a key used again with other permits, as a plain lock beside a semaphore, or as both a
 * semaphore and a read-write lock, is a LockUsageError without a command (checked on the mutex
 * path only while such a key is known; a plain lock of a read-write lock's key is its writer).
 * Known are the keys this engine holds or waits on, and the {@link RECENT_USES} used last after
 * that: memory follows what is held, not every key ever locked. Across processes, and beyond the
 * window, the scripts find the same conflicts on their busy paths.
 */
export class SemaphoreUses {
  /** Keys held or waited on: their use, and how many acquires and locks of this engine have them. */
  private readonly active = new Map<string, { readonly use: number; count: number }>();
  /** Keys whose last acquire or lock ended lately, oldest first: their use. */
  private readonly recent = new Map<string, number>();

  /**
   * Whether any key is known as a semaphore or a read-write lock: set by begin, and never cleared (a
   * key that ends stays known among the recent ones). A field: the mutex path reads it on every acquire.
   */
  any = false;

  /** The permits `name` is used with as a semaphore (0: as a read-write lock); undefined when not known. */
  permitsOf(name: string): number | undefined {
    return this.active.get(name)?.use ?? this.recent.get(name);
  }

  /**
   * Checks that the keys are used the way they are known (a write of a read-write lock's key is a
   * plain lock: allowed). A semaphore or a reader then calls {@link begin}.
   */
  check(names: readonly string[], permits: number, mode: 'write' | 'read' = 'write'): void {
    if (mode === 'read' && names.length > 1) {
      throw new RedlockOptionsError(
        'mode',
        `'read' with ${names.length} resources (${names.join(', ')})`,
        'A read lock guards one key: acquire each alone, or use a write lock for a multi-resource lock.',
      );
    }
    if (permits > 1 && names.length > 1) {
      throw new RedlockOptionsError(
        'permits',
        `${permits} with ${names.length} resources (${names.join(', ')})`,
        'A semaphore guards one key: acquire it alone, or use permits 1 for a multi-resource lock.',
      );
    }
    const use = useOf(permits, mode);
    for (const name of names) {
      const used = this.permitsOf(name);
      if (used !== undefined && used !== use && !(used === 0 && use === 1)) {
        throw new LockUsageError(name, describeUse(use), describeUse(used));
      }
    }
  }

  /** An acquire of `name` as a semaphore or a reader starts (checked): known until {@link end}. */
  begin(name: string, permits: number, mode: 'write' | 'read'): void {
    const active = this.active.get(name);
    if (active) active.count++;
    else this.active.set(name, { use: useOf(permits, mode), count: 1 });
    this.recent.delete(name);
    this.any = true;
  }

  /** An acquire of `name` failed, or its lock ended: when nothing of it is left, it becomes recent. */
  end(name: string): void {
    const active = this.active.get(name);
    if (!active || --active.count > 0) return;
    this.active.delete(name);
    this.recent.set(name, active.use);
    if (this.recent.size > RECENT_USES) this.recent.delete(this.recent.keys().next().value!);
  }
}

/** A key's use as recorded: the permits of a semaphore, 0 for a reader, 1 for a plain lock. */
function useOf(permits: number, mode: 'write' | 'read'): number {
  return mode === 'read' ? 0 : permits;
}
