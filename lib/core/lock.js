/** A nested acquisition of resources an enclosing `using` already holds: same tokens, no release. */
export class JoinedLock {
    outer;
    resources;
    fencingTokens;
    fencingToken;
    constructor(outer, resources) {
        this.outer = outer;
        this.resources = resources;
        this.fencingTokens = Object.freeze(Object.fromEntries(resources.map((r) => [r, outer.fencingTokens[r]])));
        this.fencingToken = this.fencingTokens[resources[0]];
    }
    get expiresAt() {
        return this.outer.expiresAt;
    }
    get signal() {
        return this.outer.signal;
    }
    extend(ttl) {
        return this.outer.extend(ttl);
    }
    /** The enclosing holder releases; a joined acquisition has nothing of its own to release. */
    release() {
        return Promise.resolve();
    }
    [Symbol.asyncDispose]() {
        return this.release();
    }
}
//# sourceMappingURL=lock.js.map