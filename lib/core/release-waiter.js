/**
 * Wakes waiters when a lock they wait for is released, instead of polling. The release script
 * publishes the released value on `<lock key>:released` on every node; this class keeps one
 * subscriber connection per node (opened on first need) and reference-counts channel
 * subscriptions across all waiters of the process.
 */
export class ReleaseWaiter {
    nodes;
    timeoutMs;
    subscribers;
    listeners = new Map();
    closed = false;
    constructor(nodes, 
    /** Upper bound for waiting on SUBSCRIBE acknowledgements (a dead node must not stall). */
    timeoutMs) {
        this.nodes = nodes;
        this.timeoutMs = timeoutMs;
        this.subscribers = nodes.map(() => undefined);
    }
    /** Subscribes to the channels; resolves once the nodes acknowledged (or the timeout passed). */
    async subscribe(channels) {
        const subscription = new ReleaseSubscription(() => this.unsubscribe(channels, subscription.listener));
        const fresh = [];
        for (const channel of channels) {
            let set = this.listeners.get(channel);
            if (!set) {
                set = new Set();
                this.listeners.set(channel, set);
                fresh.push(channel);
            }
            set.add(subscription.listener);
        }
        if (fresh.length > 0 && !this.closed) {
            const acks = this.nodes.map((_, i) => this.subscriber(i).subscribe(...fresh).catch(() => undefined));
            await withTimeout(Promise.all(acks), this.timeoutMs);
        }
        return subscription;
    }
    /** Closes the subscriber connections. */
    async close() {
        this.closed = true;
        await Promise.all(this.subscribers.map(async (sub) => {
            if (!sub)
                return;
            await sub.quit().catch(() => undefined);
            sub.disconnect();
        }));
    }
    unsubscribe(channels, listener) {
        const gone = [];
        for (const channel of channels) {
            const set = this.listeners.get(channel);
            if (!set)
                continue;
            set.delete(listener);
            if (set.size === 0) {
                this.listeners.delete(channel);
                gone.push(channel);
            }
        }
        if (gone.length === 0 || this.closed)
            return;
        for (const sub of this.subscribers)
            sub?.unsubscribe(...gone).catch(() => undefined);
    }
    subscriber(index) {
        let sub = this.subscribers[index];
        if (!sub) {
            // Its own connection (a subscribed connection can run nothing else). Commands queue while
            // it connects; ioredis re-subscribes after a reconnect.
            sub = this.nodes[index].client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, lazyConnect: false });
            sub.on('error', () => undefined); // the node's main connection already reports its health
            sub.on('message', (channel, value) => {
                const set = this.listeners.get(channel);
                if (set)
                    for (const listener of set)
                        listener(value);
            });
            this.subscribers[index] = sub;
        }
        return sub;
    }
}
/** One waiter's subscription: wait for a release or a timeout, as many times as needed. */
export class ReleaseSubscription {
    onClose;
    wake;
    pending = false;
    lastValue;
    constructor(onClose) {
        this.onClose = onClose;
    }
    /** Called for every release message on one of our channels (from any node). */
    listener = (value) => {
        // The same release arrives once per node: wake once per released value.
        if (value === this.lastValue)
            return;
        this.lastValue = value;
        if (this.wake)
            this.wake('released');
        else
            this.pending = true;
    };
    /** Resolves on the next release, after `ms`, or when `signal` aborts, whichever is first. */
    wait(ms, signal) {
        if (this.pending) {
            this.pending = false;
            return Promise.resolve('released');
        }
        if (signal?.aborted)
            return Promise.resolve('aborted');
        return new Promise((resolve) => {
            const done = (reason) => {
                clearTimeout(timer);
                signal?.removeEventListener('abort', onAbort);
                this.wake = undefined;
                resolve(reason);
            };
            const onAbort = () => done('aborted');
            const timer = setTimeout(() => done('timeout'), ms);
            signal?.addEventListener('abort', onAbort, { once: true });
            this.wake = done;
        });
    }
    close() {
        this.onClose();
    }
}
function withTimeout(promise, ms) {
    let timer;
    const timeout = new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
//# sourceMappingURL=release-waiter.js.map