import type {
  ClusterVoterNode,
  GlideClient,
  IoRedisClient,
  IoRedisCluster,
  NodeRedisClient,
  NodeRedisCluster,
  RedisClientPackage,
  RedisConnectionOptions,
} from './clients/types.js';
import type { RedlockLogger } from './logger.js';
import type { PreflightMode } from './preflight.js';
import type { TelemetryProviders } from './telemetry.js';
import type { Runtime } from './runtime.js';
import type { VoterFactory } from './voter/voter-api.js';

/**
 * One voter of the quorum: a Redis master as a `redis://` / `rediss://` URL or connection
 * options (for the client chosen by `client`; ioredis options with `sentinels` and `name`: a
 * Sentinel-managed primary), or a ready client: ioredis or iovalkey `Redis`, node-redis
 * `createClient()`, Valkey GLIDE `GlideClient`; a Redis Cluster as ONE voter (an ioredis or iovalkey
 * `Cluster`, a node-redis
 * `createCluster()`, a GLIDE `GlideClusterClient`, or `{ cluster: [{ host, port }, ...], options? }`
 * with ioredis); or a {@link VoterFactory} (e.g. `memoryNode(new MemoryServer())` from
 * `nest-quorum-lock/testing`). The client types are structural: none of the client packages'
 * own typings is needed to compile.
 */
export type RedlockNode =
  | string
  | RedisConnectionOptions
  | IoRedisClient
  | IoRedisCluster
  | ClusterVoterNode
  | NodeRedisClient
  | NodeRedisCluster
  | GlideClient
  | VoterFactory;

