/**
 * Base class of every error this library throws. `name` is the concrete class name, so
 * `err.name === 'LockNotAcquiredError'` works across module copies where `instanceof` may not.
 */
export class RedlockError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = new.target.name;
    }
}
/** Options given to the library are invalid. Thrown at construction / bootstrap, never later. */
export class RedlockOptionsError extends RedlockError {
    option;
    /** @param option the option path at fault, e.g. `ttl` or `nodes[2]`. */
    constructor(option, problem, fix) {
        super(`Invalid Redlock option \`${option}\`: ${problem}. ${fix}`);
        this.option = option;
    }
}
/**
 * The lock is held by someone else and stayed busy until the `wait` budget ran out.
 * `retryAfterMs` is the time after which a majority of nodes should be free again (from the
 * holder's remaining lease), a good value for an HTTP `Retry-After`.
 */
export class LockNotAcquiredError extends RedlockError {
    resources;
    retryAfterMs;
    attempts;
    constructor(resources, retryAfterMs, attempts) {
        super(`Lock on ${formatResources(resources)} is held by another owner; gave up after ${attempts} attempt(s). ` +
            `It should be free in about ${retryAfterMs} ms: retry later, or pass a larger \`wait\`.`);
        this.resources = resources;
        this.retryAfterMs = retryAfterMs;
        this.attempts = attempts;
    }
    /** Seconds for an HTTP `Retry-After` header (at least 1). */
    get retryAfterSeconds() {
        return Math.max(1, Math.ceil(this.retryAfterMs / 1000));
    }
}
/** Too few nodes answered (down, timed out, or abstaining under the restart guard) to reach a majority. */
export class QuorumUnavailableError extends RedlockError {
    resources;
    quorum;
    nodeCount;
    failures;
    constructor(resources, quorum, nodeCount, failures) {
        super(`Cannot lock ${formatResources(resources)}: a majority of ${quorum} of ${nodeCount} Redis nodes is not available. ` +
            failures.map((f) => `${f.node}: ${f.reason}`).join('; ') +
            '. Check that the nodes are running and reachable, and their credentials.');
        this.resources = resources;
        this.quorum = quorum;
        this.nodeCount = nodeCount;
        this.failures = failures;
    }
}
/** The lock is no longer held: an extension did not reach a majority, or its validity ran out. */
export class LockLostError extends RedlockError {
    resources;
    constructor(resources, reason) {
        super(`Lock on ${formatResources(resources)} was lost: ${reason}. ` +
            'Stop writing to the protected resource; a fenced store will reject your token.');
        this.resources = resources;
    }
}
function formatResources(resources) {
    return resources.map((r) => JSON.stringify(r)).join(', ');
}
//# sourceMappingURL=errors.js.map