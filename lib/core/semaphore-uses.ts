import { LockUsageError, RedlockOptionsError } from './errors.js';
import { describeUse } from './semaphore.js';

/**
 * The permits of every key one engine used as a semaphore: a key used again with other permits,
 * or as a plain lock, is a LockUsageError without a command (checked on the mutex path only while
 * the engine has used semaphores). Across processes the slot search finds the same conflicts.
 */
export class SemaphoreUses {
  private readonly permits = new Map<string, number>();

  /** Whether this engine used any key as a semaphore yet. */
  get any(): boolean {
    return this.permits.size > 0;
  }

  /** The permits `name` was used with as a semaphore; undefined when it never was. */
  permitsOf(name: string): number | undefined {
    return this.permits.get(name);
  }

  /** Checks that the keys are used the way they were before by this engine, and records a new semaphore. */
  check(names: readonly string[], permits: number): void {
    if (permits > 1 && names.length > 1) {
      throw new RedlockOptionsError(
        'permits',
        `${permits} with ${names.length} resources (${names.join(', ')})`,
        'A semaphore guards one key: acquire it alone, or use permits 1 for a multi-resource lock.',
      );
    }
    for (const name of names) {
      const used = this.permits.get(name);
      if (used === undefined) {
        if (permits > 1) this.permits.set(name, permits);
      } else if (used !== permits) {
        throw new LockUsageError(name, describeUse(permits), describeUse(used));
      }
    }
  }
}
