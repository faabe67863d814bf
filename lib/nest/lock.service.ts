import { Injectable } from '@nestjs/common';
import type { Observable } from 'rxjs';
import {
  Redlock,
  type Lock,
  type LockEvent,
  type LockInspection,
  type LockOptions,
  type NodeStatus,
} from '../core/index.js';

/** Quorum health, for status endpoints and readiness probes. */
export interface LockClusterStatus {
  /** Votes a lock needs (a strict majority of the nodes). */
  readonly quorum: number;
  /** Whether enough nodes are reachable and voting right now for a lock to be granted. */
  readonly quorumReachable: boolean;
  readonly nodes: readonly NodeStatus[];
}

/**
 * Distributed locks by hand: `acquire` / `tryAcquire` return a {@link Lock} handle; `using` runs a
 * callback under the lock with automatic extension and releases it afterwards.
 *
 * ```ts
 * await this.locks.using(`order:${id}`, async (lock) => {
 *   await this.orders.save(order, lock.fencingToken);
 * });
 * ```
 *
 * To replace it in a unit test, provide any object with the same public methods
 * (`Test.createTestingModule(...).overrideProvider(LockService).useValue(fake)`), or use
 * `RedlockTestingModule` from `nest-quorum-lock/testing`, which keeps the real service on memory.
 *
 * A facade: the engine's connections are opened at bootstrap and closed at shutdown by the module
 * (`RedlockLifecycle`), whether this service is the real one or a test double.
 */
@Injectable()
export class LockService {
  /**
   * Every lock event (acquired, busy, unavailable, extended, released, lost) and node event
   * (node-down, node-up, node-abstaining). Nothing is built while nobody subscribes.
   */
  readonly events$: Observable<LockEvent>;

  constructor(
    /** The framework-free engine, for what this service does not cover. */
    readonly redlock: Redlock,
  ) {
    this.events$ = redlock.events$;
  }

  /**
   * Acquires a lock, waiting up to `options.wait` ms (module default: fail fast) while it is busy.
   * No watchdog unless `options.watchdog` is true: extend() or release() it yourself.
   * @throws LockNotAcquiredError when still busy after `wait`; QuorumUnavailableError when too few nodes answer.
   */
  acquire(keys: string | string[], options?: LockOptions): Promise<Lock> {
    return this.redlock.acquire(keys, options);
  }

  /**
   * Makes ONE attempt (it waits only when `options.wait` is given: the module's default `wait`
   * does not apply; a vote split with acquirers that came at the same moment is tried again) and
   * resolves `null` when the lock is busy.
   * @throws QuorumUnavailableError when too few nodes answer.
   */
  tryAcquire(keys: string | string[], options?: LockOptions): Promise<Lock | null> {
    return this.redlock.tryAcquire(keys, options);
  }

  /**
   * Runs `fn` under the lock, extended by the watchdog (unless `watchdog: false`, bounded by
   * `maxHold`), and releases it afterwards, also when `fn` throws. Nested calls on resources
   * already held in the same async call chain join the held lock.
   */
  using<T>(keys: string | string[], fn: (lock: Lock) => Promise<T> | T, options?: LockOptions): Promise<T> {
    return this.redlock.using(keys, fn, options);
  }

  /**
   * What a majority of the nodes says of `key`'s lock, read-only: `held`, `ttlMs` until it frees,
   * and `fencingToken`, the last token issued for it.
   * @throws QuorumUnavailableError when fewer than a majority answer.
   */
  inspect(key: string): Promise<LockInspection> {
    return this.redlock.inspect(key);
  }

  /** Each node's reachability from its connection's state, and whether a quorum votes (no I/O). */
  status(): LockClusterStatus {
    return this.summarise(this.redlock.status());
  }

  /**
   * Asks every node (PING, bounded by nodeTimeout) and reports which are reachable and whether a
   * quorum is, for status endpoints and readiness probes.
   */
  async probe(): Promise<LockClusterStatus> {
    return this.summarise(await this.redlock.probe());
  }

  private summarise(nodes: readonly NodeStatus[]): LockClusterStatus {
    const voting = nodes.filter((n) => n.reachable && n.abstainingUntil === undefined).length;
    return { quorum: this.redlock.quorum, quorumReachable: voting >= this.redlock.quorum, nodes };
  }
}