/** Options of the Redlock engine (and of `RedlockModule.forRoot`). */
export interface RedlockOptions {
  /**
   * The independent Redis masters. Use an odd number (3 or 5). Clients passed in ready-made are
   * never closed by the library; connections it opens from URLs/options are closed on shutdown.
   */
  nodes: RedlockNode[];
  /** Default lease in ms. Default 10000. */
  ttl?: number;
  /** Clock drift allowance; validity = ttl - elapsed - ttl * driftFactor - 2 ms. Default 0.01. */
  driftFactor?: number;
  /** Per-node command timeout in ms: a dead or paused node never stalls an acquire longer. Default 100. */
  nodeTimeout?: number;
  /** Default time an acquire waits for a busy lock, in ms (0 = fail fast). Default 0. */
  wait?: number;
  /** Delay between attempts when no node told us when the lock frees up (nodes unavailable). Default 200. */
  retryDelay?: number;
  /** Random extra delay up to this many ms, so that waiters do not retry in lockstep. Default 50. */
  retryJitter?: number;
  /** Prefix of every key and channel the library uses. Default `redlock:`. */
  keyPrefix?: string;
  /**
   * A node that lost its data (restart without persistence) abstains from every quorum for this
   * many ms, so that locks it forgot have expired elsewhere first. It is also the largest ttl any
   * lock may use. `false` turns the guard off (only for nodes that cannot have granted anything,
   * e.g. nodes a test just started). Default: max(60000, ttl).
   */
  restartGuard?: number | false;
  /** Idle time after which a resource's fencing counter key expires, in ms. Default 7 days. */
  fenceIdleTtl?: number;
  /** How long connecting at start-up may take before unreachable nodes are reported. Default 5000. */
  connectTimeout?: number;
  /**
   * `true`: bootstrap (`Redlock.connect()`, the module's init) fails with a
   * `QuorumUnavailableError` naming every node that is not connected and why, when fewer than a
   * quorum are connected after `connectTimeout` (at once when they refused the credentials).
   * Default `false`: the application starts, and locks fail until a quorum connects. Nodes that
   * are connected but abstain under the restart guard count as connected.
   */
  failWithoutQuorum?: boolean;
  /** Upper bound for how long a watchdog keeps extending one lock, in ms. Default 600000 (10 min). */
  maxHold?: number;
  /**
   * At shutdown (`close()`, the module's `onApplicationShutdown`), how long running locked work may
   * go on, in ms: its locks stay held (the watchdog extends them) while it ends, and are released
   * when it has, or when this runs out (logged). Default 10000, below Kubernetes' 30 s grace period.
   */
  drainTimeout?: number;
  /**
   * The engine's clocks, timers and randomness (default: the real ones). The deterministic
   * simulation (`npm run simulate`) gives a virtual one; nothing else needs to.
   */
  runtime?: Runtime;
  /** Where the engine reports unreachable or abstaining nodes. Default: warnings to stderr. */
  logger?: RedlockLogger;
  /**
   * OpenTelemetry: explicit providers to record metrics and spans with, or `false` for none.
   * Default: the globally registered providers, when `@opentelemetry/api` is installed.
   */
  telemetry?: TelemetryProviders | false;
  /**
   * Checks of every Redis node when it (first) connects: eviction policy, the same server listed
   * twice, replicas, cluster nodes, missing ACL rights. Default `'error'`.
   */
  preflight?: PreflightMode;
  /**
   * How the lock's scripts are called. `'eval'` (default): EVALSHA, EVAL after NOSCRIPT.
   * `'functions'`: the same scripts as a FUNCTION library (Redis 7+, Valkey), called with FCALL /
   * FCALL_RO, for servers and proxies that refuse EVAL, EVALSHA or SCRIPT. Each function's name
   * carries a hash of its code and of the library's version (names are global on a server). The
   * library is loaded on every server (every master of a Cluster) where the ACL user may FUNCTION
   * LOAD; elsewhere an administrator loads it (`npx nest-quorum-lock functions` prints it), and
   * preflight names a server that lacks it. See docs/deploying.md, "Servers that refuse EVAL".
   */
  scripts?: 'eval' | 'functions';
  /**
   * When `release()` resolves. By default a release is one-way on the engine's own connections: it
   * resolves once its bytes are handed to the sockets, without waiting for replies, and a later
   * command of this engine reaches each node after it (same connection). With `true`, it resolves
   * once a majority of nodes answered that they ran it, as an acquire does: a command that another
   * process sends after your `await lock.release()` (told by a message from you) then finds the
   * lock free on a majority even across a network that delays or loses the release's packets,
   * which one-way cannot promise. Costs a round trip per release. Default `false`.
   */
  confirmRelease?: boolean;
  /**
   * The clock guard, ms: a voter whose wall clock steps forward by more than this (an NTP step, a
   * VM resumed with a stale clock) would expire a held lock early, so it stops counting toward this
   * engine's quorums from its first reply after the step, until the restart guard has passed there
   * (see docs/safety.md, "Clock steps"). Every lock's validity is shortened by it, so that a
   * smaller step cannot end a lease unseen. At most a quarter of every ttl it is used with;
   * `false` turns it off. Default: 500 ms, or a quarter of the ttl for shorter locks (NTP daemons
   * step only past 128 ms (ntpd) to 1 s (chrony's makestep), and slew below that).
   */
  clockGuard?: number | false;
  /**
   * Holds heal: while a lock is valid, each extension also re-takes it on voters that no longer
   * hold it (restarted empty, flushed, expired early, unreachable at the grant) once they vote
   * again and the key is free there, and raises their fencing counter to the lock's token. An
   * extension still needs a majority that held the lock before it. Default `true`.
   */
  healHolds?: boolean;
  /**
   * Which client opens the connections for URL strings and option objects in `nodes`: `'ioredis'`
   * or `'node-redis'` (the `redis` package). Default: ioredis when it can be loaded, else
   * node-redis. Clients passed in ready-made are used as they are, whatever this says.
   */
  client?: RedisClientPackage;
}

