import { clientKind, describeUnsupported, isPlainObject } from './clients/detect.js';
import { chooseClientPackage, clientOption } from './clients/load.js';
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
import { RedlockOptionsError } from './errors.js';
import {
  checkTtlWithinGuard,
  MAX_FENCE_IDLE_MS,
  nonNegative,
  positive,
  positiveOrInfinity,
  show,
} from './option-checks.js';
import type { RedlockLogger } from './logger.js';
import type { PreflightMode } from './preflight.js';
import type { TelemetryProviders } from './telemetry.js';
import { hasUnencodedCredentials, redactUrl } from './voter/ioredis/connection.js';
import { isClusterNode, validateClusterNode } from './voter/ioredis-cluster/connection.js';
import { isVoterFactory, type VoterFactory } from './voter/voter.js';

/**
 * One voter of the quorum: a Redis master as a `redis://` / `rediss://` URL or connection
 * options (for the client chosen by `client`; ioredis options with `sentinels` and `name`: a
 * Sentinel-managed primary), or a ready client: ioredis `Redis`, node-redis `createClient()`,
 * Valkey GLIDE `GlideClient`; a Redis Cluster as ONE voter (an ioredis `Cluster`, a node-redis
 * `createCluster()`, a GLIDE `GlideClusterClient`, or `{ cluster: [{ host, port }, ...], options? }`
 * with ioredis); or a {@link VoterFactory} (e.g. `MemoryVoter.factory()` from
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
  /** 'write' (the default): exclusive. 'read' is reserved for read-write locks (not yet available). */
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
  readonly preflight: PreflightMode;
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
  /** The clock guard of this lock, ms (0 when off): its validity is shortened by it. */
  readonly clockGuard: number;
  readonly signal?: AbortSignal;
  /** 1 for a plain lock. */
  readonly permits: number;
}

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
  failWithoutQuorum: false,
  maxHold: 600_000,
  preflight: 'error',
  confirmRelease: false,
  clockGuard: 500,
  healHolds: true,
} as const;

/**
 * The clock guard of a lock of `ttl` ms: the configured one (checked against the ttl: at most a
 * quarter of it), or by default 500 ms, at most a quarter of the ttl; 0 when off.
 */
export function clockGuardFor(clockGuard: number | false | undefined, ttl: number): number {
  if (clockGuard === false) return 0;
  if (clockGuard === undefined) return Math.min(DEFAULTS.clockGuard, Math.floor(ttl / 4));
  if (clockGuard > ttl / 4) {
    throw new RedlockOptionsError(
      'clockGuard',
      `${clockGuard} ms is more than a quarter of ttl ${ttl} ms`,
      `Use at most ${Math.floor(ttl / 4)} ms (every lock's validity is shortened by it), a longer ttl, or false to turn the guard off.`,
    );
  }
  return clockGuard;
}

/** Validates engine options and fills defaults. Throws {@link RedlockOptionsError} naming the fix. */
export function resolveOptions(options: RedlockOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedlockOptionsError(
      'options',
      'missing',
      'Pass an object such as { nodes: ["redis://localhost:6379"] }.',
    );
  }
  const client = resolveClient(options);
  const ttl = positive('ttl', options.ttl ?? DEFAULTS.ttl);
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new RedlockOptionsError(
      'driftFactor',
      `got ${show(driftFactor)}`,
      'Use a number in [0, 0.5), e.g. 0.01.',
    );
  }
  const nodeTimeout = positive('nodeTimeout', options.nodeTimeout ?? DEFAULTS.nodeTimeout);
  if (nodeTimeout >= ttl) {
    throw new RedlockOptionsError(
      'nodeTimeout',
      `${nodeTimeout} ms is not below ttl ${ttl} ms`,
      'A node timeout must leave most of the lease as validity: use a few ms to a few hundred ms.',
    );
  }
  const restartGuard = options.restartGuard ?? Math.max(DEFAULTS.minRestartGuard, ttl);
  if (restartGuard !== false) {
    positive('restartGuard', restartGuard);
    checkTtlWithinGuard('ttl', ttl, restartGuard);
  }
  const clockGuard = options.clockGuard;
  if (clockGuard !== undefined && clockGuard !== false) {
    nonNegative('clockGuard', clockGuard);
    clockGuardFor(clockGuard, ttl);
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
    fenceIdleTtl: positive('fenceIdleTtl', options.fenceIdleTtl ?? DEFAULTS.fenceIdleTtl, MAX_FENCE_IDLE_MS),
    connectTimeout: nonNegative('connectTimeout', options.connectTimeout ?? DEFAULTS.connectTimeout),
    failWithoutQuorum: flag('failWithoutQuorum', options.failWithoutQuorum ?? DEFAULTS.failWithoutQuorum),
    maxHold: positiveOrInfinity('maxHold', options.maxHold ?? DEFAULTS.maxHold),
    preflight: preflightMode(options.preflight ?? DEFAULTS.preflight),
    confirmRelease: flag('confirmRelease', options.confirmRelease ?? DEFAULTS.confirmRelease),
    clockGuard,
    healHolds: flag('healHolds', options.healHolds ?? DEFAULTS.healHolds),
    client,
  };
}

