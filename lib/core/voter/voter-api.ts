import type { RedlockLogger } from '../logger.js';
import type { Preflight } from '../preflight.js';
import type { Runtime } from '../runtime.js';
import type { AcquireVote } from '../scripts/acquire.js';
import type { ExtendAnswers, ExtendRequest } from '../scripts/extend.js';
import type { ClockMark } from '../scripts/guards.js';
import type { KeyView } from '../scripts/inspect.js';
import type { LetGo } from '../scripts/let-go.js';
import type { SlotVote } from '../scripts/semaphore.js';
import type { ScriptSettings } from '../scripts/settings.js';
import type { ScriptMode } from './server.js';

/**
 * One voter of the quorum, as the algorithm sees it: something that runs the lock's operations on
 * its own copy of the lock state, reports its health, and tells the engine's waiters when a lock is
 * handed to them. The engine talks to voters through this interface only; the library's voter is
 * one class over a transport per client library (voter.ts), the in-memory transport included.
 * Every operation is atomic on the voter and has the semantics of the scripts in scripts/. A
 * reader's value (READ_MARK) routes its operations to the readers' semantics (scripts/read.ts).
 */
export interface Voter {
  /** Log-safe name (never a password). */
  readonly label: string;
  /** True while it votes: connected, and its server checked and not refused. */
  readonly connected: boolean;
  /** Why it is not connected, log-safe; undefined when connected or never tried. */
  readonly connectionError: string | undefined;
  /**
   * Which server answers, as its INFO said at its latest check: `Redis 7.4.1`, `Valkey 8.0.1`
   * (a Cluster: each distinct one); undefined before the first check or where INFO is denied.
   */
  readonly server?: string | undefined;
  /**
   * Whether it is still on its way to a verdict: connecting with no failure yet, or connected and a
   * server behind it not checked yet. False once every one was checked, it was refused, or its
   * latest attempt to connect failed (the bootstrap does not wait for it then). Absent: taken as
   * true until it is ready.
   */
  readonly pending?: boolean;
  /** The run_ids of its servers as checked: two voters sharing one are one server. */
  readonly serverIds?: readonly string[];
  /** Resolves true once connected (and checked), false when `timeoutMs` passes first. */
  waitReady(timeoutMs: number): Promise<boolean>;
  /**
   * Takes the lock keys for `value` (all or none), queueing it with `ticket` when busy ('' = do not
   * queue). `seedUs`: the token proposed for a resource's first grant (fencing). `expectedClockUs`
   * (the clock guard): where the engine expects this voter's clock.
   */
  acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): Promise<AcquireVote>;
  /** A semaphore's slot search (scripts/semaphore.ts); optional: a voter without it serves none. */
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
  /** Extends each lock of the batch that still holds its value; one answer per lock (and the clock). */
  extend(batch: readonly ExtendRequest[]): Promise<ExtendAnswers>;
  /** Lets go of the keys `value` holds, and of its places in line. */
  letGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown>;
  /** Optional: resolves once the commands sent so far have left this process; undefined: they have. */
  written?(): Promise<void> | undefined;
  /** Optional: the same without a reply; false when not sent. (The library's voters always answer.) */
  letGoOneWay?(keys: readonly string[], value: string, how: LetGo): boolean;
  /** Optional: the clock guard's marking for every client (scripts/guards.ts). */
  markClockStep?(forMs: number, steppedPastMs?: number): Promise<ClockMark> | undefined;
  /** Reads a lock key, its lease and its fence counter (writes nothing). */
  inspect(lockKey: string): Promise<KeyView>;
  /** Optional: the live readers of a read-write lock's key. */
  inspectReaders?(lockKey: string): Promise<string[]>;
  /** Optional: the ms the voter abstains for from now for `keys` (a Cluster: its shard's); 0 when it votes. */
  abstainingForMs?(keys: readonly string[]): number;
  /** A round trip that proves the voter answers. */
  ping(): Promise<void>;
  /** Delivers the messages published on `channel`; resolves once subscribed. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** Calls `listener` when the voter's connection comes up or goes down. */
  onHealthChange(listener: (up: boolean, reason?: string) => void): void;
  /**
   * Optional: calls `listener` when the voter (or one shard of it: `shard`) starts to abstain on its
   * own, e.g. its identity guard found a server that restarted or failed over.
   */
  onAbstention?(listener: (forMs: number, why: string, shard?: string) => void): void;
  /** Why an operation failed, log-safe. */
  failureReason(err: unknown): string;
  /** Closes what the voter opened (never a client that was passed in); bounded by `timeoutMs`. */
  close(timeoutMs: number): Promise<void>;
}

/** What a voter is built with. */
export interface VoterContext {
  readonly settings: ScriptSettings;
  readonly logger: RedlockLogger;
  readonly connectTimeout: number;
  /** The engine's per-node command timeout, ms. */
  readonly nodeTimeout: number;
  readonly runtime: Runtime;
  /** Reviews what a voter's servers say of themselves; undefined when preflight is off. */
  readonly preflight?: Preflight | undefined;
  /** How scripts are called (the option `scripts`); default `eval`. */
  readonly scripts?: ScriptMode;
}

/** A voter the caller builds itself, in `nodes` beside URLs, options and clients. */
export interface VoterFactory {
  createVoter(context: VoterContext): Voter;
}

/** Whether a `nodes` entry is a {@link VoterFactory}. */
export function isVoterFactory(node: unknown): node is VoterFactory {
  return typeof (node as Partial<VoterFactory> | null)?.createVoter === 'function';
}
