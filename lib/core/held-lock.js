import { LockLostError } from './errors.js';
/** The engine's {@link Lock}: the value, keys and validity of one grant, and its lifecycle. */
export class HeldLock {
    owner;
    value;
    resources;
    keys;
    fencingTokens;
    ttl;
    fencingToken;
    controller = new AbortController();
    state = 'held';
    expiry;
    deadline = 0;
    wallDeadline = 0;
    watchdog;
    /** Set when the watchdog stopped because `maxHold` was reached, to explain the loss. */
    maxHoldReached = false;
    constructor(owner, 
    /** The random value that identifies this holder in every lock key. */
    value, resources, 
    /** Lock keys in sorted resource order, as the scripts receive them. */
    keys, fencingTokens, 
    /** Lease in ms the watchdog extends to. */
    ttl, validityMs, now) {
        this.owner = owner;
        this.value = value;
        this.resources = resources;
        this.keys = keys;
        this.fencingTokens = fencingTokens;
        this.ttl = ttl;
        this.fencingToken = fencingTokens[resources[0]];
        this.setValidity(validityMs, now);
    }
    get expiresAt() {
        return this.wallDeadline;
    }
    get signal() {
        return this.controller.signal;
    }
    /** True until released or lost. */
    get active() {
        return this.state === 'held';
    }
    /** Monotonic time (performance.now) at which validity ends. */
    get validUntil() {
        return this.deadline;
    }
    extend(ttl) {
        return this.owner.extend(this, ttl);
    }
    release() {
        return this.owner.release(this);
    }
    [Symbol.asyncDispose]() {
        return this.release();
    }
    /** Records a new validity window; arms the timer that declares the lock lost when it ends. */
    setValidity(validityMs, now) {
        this.deadline = now + validityMs;
        this.wallDeadline = Date.now() + validityMs;
        clearTimeout(this.expiry);
        this.expiry = setTimeout(() => this.markLost(this.maxHoldReached
            ? 'it was held for longer than maxHold, so the watchdog stopped extending it'
            : 'its validity ran out before it was extended'), Math.max(0, validityMs));
        this.expiry.unref();
    }
    /** Attaches the watchdog subscription that extends this lock; it ends with the lock. */
    attachWatchdog(subscription) {
        if (this.active)
            this.watchdog = subscription;
        else
            subscription.unsubscribe();
    }
    /** Ends the lock as lost: aborts the signal at once with a LockLostError. */
    markLost(reason) {
        const error = new LockLostError(this.resources, reason);
        if (this.state !== 'held')
            return error;
        this.state = 'lost';
        this.stop();
        this.controller.abort(error);
        this.owner.lost(this);
        return error;
    }
    /** Ends the lock as released. Returns false if it had already ended. */
    markReleased() {
        if (this.state !== 'held')
            return false;
        this.state = 'released';
        this.stop();
        this.controller.abort(new DOMException('The lock was released', 'AbortError'));
        return true;
    }
    /** Whether it ended by release (as opposed to loss). */
    get released() {
        return this.state === 'released';
    }
    stop() {
        clearTimeout(this.expiry);
        this.watchdog?.unsubscribe();
        this.watchdog = undefined;
    }
}
//# sourceMappingURL=held-lock.js.map