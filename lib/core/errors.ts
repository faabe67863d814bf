/**
 * Base class of every error this library throws. `name` is the concrete class name, so
 * `err.name === 'LockNotAcquiredError'` works across module copies where `instanceof` may not.
 */
export class RedlockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Options given to the library are invalid. Thrown at construction / bootstrap, never later. */
export class RedlockOptionsError extends RedlockError {
  /** @param option the option path at fault, e.g. `ttl` or `nodes[2]`. */
  constructor(
    readonly option: string,
    /** What is wrong with the value, e.g. `got -1`. */
    readonly problem: string,
    /** How to fix it. */
    readonly fix: string,
  ) {
    super(`Invalid Redlock option \`${option}\`: ${problem}. ${fix}`);
  }
}

/**
 * The lock is held by someone else and stayed busy until the `wait` budget ran out.
 * `retryAfterMs` is the time after which a majority of nodes will be free again unless the holder
 * extends its lease (from the holder's remaining lease): an upper bound, since holders usually
 * release early. The NestJS layer's retry hint for clients is shorter (see its `retry-after.ts`).
 */
export class LockNotAcquiredError extends RedlockError {
  /** Stable, machine-readable code: what RPC, WebSocket and GraphQL clients receive as `code`. */
  readonly code = 'LOCK_NOT_ACQUIRED' as const;

  constructor(
    readonly resources: readonly string[],
    readonly retryAfterMs: number,
    readonly attempts: number,
    /** Set when nobody else held the lock but the grant could not be used (e.g. validity spent). */
    readonly reason?: string,
  ) {
    super(
      reason
        ? `Lock on ${formatResources(resources)} was not acquired after ${attempts} attempt(s): ${reason}.`
        : `Lock on ${formatResources(resources)} is held by another owner; gave up after ${attempts} attempt(s). ` +
            `It should be free in about ${Math.ceil(retryAfterMs)} ms: retry later, or pass a larger \`wait\`.`,
    );
  }

  /** `retryAfterMs` in whole seconds (at least 1): the longest a client might have to wait. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.retryAfterMs / 1000));
  }
}

/** Per-node reason why a node did not take part in a quorum. Labels never contain passwords. */
export interface NodeFailure {
  readonly node: string;
  readonly reason: string;
}

/** Why a 503 waits for abstaining nodes, and the one way out, for fresh nodes only. */
const ABSTAINING =
  'Waiting keeps locks safe: a node abstains when it may have lost locks it granted (a restart, a ' +
  'failover, a step of its clock), and every one of them has expired when it votes again. Nodes created just now and still empty (dev, tests): ' +
  '`npx nest-quorum-lock fresh-node <url>` records them fresh, so that they vote at once.';

/** Too few nodes answered (down, timed out, or abstaining under the restart guard) to reach a majority. */
export class QuorumUnavailableError extends RedlockError {
  /** Stable, machine-readable code: what RPC, WebSocket and GraphQL clients receive as `code`. */
  readonly code = 'QUORUM_UNAVAILABLE' as const;

  constructor(
    readonly resources: readonly string[],
    readonly quorum: number,
    readonly nodeCount: number,
    readonly failures: readonly NodeFailure[],
    /**
     * Time until a quorum votes again, when the engine knows it (nodes abstaining under the
     * restart guard); undefined when nodes are simply down, since nobody can tell when they return.
     */
    readonly retryAfterMs?: number,
  ) {
    super(
      resources.length === 0
        ? // Redlock.connect() under failWithoutQuorum: bootstrap, no lock asked for yet.
          `No quorum of Redis nodes at bootstrap (failWithoutQuorum): fewer than ${quorum} of ${nodeCount} connected. ` +
            failures.map((f) => `${f.node}: ${f.reason}`).join('; ') +
            '. Fix the nodes named, or set failWithoutQuorum: false to start without them (locks fail until a quorum connects).'
        : `Cannot lock ${formatResources(resources)}: a majority of ${quorum} of ${nodeCount} Redis nodes is not available. ` +
            failures.map((f) => `${f.node}: ${f.reason}`).join('; ') +
            (retryAfterMs === undefined
              ? failures.length > 0 && failures.every((f) => REFUSED.test(f.reason))
                ? '. The nodes answered and refused the credentials: fix what each one names.'
                : '. Check that the nodes are running and reachable, and their credentials.'
              : `. A quorum votes again in ${formatDelay(retryAfterMs)} (retryAfterMs ${Math.ceil(retryAfterMs)}): retry after that. ` +
                ABSTAINING),
    );
  }
}

/** A node's reason when it answered but refused the credentials or a command (voter/ioredis/connection.ts). */
const REFUSED = /authentication failed|permission denied/;

/** `850 ms`, `58 s`: a delay for a message, rounded up as Retry-After is. */
function formatDelay(ms: number): string {
  return ms < 1000 ? `${Math.ceil(ms)} ms` : `${Math.ceil(ms / 1000)} s`;
}

/**
 * The engine is shutting down (the module's `onApplicationShutdown`, or `Redlock.close()`): no new
 * lock is granted. Acquires in flight or waiting reject with it, and running locked work's signal
 * aborts with it: finish up, another instance takes over. HTTP 503 with Retry-After; the same
 * `code` in RPC, WebSocket and GraphQL payloads.
 */
export class EngineClosedError extends RedlockError {
  /** Stable, machine-readable code: what RPC, WebSocket and GraphQL clients receive as `code`. */
  readonly code = 'ENGINE_CLOSED' as const;

