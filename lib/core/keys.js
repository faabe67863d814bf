/**
 * Key names. Each resource gets its own hash tag, so its lock key and its fence counter live in
 * the same slot (a Redis Cluster node can serve as a lock node too).
 */
export class KeySpace {
    prefix;
    /** The restart-guard marker: one per node, never expires. */
    guardMarker;
    constructor(prefix) {
        this.prefix = prefix;
        this.guardMarker = `${prefix}__restart_guard__`;
    }
    lock(resource) {
        return `${this.prefix}{${resource}}`;
    }
    fence(resource) {
        return `${this.prefix}{${resource}}:fence`;
    }
    /** The channel the release script publishes on (lock key + `:released`). */
    releaseChannel(resource) {
        return `${this.lock(resource)}:released`;
    }
}
//# sourceMappingURL=keys.js.map