/**
 * A held distributed lock. Obtained from `LockService.acquire` / `tryAcquire` / `using`
 * (or the core `Redlock` engine).
 */
export interface Lock {
  /** The locked resources, as the caller named them (de-duplicated). */
  readonly resources: readonly string[];
  /**
   * Fencing token of the first resource: strictly increasing per resource across all holders,
   * and it keeps increasing when a minority of nodes is lost or restarted. Send it with every
   * write to the protected resource, which must reject tokens lower than one it has seen.
   */
  readonly fencingToken: number;
  /** One fencing token per resource (multi-resource locks). */
  readonly fencingTokens: Readonly<Record<string, number>>;
  /** The semaphore slot held, 0..permits-1; undefined for a plain lock (permits 1). */
  readonly permit: number | undefined;
  /** 'write' (exclusive, or one permit of a semaphore); 'read' shared with other readers. */
  readonly mode: 'write' | 'read';
  /** Epoch ms at which the lock's validity ends (conservative: drift already subtracted). */
  readonly expiresAt: number;
  /** Aborted when the lock is lost (reason: a `LockLostError`) or released. */
  readonly signal: AbortSignal;
  /** Extends the lease to `ttl` ms from now. Throws `LockLostError` if a majority no longer holds it. */
  extend(ttl?: number): Promise<void>;
  /**
   * Releases the lock on every node. Idempotent; never deletes another holder's key. Resolves once
   * the release has left this process (one-way, on the engine's own connections), or, with the
   * engine option `confirmRelease`, once a majority of nodes answered that they ran it.
   */
  release(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A nested acquisition of resources an enclosing `using` already holds: same tokens, no release. */
export class JoinedLock implements Lock {
  readonly fencingTokens: Readonly<Record<string, number>>;
  readonly fencingToken: number;

  constructor(
    private readonly outer: Lock,
    readonly resources: readonly string[],
  ) {
    this.fencingTokens = tokenRecord(
      resources,
      resources.map((r) => outer.fencingTokens[r]!),
    );
    this.fencingToken = this.fencingTokens[resources[0]!]!;
  }

  get expiresAt(): number {
    return this.outer.expiresAt;
  }

  get permit(): number | undefined {
    return this.outer.permit;
  }

  get mode(): 'write' | 'read' {
    return this.outer.mode;
  }

  get signal(): AbortSignal {
    return this.outer.signal;
  }

  extend(ttl?: number): Promise<void> {
    return this.outer.extend(ttl);
  }

  /** The enclosing holder releases; a joined acquisition has nothing of its own to release. */
  release(): Promise<void> {
    return Promise.resolve();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/**
 * A frozen record of tokens by resource. Built with fromEntries, which defines own properties, so
 * that a resource named like an Object.prototype member (`__proto__`, `constructor`) is a key too.
 */
export function tokenRecord(
  resources: readonly string[],
  tokens: readonly number[],
): Readonly<Record<string, number>> {
  return Object.freeze(Object.fromEntries(resources.map((resource, i) => [resource, tokens[i]!])));
}