/**
 * Validates `nodes` and `client`, and settles which client package opens the connections of URL
 * strings and option objects (undefined when there are none: no package is loaded for them).
 */
function resolveClient(options: RedlockOptions): RedisClientPackage | undefined {
  const chosen = clientOption(options.client);
  const needsPackage = validateNodes(options.nodes);
  return needsPackage ? chooseClientPackage(chosen) : chosen;
}

function flag(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new RedlockOptionsError(name, `got ${show(value)}`, 'Use true or false.');
}

function preflightMode(mode: unknown): PreflightMode {
  if (mode === 'error' || mode === 'warn' || mode === 'off') return mode;
  throw new RedlockOptionsError('preflight', `got ${show(mode)}`, "Use 'error', 'warn' or 'off'.");
}

/** Merges per-call options over the engine's, validating them. */
export function resolveLockOptions(
  engine: ResolvedOptions,
  options: LockOptions | undefined,
  watchdogDefault: boolean,
): ResolvedLockOptions {
  const o = options ?? {};
  const ttl = o.ttl === undefined ? engine.ttl : positive('ttl', o.ttl);
  if (engine.restartGuard !== false) checkTtlWithinGuard('ttl', ttl, engine.restartGuard);
  if (ttl <= engine.nodeTimeout) {
    throw new RedlockOptionsError(
      'ttl',
      `${ttl} ms is not above nodeTimeout ${engine.nodeTimeout} ms`,
      'Use a longer ttl.',
    );
  }
  if (o.mode !== undefined && o.mode !== 'write') {
    throw new RedlockOptionsError(
      'mode',
      `got ${show(o.mode)}`,
      "Read-write locks are not available yet: leave mode out, or pass 'write'.",
    );
  }
  return {
    ttl,
    wait: o.wait === undefined ? engine.wait : nonNegative('wait', o.wait),
    retryDelay: o.retryDelay === undefined ? engine.retryDelay : nonNegative('retryDelay', o.retryDelay),
    retryJitter: o.retryJitter === undefined ? engine.retryJitter : nonNegative('retryJitter', o.retryJitter),
    watchdog: o.watchdog ?? watchdogDefault,
    maxHold: o.maxHold === undefined ? engine.maxHold : positiveOrInfinity('maxHold', o.maxHold),
    holdAtLeast: resolveHoldAtLeast(engine, o.holdAtLeast),
    clockGuard: clockGuardFor(engine.clockGuard, ttl),
    signal: o.signal,
    permits: o.permits === undefined ? 1 : resolvePermits(o.permits, o.mode),
  };
}

/** Largest `permits`: every slot is a key in each slot search. */
export const MAX_PERMITS = 1024;

function resolvePermits(permits: number, mode: string | undefined): number {
  if (!Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
    throw new RedlockOptionsError(
      'permits',
      `got ${String(permits)}`,
      `Pass a whole number from 1 (a plain lock) to ${MAX_PERMITS}.`,
    );
  }
  if (permits > 1 && mode === 'read') {
    throw new RedlockOptionsError(
      'mode',
      "'read' with permits > 1",
      'A semaphore has no read mode: pass one of them.',
    );
  }
  return permits;
}

function resolveHoldAtLeast(engine: ResolvedOptions, holdAtLeast: number | undefined): number {
  if (holdAtLeast === undefined) return 0;
  nonNegative('holdAtLeast', holdAtLeast);
  if (engine.restartGuard !== false) checkTtlWithinGuard('holdAtLeast', holdAtLeast, engine.restartGuard);
  return holdAtLeast;
}

