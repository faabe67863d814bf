import type { RedlockLogger } from '../logger.js';
import type { Preflight } from '../preflight.js';
import type {
  AcquireVote,
  ClockMark,
  EngineScripts,
  ExtendAnswers,
  ExtendRequest,
  KeyView,
  LetGo,
  SlotVote,
  ScriptCalls,
  ScriptSettings,
} from '../scripts/index.js';
import type { WriteWindow } from './write-batching.js';

/**
 * One voter of the quorum, as the algorithm sees it: something that runs the lock operations on
 * its own copy of the lock state, reports its health, and tells the engine's waiters when a lock
 * is handed to them. The Redlock algorithm (acquire.ts, lease/, queue/) talks to voters through
 * this interface only. The voters that run the Lua scripts share one implementation of the
 * operations, `ScriptVoter` (script-voter.ts), and differ only in their client adapter
 * (`ScriptClient`, script-client.ts), one folder per client: a Redis master reached with ioredis,
 * a Sentinel-managed primary included (ioredis/, `RedisVoter`); a Redis Cluster as one voter
 * (ioredis-cluster/, `ClusterVoter`). The in-memory voter of unit tests does the same steps in
 * TypeScript (lib/testing/memory/, `MemoryVoter`, exported from `nest-quorum-lock/testing`).
 *
 * Every operation is atomic on the voter and has the semantics of the Lua scripts in scripts/.
 * A reader of a read-write lock (its value ends with READ_MARK, scripts/lock-value.ts) goes through
 * the same operations, with one lock key: the voter tells it by its value and runs the readers'
 * semantics (scripts/read.ts) for its acquire, raiseFence, extend and letGo.
 */
export interface Voter {
  /** Log-safe name (never a password). */
  readonly label: string;
  /** True while commands can be sent. */
  readonly connected: boolean;
  /** Why it is not connected, log-safe; undefined when connected or never tried. */
  readonly connectionError: string | undefined;
  /** Resolves true once connected, false when `timeoutMs` passes first. */
  waitReady(timeoutMs: number): Promise<boolean>;
  /**
   * Takes the lock keys for `value` (all or none), queueing it with `ticket` when busy ('' = do not
   * queue). `seedUs`: the token the attempt proposes for a resource's first grant (the same on
   * every voter, so that they agree; see scripts/fence.ts). `expectedClockUs` (the clock guard):
   * where the engine expects this voter's clock; a voter may then leave the clock out of a
   * one-resource grant that was within CLOCK_WINDOW_US of it (scripts/acquire.ts), and one that
   * ignores it replies with its clock as usual.
   */
  acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): Promise<AcquireVote>;
  /**
   * Optional (a voter without it cannot serve semaphores): a semaphore's slot search, atomic on the
   * voter (scripts/semaphore.ts). `slotKeys` in the order the caller proposes (the same for every
   * voter); `lockKey` the semaphore's own key (the marker of its use); `permits` its permits.
   */
  acquireSlot?(
    slotKeys: readonly string[],
    lockKey: string,
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs: number | undefined,
    permits: number,
  ): Promise<SlotVote>;
  /** Raises the fence counters of `keys` to `tokens` while `value` still holds them. */
  raiseFence(keys: readonly string[], value: string, tokens: readonly number[]): Promise<boolean>;
  /**
   * Extends each lock of the batch that still holds its value; one answer per lock, and, where the
   * voter reads it (the settings ask for clock readings), the voter's clock at that moment.
   */
  extend(batch: readonly ExtendRequest[]): Promise<ExtendAnswers>;
  /** Lets go of the keys `value` holds, and of its places in line (see scripts/release.ts). */
  letGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown>;
  /**
   * Optional: the same, sent one-way when the voter can (no reply comes back, and none is waited
   * for), in order with the voter's other operations. Returns false when it did not send it.
   */
  letGoOneWay?(keys: readonly string[], value: string, how: LetGo): boolean;
  /**
   * Optional: the clock guard found this voter's clock stepped forward, ahead of a quorum of the
   * others: puts it under the restart guard for every client for `forMs` (scripts/clock-mark.ts).
   * A voter with several servers behind it (a Redis Cluster) marks those whose clocks are past
   * `steppedPastMs` (epoch ms, the voters' time plus the clock guard; undefined: all of them).
   * Undefined when this voter cannot.
   */
  markClockStep?(forMs: number, steppedPastMs?: number): Promise<ClockMark> | undefined;
  /** Reads a lock key, its lease and its fence counter (writes nothing). */
  inspect(lockKey: string): Promise<KeyView>;
  /**
   * Optional (a voter without it reports no readers): the live readers of a read-write lock's key,
   * read-only (scripts/read.ts, READ_INSPECT).
   */
  inspectReaders?(lockKey: string): Promise<string[]>;
  /** A round trip that proves the voter answers (health checks). */
  ping(): Promise<void>;
  /**
   * Delivers the messages published on `channel` (the engine's wake channel) to `onMessage`.
   * Resolves when the voter confirmed the subscription; re-subscribes after a reconnect.
   */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** Calls `listener` when the voter's connection comes up or goes down (node events). */
  onHealthChange(listener: (up: boolean, reason?: string) => void): void;
  /**
   * Optional (voters with a server behind them): calls `listener` when the voter starts to abstain
   * on its own, e.g. the identity guard found a server that restarted or failed over; it answers
   * acquires with an `abstaining` vote for `forMs`.
   */
  onAbstention?(listener: (forMs: number, why: string) => void): void;
  /** Why an operation failed, log-safe (a connection's own last error when it is down). */
  failureReason(err: unknown): string;
  /** Closes what the voter opened (never a client that was passed in); bounded by `timeoutMs`. */
  close(timeoutMs: number): Promise<void>;
}

/** What a voter is built with: the scripts, and the engine's settings. */
export interface VoterContext {
  /** The lock scripts: the same constants for every engine (scripts/index.ts, SCRIPTS). */
  readonly scripts: EngineScripts;
  readonly settings: ScriptSettings;
  /**
   * The engine's script keys and arguments, built once per call and shared by its voters
   * (scripts/calls.ts); for voters that run the Lua scripts.
   */
  readonly calls: ScriptCalls;
  readonly logger: RedlockLogger;
  readonly connectTimeout: number;
  /** Reviews what a voter's server says of itself on each connection; undefined when preflight is off. */
  readonly preflight?: Preflight | undefined;
  /**
   * The engine's write batching window (write-batching.ts), for voters that cork their sockets
   * until the end of a tick; the engine waits on it for a release's writes to leave.
   */
  readonly writes: WriteWindow;
  /**
   * The engine's per-node command timeout, ms, for clients whose commands carry one of their own
   * (node-redis: out of its offline queue when it expires). Undefined: the client's default.
   */
  readonly nodeTimeout?: number;
}

/**
 * A voter the caller builds itself (e.g. `MemoryVoter.factory()` from `nest-quorum-lock/testing`), in
 * `nodes` beside URLs, ioredis options and clients.
 */
export interface VoterFactory {
  createVoter(context: VoterContext): Voter;
}

/** Whether a `nodes` entry is a {@link VoterFactory}. */
export function isVoterFactory(node: unknown): node is VoterFactory {
  return typeof (node as Partial<VoterFactory> | null)?.createVoter === 'function';
}