/** Per-call options of acquire / tryAcquire / using / @DistributedLock. */
export interface LockOptions {
  /**
   * > 1: a semaphore, at most `permits` holders of the key at once, each holding one slot
   * (`Lock.permit`), each slot a lock of its own on a majority. Default 1 (a plain lock). A key is
   * used with one number of permits only; single resource only.
   */
  permits?: number;
  /**
   * 'write' (the default): exclusive. 'read': a read-write lock's reader, shared with other readers
   * and excluding writers (a plain lock of the same key is its writer); a writer waiting is not
   * overtaken by later readers. Single resource, permits 1 only.
   */
  mode?: 'write' | 'read';
  /** Lease in ms (default: the module's `ttl`). */
  ttl?: number;
  /** How long to wait for a busy lock in ms (default: the module's `wait`; 0 = fail fast). */
  wait?: number;
  retryDelay?: number;
  retryJitter?: number;
  /** Extend the lock automatically while it is held (default: on for `using` and the decorator). */
  watchdog?: boolean;
  /** Stop auto-extension after this many ms (default: the module's `maxHold`). */
  maxHold?: number;
  /**
   * A lock released sooner than this many ms after its grant is left to expire at grant +
   * holdAtLeast instead (ShedLock's lockAtLeastFor), so that a 5 ms scheduled job is not run again
   * by an instance whose clock is a little late. Default 0. At most `restartGuard`.
   */
  holdAtLeast?: number;
  /**
   * What a call that must not wait in vain does when the lock is still busy after `wait`:
   * `'throw'` (default) or `'skip'`. Read by callers that may skip their work, such as the NestJS
   * `@DistributedLock` (which then does not run the method); `acquire`, `tryAcquire` and `using`
   * themselves always report a busy lock (an error, or `null` from `tryAcquire`).
   */
  onBusy?: 'throw' | 'skip';
  /**
   * Who holds the lock, for log lines (the NestJS `@DistributedLock` passes `Class.method`): e.g.
   * the line of a lock that shutdown released while its work still ran.
   */
  holder?: string;
  /** Cancels waiting for the lock. */
  signal?: AbortSignal;
}

/** Options after defaults, as the engine uses them. */
export interface ResolvedOptions {
  readonly ttl: number;
  readonly driftFactor: number;
  readonly nodeTimeout: number;
  readonly wait: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly keyPrefix: string;
  readonly restartGuard: number | false;
  readonly fenceIdleTtl: number;
  readonly connectTimeout: number;
  readonly failWithoutQuorum: boolean;
  readonly maxHold: number;
  readonly drainTimeout: number;
  readonly preflight: PreflightMode;
  readonly scripts: 'eval' | 'functions';
  readonly confirmRelease: boolean;
  /** The clock guard, ms; false when off; undefined: the default (see {@link clockGuardFor}). */
  readonly clockGuard: number | false | undefined;
  readonly healHolds: boolean;
  /**
   * The client that opens connections for URL strings and option objects; undefined when `nodes`
   * holds none (then no client package needs to be installed).
   */
  readonly client: RedisClientPackage | undefined;
}

/** Per-call options after defaults. */
export interface ResolvedLockOptions {
  readonly ttl: number;
  readonly wait: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly watchdog: boolean;
  readonly maxHold: number;
  readonly holdAtLeast: number;
  /** Who holds it, for log lines; undefined when not said. */
  readonly holder: string | undefined;
  /** The clock guard of this lock, ms (0 when off): its validity is shortened by it. */
  readonly clockGuard: number;
  /** The clock drift allowance of its lease, ms (driftFor): its validity is shortened by it too. */
  readonly drift: number;
  readonly signal?: AbortSignal;
  /** 1 for a plain lock. */
  readonly permits: number;
  /** 'read' for a read-write lock's reader; 'write' otherwise. */
  readonly mode: 'write' | 'read';
}

/** The defaults of {@link RedlockOptions} (resolve-options.ts fills them in). */
export const DEFAULTS = {
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
  failWithoutQuorum: false,
  maxHold: 600_000,
  drainTimeout: 10_000,
  preflight: 'error',
  scripts: 'eval',
  confirmRelease: false,
  clockGuard: 500,
  healHolds: true,
} as const;

/** Largest `permits`: every slot is a key in each slot search. */
export const MAX_PERMITS = 1024;