/** Normalises and validates resource names: a non-empty list of non-empty strings, de-duplicated. */
export function normaliseResources(keys: string | readonly string[]): string[] {
  if (typeof keys === 'string' && keys.length > 0) return [keys]; // the common case, on the hot path
  const list = typeof keys === 'string' ? [keys] : keys;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RedlockOptionsError(
      'keys',
      'no resource given',
      'Pass a non-empty string or a non-empty array of strings.',
    );
  }
  for (const [i, key] of list.entries()) {
    if (typeof key !== 'string' || key.length === 0) {
      throw new RedlockOptionsError(
        `keys[${i}]`,
        `got ${key === '' ? 'an empty string' : typeof key}`,
        'Every resource must be a non-empty string (check the key template and the arguments it reads).',
      );
    }
  }
  return [...new Set(list)];
}

/**
 * Checks every entry of `nodes`; returns whether one of them (a URL, options) needs a client
 * package to open its connection.
 */
function validateNodes(nodes: unknown): boolean {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockOptionsError(
      'nodes',
      'no Redis node given',
      'Pass one or more independent masters, e.g. nodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"].',
    );
  }
  let needsPackage = false;
  nodes.forEach((node: unknown, i) => {
    if (typeof node === 'string') {
      checkUrlEncoding(node, `nodes[${i}]`);
      validateUrl(node, `nodes[${i}]`);
      needsPackage = true;
    } else if (node === null || typeof node !== 'object') {
      throw new RedlockOptionsError(`nodes[${i}]`, `got ${show(node)}`, NODE_FIX);
    } else if (isVoterFactory(node) || clientKind(node) !== undefined) {
      // a voter the caller builds, or a ready client: used as it is
    } else if (isClusterNode(node) || ('cluster' in node && typeof node.cluster !== 'function')) {
      validateClusterNode(node, `nodes[${i}]`);
      needsPackage = true;
    } else if (isPlainObject(node)) {
      needsPackage = true; // connection options, for the chosen client
    } else {
      // Neither a client we know nor options: never a silent connection to localhost:6379.
      const { what, hint } = describeUnsupported(node);
      throw new RedlockOptionsError(
        `nodes[${i}]`,
        `got ${what}, which is neither a supported Redis client nor an options object`,
        hint ? `${hint[0]!.toUpperCase()}${hint.slice(1)}.` : NODE_FIX,
      );
    }
  });
  return needsPackage;
}

const NODE_FIX =
  'Use a redis:// URL, connection options, an ioredis Redis or Cluster, a node-redis client (createClient) or ' +
  'cluster (createCluster), a Valkey GLIDE GlideClient or GlideClusterClient, or { cluster: [...] } for a ' +
  'Redis Cluster.';

function validateUrl(node: string, option: string): void {
  let url: URL;
  try {
    url = new URL(node);
  } catch {
    throw new RedlockOptionsError(
      option,
      'not a valid URL',
      'Use redis://[user:password@]host:port[/db] or rediss:// for TLS.',
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedlockOptionsError(
      option,
      `unsupported scheme "${url.protocol}"`,
      'Use redis://host:port, or rediss://host:port for TLS.',
    );
  }
  if (!url.hostname) {
    throw new RedlockOptionsError(option, 'the URL has no host', 'Use redis://host:port.');
  }
}

/**
 * A URL whose password (or user name) holds an unencoded `@`, `#`, `/`, `?` or space: URL parsers
 * end the credentials or the host early there, so the host is read from part of the password
 * (`redis://:p@ss#1@10.0.0.1:6379` connects to host `ss` with password `p`, and the DNS error then
 * shows part of the secret). Never logged: the message shows the URL redacted.
 */
function checkUrlEncoding(node: string, option: string): void {
  if (!hasUnencodedCredentials(node) && !node.includes('#')) return;
  throw new RedlockOptionsError(
    option,
    `${redactUrl(node)} has an unencoded "@", "#", "/", "?" or space in its user name or password (or a "#" ` +
      'elsewhere), so the host would be read from part of the password',
    'Percent-encode the user name and password, e.g. `redis://:${encodeURIComponent(password)}@host:6379` ' +
      '("@" is %40, "#" is %23, "/" is %2F, "?" is %3F), or pass ioredis options ' +
      '{ host, port, password } instead of a URL.',
  );
}
