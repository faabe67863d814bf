var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
import { Injectable } from '@nestjs/common';
import { Redlock } from '../core/redlock.js';
import { callLockedAsync, callLockedObservable } from './locked-call.js';
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
let LockService = class LockService {
    redlock;
    constructor(
    /** The framework-free engine, for what this service does not cover. */
    redlock) {
        this.redlock = redlock;
    }
    /**
     * Acquires a lock, waiting up to `options.wait` ms (module default: fail fast) while it is busy.
     * No watchdog unless `options.watchdog` is true: extend() or release() it yourself.
     * @throws LockNotAcquiredError when still busy after `wait`; QuorumUnavailableError when too few nodes answer.
     */
    acquire(keys, options) {
        return this.redlock.acquireWith(keys, options, false);
    }
    /** Like {@link acquire}, but resolves `null` when the lock stays busy. */
    tryAcquire(keys, options) {
        return this.redlock.tryAcquire(keys, options);
    }
    /**
     * Runs `fn` under the lock, extended by the watchdog (unless `watchdog: false`, bounded by
     * `maxHold`), and releases it afterwards, also when `fn` throws. Nested calls on resources
     * already held in the same async call chain join the held lock.
     */
    using(keys, fn, options) {
        return this.redlock.using(keys, fn, options);
    }
    /** Reachability of every node and whether a quorum is reachable (no I/O). */
    status() {
        const nodes = this.redlock.status();
        const reachable = nodes.filter((n) => n.reachable && n.abstainingUntil === undefined).length;
        return { quorum: this.redlock.quorum, quorumReachable: reachable >= this.redlock.quorum, nodes };
    }
    /**
     * Used by `@DistributedLock`: runs `invoke` under the lock, as an Observable when the method is
     * declared to return one, otherwise as a promise.
     * @internal
     */
    runLocked(resources, options, returnsObservable, invoke) {
        return returnsObservable
            ? callLockedObservable(this.redlock, resources, options, invoke)
            : callLockedAsync(this.redlock, resources, options, invoke);
    }
    /** Waits (bounded by `connectTimeout`) for the node connections, so the first acquire works. */
    async onModuleInit() {
        await this.redlock.connect();
    }
    /** Stops watchdogs, releases held locks and closes the connections the module opened. */
    async onApplicationShutdown() {
        await this.redlock.close();
    }
};
LockService = __decorate([
    Injectable(),
    __metadata("design:paramtypes", [Redlock])
], LockService);
export { LockService };
//# sourceMappingURL=lock.service.js.map