  constructor() {
    super(
      'The lock engine is closed (shutting down): no new lock is granted here; retry on another instance.',
    );
  }
}

/** The lock is no longer held: an extension did not reach a majority, or its validity ran out. */
export class LockLostError extends RedlockError {
  constructor(
    readonly resources: readonly string[],
    reason: string,
  ) {
    super(
      `Lock on ${formatResources(resources)} was lost: ${reason}. ` +
        'Stop writing to the protected resource; a fenced store will reject your token.',
    );
  }
}

/**
 * Preflight found a Redis node that breaks Redlock's assumptions (it can evict a held lock, is
 * listed twice, is a replica or a cluster node, or its ACL hides what the check needs). Names the
 * node (never a password), the problem and the fix. When several are found at bootstrap,
 * `Redlock.connect()` rejects with one whose {@link errors} lists them all.
 */
export class NodeConfigurationError extends RedlockError {
  /** Every problem this error reports: itself, or each one of an aggregate. */
  readonly errors: readonly NodeConfigurationError[];

  constructor(
    /** Log-safe label of the node (several, comma-separated, for an aggregate). */
    readonly node: string,
    readonly problem: string,
    readonly fix: string,
    errors?: readonly NodeConfigurationError[],
  ) {
    super(
      errors
        ? `${problem}:\n${errors.map((e) => `- ${e.message}`).join('\n')}`
        : `Redis node ${node}: ${problem}. Fix: ${fix}`,
    );
    this.errors = errors ?? [this];
  }

  /** One error for `errors`: the error itself when there is one, else an aggregate listing all. */
  static of(errors: readonly NodeConfigurationError[]): NodeConfigurationError {
    if (errors.length === 1) return errors[0]!;
    const nodes = [...new Set(errors.map((e) => e.node))].join(', ');
    return new NodeConfigurationError(
      nodes,
      `Preflight found ${errors.length} problems with the Redis nodes`,
      'see each problem',
      errors,
    );
  }
}

function formatResources(resources: readonly string[]): string {
  return resources.map((r) => JSON.stringify(r)).join(', ');
}

/**
 * One key used in two incompatible ways: with different `permits`, or as a semaphore and a plain
 * lock (or a multi-resource lock with `permits` > 1). Names both uses.
 */
export class LockUsageError extends RedlockError {
  readonly code = 'LOCK_USAGE_CONFLICT' as const;

  constructor(
    readonly resource: string,
    /** How this call used the key. */
    readonly attempted: string,
    /** How the key is used already. */
    readonly existing: string,
  ) {
    super(
      `Lock key "${resource}" is used ${attempted}, but it is already used ${existing}: a key is either a ` +
        `plain lock (or read-write lock) or a semaphore with one number of permits. Use another key for the other use.`,
    );
  }
}

/**
 * A write lock asked for inside a call chain that holds a read lock of the same key: the upgrade
 * would deadlock (the writer waits for every reader to leave, itself included; two readers that
 * both upgrade wait for each other). Release the read lock first, or take the write lock outright.
 */
export class LockUpgradeError extends LockUsageError {
  constructor(resource: string) {
    super(
      resource,
      'as a write lock inside a read lock of it (an upgrade)',
      'by this call chain as a read lock',
    );
    this.message =
      `Cannot take a write lock on "${resource}" inside a read lock of it held by this call chain: the ` +
      'upgrade would deadlock (the writer waits for every reader to leave, this one included). Take the ' +
      'write lock in the outer call instead, or release the read lock first.';
  }
}

/**
 * A multi-resource lock whose resources hash to different slots of a Redis Cluster voter: no single
 * script can take all of its keys atomically there. Thrown before anything is sent; a programming
 * error, not a busy lock: give the resources a common hash tag.
 */
export class CrossSlotLockError extends RedlockError {
  /** Stable, machine-readable code. */
  readonly code = 'CROSS_SLOT_LOCK' as const;

  constructor(
    readonly resources: readonly string[],
    /** The cluster voter's label. */
    readonly node: string,
  ) {
    super(
      `Cannot lock ${resources.map((r) => `"${r}"`).join(', ')} together: on the Redis Cluster voter ${node} ` +
        "they live in different hash slots, and one voter must take all of a lock's keys in one atomic script. " +
        'Give them a common hash tag: start each resource with the same {tag}, e.g. "{order:42}:items" and ' +
        '"{order:42}:payment" (Redis hashes only the text between the first { and the next }).',
    );
  }
}

/**
 * `markFreshNode` (or `npx nest-quorum-lock fresh-node`) refused to record a node as fresh: it holds
 * data, is a replica or a Cluster node, or does not say its run_id. Nothing was written.
 */
export class NodeNotFreshError extends RedlockError {
  constructor(
    /** Log-safe label of the node. */
    readonly node: string,
    /** Why it was refused. */
    readonly reason: string,
  ) {
    super(`Redis node ${node} was not marked fresh: ${reason}.`);
  }
}
