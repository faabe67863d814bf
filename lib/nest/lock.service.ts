import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { Lock } from '../core/lock.js';
import type { LockOptions } from '../core/options.js';
import { Redlock, type NodeStatus } from '../core/redlock.js';
import { callLockedAsync, callLockedObservable } from './locked-call.js';

/** Quorum health, for status endpoints and readiness probes. */
export interface LockClusterStatus {
  /** Votes a lock needs (a strict majority of the nodes). */
  readonly quorum: number;
  /** Whether enough nodes are reachable right now for a lock to be granted. */
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
 */
@Injectable()
export class LockService implements OnModuleInit, OnApplicationShutdown {
  constructor(
    /** The framework-free engine, for what this service does not cover. */
    readonly redlock: Redlock,
  ) {}

  /**
   * Acquires a lock, waiting up to `options.wait` ms (module default: fail fast) while it is busy.
   * No watchdog unless `options.watchdog` is true: extend() or release() it yourself.
   * @throws LockNotAcquiredError when still busy after `wait`; QuorumUnavailableError when too few nodes answer.
   */
  acquire(keys: string | string[], options?: LockOptions): Promise<Lock> {
    return this.redlock.acquireWith(keys, options, false);
  }

  /** Like {@link acquire}, but resolves `null` when the lock stays busy. */
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
   * Asks every node (PING, bounded by nodeTimeout) and reports which are reachable and whether a
   * quorum is, for status endpoints and readiness probes.
   */
  async status(): Promise<LockClusterStatus> {
    const nodes = await this.redlock.probe();
    const reachable = nodes.filter((n) => n.reachable && n.abstainingUntil === undefined).length;
    return { quorum: this.redlock.quorum, quorumReachable: reachable >= this.redlock.quorum, nodes };
  }

  /**
   * Used by `@DistributedLock`: runs `invoke` under the lock, as an Observable when the method is
   * declared to return one, otherwise as a promise.
   * @internal
   */
  runLocked(
    resources: string[],
    options: LockOptions | undefined,
    returnsObservable: boolean,
    invoke: (lock: Lock) => unknown,
  ): Promise<unknown> | Observable<unknown> {
    return returnsObservable
      ? callLockedObservable(this.redlock, resources, options, invoke)
      : callLockedAsync(this.redlock, resources, options, invoke);
  }

  /** Waits (bounded by `connectTimeout`) for the node connections, so the first acquire works. */
  async onModuleInit(): Promise<void> {
    await this.redlock.connect();
  }

  /** Stops watchdogs, releases held locks and closes the connections the module opened. */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
