import { Redis } from 'ioredis';
/**
 * Settings for connections the library opens itself. A dead node must fail fast instead of
 * queueing commands: the offline queue is off, and a command in flight when the connection drops
 * fails instead of being replayed after the lock decision was made.
 */
function ownedConnectionOptions(connectTimeout) {
    return {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: Math.max(connectTimeout, 500),
        retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
        // Our own subscriber connection is created with duplicate(), which copies these options.
    };
}
/** One Redis master as the engine sees it: a client, a log-safe label and its health. */
export class LockNode {
    client;
    label;
    owned;
    logger;
    /** Last connection problem, log-safe (never includes credentials). */
    lastError;
    /** Epoch ms until which the node abstains under the restart guard (0 = not abstaining). */
    abstainingUntil = 0;
    onError = (err) => this.recordError(err);
    onReady = () => this.recordReady();
    constructor(client, label, 
    /** Whether the library opened this connection (and so must close it). */
    owned, logger) {
        this.client = client;
        this.label = label;
        this.owned = owned;
        this.logger = logger;
        client.on('error', this.onError);
        client.on('ready', this.onReady);
    }
    /** Builds a node from a URL, ioredis options or a ready client. */
    static from(node, connectTimeout, logger) {
        if (node instanceof Redis) {
            const o = node.options;
            return new LockNode(node, `${o.tls ? 'rediss' : 'redis'}://${o.host}:${o.port}`, false, logger);
        }
        const defaults = ownedConnectionOptions(connectTimeout);
        if (typeof node === 'string') {
            return new LockNode(new Redis(node, defaults), redactUrl(node), true, logger);
        }
        const options = { ...defaults, ...node };
        const label = `${options.tls ? 'rediss' : 'redis'}://${options.username ? `${options.username}@` : ''}${options.host ?? 'localhost'}:${options.port ?? 6379}`;
        return new LockNode(new Redis(options), label, true, logger);
    }
    /** Runs a script by SHA, loading it on NOSCRIPT (first use, or after the node restarted). */
    run(script, keys, args) {
        return this.client.evalsha(script.sha, keys.length, ...keys, ...args).catch((err) => {
            if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
                return this.client.eval(script.source, keys.length, ...keys, ...args);
            }
            throw err;
        });
    }
    /** Resolves true once the connection is ready, false when `timeoutMs` passes first. */
    waitReady(timeoutMs) {
        if (this.client.status === 'ready')
            return Promise.resolve(true);
        if (this.client.status === 'wait')
            this.client.connect().catch(() => undefined);
        return new Promise((resolve) => {
            const done = (ready) => {
                clearTimeout(timer);
                this.client.off('ready', onReady);
                resolve(ready);
            };
            const onReady = () => done(true);
            const timer = setTimeout(() => done(false), timeoutMs);
            this.client.on('ready', onReady);
        });
    }
    /** Closes the connection if we opened it; detaches our listeners from a client passed in. */
    async close() {
        if (this.owned) {
            await this.client.quit().catch(() => this.client.disconnect());
            this.client.disconnect();
        }
        this.client.off('error', this.onError);
        this.client.off('ready', this.onReady);
    }
    recordError(err) {
        const message = describeError(err);
        if (message !== this.lastError)
            this.logger.warn(`Redis node ${this.label} is unavailable: ${message}`);
        this.lastError = message;
    }
    recordReady() {
        if (this.lastError !== undefined)
            this.logger.log(`Redis node ${this.label} is reachable again`);
        this.lastError = undefined;
    }
}
/** A log-safe message for a node error: authentication failures say what to check. */
export function describeError(err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(message)) {
        return `authentication failed (${message.split('\n')[0]}); check the node's username and password`;
    }
    return message.split('\n')[0] ?? message;
}
/** `redis://user:secret@host:6379/0` -> `redis://user:***@host:6379/0`. */
export function redactUrl(raw) {
    try {
        const url = new URL(raw);
        if (url.password)
            url.password = '***';
        return url.toString().replace(/\/$/, '');
    }
    catch {
        return '<invalid url>';
    }
}
//# sourceMappingURL=lock-node.js.map