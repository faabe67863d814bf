import { AsyncLocalStorage } from 'node:async_hooks';
import { LockUpgradeError, RedlockError } from '../errors.js';
import { JoinedLock, type Lock } from './lock.js';

/**
 * One storage for every engine, each context's locks under its own entry: Node keeps every storage
 * that ever ran in a process-wide list, walked at each promise created anywhere, so a storage per
 * engine would stay there (and slow every promise) after the engine is gone.
 */
const storage = new AsyncLocalStorage<ReadonlyMap<LockContext, ReadonlyMap<string, Lock>>>();

/**
 * Locks held by the current async call chain, so that a nested acquisition of a resource that is
 * already held joins it instead of waiting for itself (a deadlock until the ttl runs out).
 */
export class LockContext {
  /**
   * The held lock covering all `resources` in this call chain, as a joined view; undefined when
   * none of them is held. A read (`mode`) joins a held read or write; a write joins a held write,
   * and inside a held read it is a LockUpgradeError. Throws when only some are held: acquiring the
   * rest inside would order locks differently from other callers and can deadlock.
   */
  join(resources: readonly string[], mode: 'write' | 'read' = 'write'): JoinedLock | undefined {
    const held = storage.getStore()?.get(this);
    if (!held) return undefined;
    const owners = resources.map((r) => held.get(r));
    if (owners.every((o) => o === undefined)) return undefined;
    const first = owners[0];
    if (first && owners.every((o) => o === first)) {
      // A read joins a held write or read; a write inside a held read would wait for itself.
      if (mode === 'write' && first.mode === 'read') throw new LockUpgradeError(resources[0]!);
      return new JoinedLock(first, resources);
    }
    throw new RedlockError(
      `Cannot lock ${resources.join(', ')} inside a call that holds only some of them ` +
        `(${resources.filter((_, i) => owners[i]).join(', ')}). Lock all of them in the outer call.`,
    );
  }

  /** Runs `fn` with `lock` recorded as held for its async call chain. */
  run<T>(lock: Lock, fn: () => T): T {
    const contexts = storage.getStore();
    const held = new Map(contexts?.get(this) ?? []);
    for (const r of lock.resources) held.set(r, lock);
    return storage.run(new Map(contexts ?? []).set(this, held), fn);
  }
}
