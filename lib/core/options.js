import { RedlockOptionsError } from './errors.js';
const DEFAULTS = {
    ttl: 10_000,
    driftFactor: 0.01,
    nodeTimeout: 100,
    wait: 0,
    retryDelay: 200,
    retryJitter: 50,
    keyPrefix: 'redlock:',
    minRestartGuard: 60_000,
    fenceIdleTtl: 7 * 24 * 3600 * 1000,
    connectTimeout: 5_000,
    maxHold: 600_000,
};
/** Validates engine options and fills defaults. Throws {@link RedlockOptionsError} naming the fix. */
export function resolveOptions(options) {
    if (options === null || typeof options !== 'object') {
        throw new RedlockOptionsError('options', 'missing', 'Pass an object such as { nodes: ["redis://localhost:6379"] }.');
    }
    validateNodes(options.nodes);
    const ttl = positive('ttl', options.ttl ?? DEFAULTS.ttl);
    const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
    if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
        throw new RedlockOptionsError('driftFactor', `got ${String(driftFactor)}`, 'Use a number in [0, 0.5), e.g. 0.01.');
    }
    const nodeTimeout = positive('nodeTimeout', options.nodeTimeout ?? DEFAULTS.nodeTimeout);
    if (nodeTimeout >= ttl) {
        throw new RedlockOptionsError('nodeTimeout', `${nodeTimeout} ms is not below ttl ${ttl} ms`, 'A node timeout must leave most of the lease as validity: use a few ms to a few hundred ms.');
    }
    const restartGuard = options.restartGuard ?? Math.max(DEFAULTS.minRestartGuard, ttl);
    if (restartGuard !== false) {
        positive('restartGuard', restartGuard);
        checkTtlWithinGuard('ttl', ttl, restartGuard);
    }
    const keyPrefix = options.keyPrefix ?? DEFAULTS.keyPrefix;
    if (typeof keyPrefix !== 'string') {
        throw new RedlockOptionsError('keyPrefix', `got ${typeof keyPrefix}`, 'Use a string such as "redlock:".');
    }
    return {
        ttl,
        driftFactor,
        nodeTimeout,
        wait: nonNegative('wait', options.wait ?? DEFAULTS.wait),
        retryDelay: nonNegative('retryDelay', options.retryDelay ?? DEFAULTS.retryDelay),
        retryJitter: nonNegative('retryJitter', options.retryJitter ?? DEFAULTS.retryJitter),
        keyPrefix,
        restartGuard,
        fenceIdleTtl: positive('fenceIdleTtl', options.fenceIdleTtl ?? DEFAULTS.fenceIdleTtl),
        connectTimeout: nonNegative('connectTimeout', options.connectTimeout ?? DEFAULTS.connectTimeout),
        maxHold: positiveOrInfinity('maxHold', options.maxHold ?? DEFAULTS.maxHold),
    };
}
/** Merges per-call options over the engine's, validating them. */
export function resolveLockOptions(engine, options, watchdogDefault) {
    const o = options ?? {};
    const ttl = o.ttl === undefined ? engine.ttl : positive('ttl', o.ttl);
    if (engine.restartGuard !== false)
        checkTtlWithinGuard('ttl', ttl, engine.restartGuard);
    if (ttl <= engine.nodeTimeout) {
        throw new RedlockOptionsError('ttl', `${ttl} ms is not above nodeTimeout ${engine.nodeTimeout} ms`, 'Use a longer ttl.');
    }
    return {
        ttl,
        wait: o.wait === undefined ? engine.wait : nonNegative('wait', o.wait),
        retryDelay: o.retryDelay === undefined ? engine.retryDelay : nonNegative('retryDelay', o.retryDelay),
        retryJitter: o.retryJitter === undefined ? engine.retryJitter : nonNegative('retryJitter', o.retryJitter),
        watchdog: o.watchdog ?? watchdogDefault,
        maxHold: o.maxHold === undefined ? engine.maxHold : positiveOrInfinity('maxHold', o.maxHold),
        signal: o.signal,
    };
}
/** Normalises and validates resource names: a non-empty list of non-empty strings, de-duplicated. */
export function normaliseResources(keys) {
    const list = typeof keys === 'string' ? [keys] : keys;
    if (!Array.isArray(list) || list.length === 0) {
        throw new RedlockOptionsError('keys', 'no resource given', 'Pass a non-empty string or a non-empty array of strings.');
    }
    for (const [i, key] of list.entries()) {
        if (typeof key !== 'string' || key.length === 0) {
            throw new RedlockOptionsError(`keys[${i}]`, `got ${key === '' ? 'an empty string' : typeof key}`, 'Every resource must be a non-empty string (check the key template and the arguments it reads).');
        }
    }
    return [...new Set(list)];
}
function validateNodes(nodes) {
    if (!Array.isArray(nodes) || nodes.length === 0) {
        throw new RedlockOptionsError('nodes', 'no Redis node given', 'Pass one or more independent masters, e.g. nodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"].');
    }
    nodes.forEach((node, i) => {
        if (typeof node === 'string') {
            let url;
            try {
                url = new URL(node);
            }
            catch {
                throw new RedlockOptionsError(`nodes[${i}]`, 'not a valid URL', 'Use redis://[user:password@]host:port[/db] or rediss:// for TLS.');
            }
            if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
                throw new RedlockOptionsError(`nodes[${i}]`, `unsupported scheme "${url.protocol}"`, 'Use redis://host:port, or rediss://host:port for TLS.');
            }
            if (!url.hostname) {
                throw new RedlockOptionsError(`nodes[${i}]`, 'the URL has no host', 'Use redis://host:port.');
            }
        }
        else if (node === null || typeof node !== 'object') {
            throw new RedlockOptionsError(`nodes[${i}]`, `got ${String(node)}`, 'Use a redis:// URL, ioredis options or an ioredis client.');
        }
    });
}
function checkTtlWithinGuard(option, ttl, restartGuard) {
    if (ttl > restartGuard) {
        throw new RedlockOptionsError(option, `${ttl} ms exceeds restartGuard ${restartGuard} ms`, 'A node that restarts must stay out of quorums for at least the longest lease: raise `restartGuard` or lower the ttl.');
    }
}
function positive(option, value) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
        throw new RedlockOptionsError(option, `got ${String(value)}`, 'Use a finite number of milliseconds above 0.');
    }
    return value;
}
function positiveOrInfinity(option, value) {
    if (value === Infinity)
        return value;
    return positive(option, value);
}
function nonNegative(option, value) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        throw new RedlockOptionsError(option, `got ${String(value)}`, 'Use a finite number of milliseconds, 0 or more.');
    }
    return value;
}
//# sourceMappingURL=options.js.map