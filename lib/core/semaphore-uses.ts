import { LockUsageError, RedlockOptionsError } from './errors.js';
import { describeUse } from './semaphore.js';

/**
 * The permits of every key one engine used as a semaphore (or 0: as a read-write lock, by a
 * reader): a key used again with other permits, as a plain lock beside a semaphore, or as both a
 * semaphore and a read-write lock, is a LockUsageError without a command (checked on the mutex
 * path only while the engine has used semaphores or readers; a plain lock of a read-write lock's
 * key is its writer). Across processes the scripts find the same conflicts on their busy paths.
 */
export class SemaphoreUses {
  private readonly permits = new Map<string, number>();

  /** Whether this engine used any key as a semaphore or a read-write lock yet. */
  get any(): boolean {
    return this.permits.size > 0;
  }

  /** The permits `name` was used with as a semaphore (0: as a read-write lock); undefined when neither. */
  permitsOf(name: string): number | undefined {
    return this.permits.get(name);
  }

  /**
   * Checks that the keys are used the way they were before by this engine, and records a new
   * semaphore or read-write lock (a write of a read-write lock's key is a plain lock: allowed).
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
    const use = mode === 'read' ? 0 : permits;
    for (const name of names) {
      const used = this.permits.get(name);
      if (used === undefined) {
        if (use !== 1) this.permits.set(name, use);
      } else if (used !== use && !(used === 0 && use === 1)) {
        throw new LockUsageError(name, describeUse(use), describeUse(used));
      }
    }
  }
}
