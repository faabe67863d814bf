import type { ClockMark, LuaScript } from '../scripts/index.js';
import type { OneWayEncoder } from './one-way-wires.js';

/**
 * What a Redis client brings to a {@link ScriptVoter} (script-voter.ts): how to run a script, its
 * connection's state and events, and its subscriptions. Everything else a voter does (each lock
 * operation's keys and arguments, reply decoding, failure reasons) is the same for every client
 * and lives in ScriptVoter, once. A voter on a new client is an adapter folder beside ioredis/ and
 * ioredis-cluster/: a class implementing this interface, and a voter class that passes it to
 * ScriptVoter.
 *
 * The members marked optional are capabilities: a client that lacks one gets the plain behaviour
 * (no admission, no one-way calls, one call per batch, commands kept in order).
 */
export interface ScriptClient {
  /** Log-safe name (never a password). */
  readonly label: string;
  /** True while commands can be sent (and, where the client checks its server first, once it passed). */
  readonly connected: boolean;
  /** Why it is not connected, log-safe; undefined when connected or never tried. */
  readonly connectionError: string | undefined;
  /**
   * The connection's own last error, log-safe (describe-error.ts), until it is up again: while it
   * is down a command's error says little ("Stream isn't writeable"), this says why.
   */
  readonly lastError: string | undefined;
  /** Resolves true once connected, false when `timeoutMs` passes first. */
  waitReady(timeoutMs: number): Promise<boolean>;
  /**
   * Runs `script` by SHA (EVALSHA) and sends its source on NOSCRIPT (a node's first use, or a node
   * that lost its script cache); `decode` reads the reply, in the same continuation as the
   * NOSCRIPT fallback (one promise per call: this is the hot path).
   */
  run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T>;
  /**
   * The restart-guard marker an acquire of `lockKeys` passes as its last key: the node's marker,
   * or on a client that routes by slot, the marker of the keys' slot (a script may only touch the
   * keys of one slot). May throw (CrossSlotLockError: keys of several slots).
   */
  markerKey(lockKeys: readonly string[]): string;
  /** A round trip that proves the server answers. */
  ping(): Promise<void>;
  /** Delivers the messages published on `channel`; resolves once subscribed; re-subscribes after a reconnect. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** Calls `listener` when the connection comes up or goes down. */
  onHealthChange(listener: (up: boolean, reason?: string) => void): void;
  /** Closes what the client opened (never a client passed in); bounded by `timeoutMs`. */
  close(timeoutMs: number): Promise<void>;

  /**
   * Optional: called once by the voter the adapter serves, when it is built. The engine knows its
   * voters, not their adapters: what the adapter reports about its server (preflight reviews each
   * server per voter) names the voter. A client passed in already connected starts here.
   */
  attach?(voter: object): void;

  /**
   * Optional, admission (a client that checks its server on each connection before it votes):
   * the check in flight, undefined when none is. An acquire waits for it, since it may yet tell
   * the node to abstain.
   */
  readonly checking?: Promise<void> | undefined;
  /**
   * Optional, admission: the ms this node abstains for on its own from now (the identity guard
   * decided on connecting), for an acquire of `lockKeys` (a Cluster decides per shard); 0 when it
   * votes. Read on every acquire, so no I/O.
   */
  abstainingForMs?(lockKeys: readonly string[]): number;
  /** Optional, admission: calls `listener` when the node starts to abstain on its own. */
  onAbstention?(listener: (forMs: number, why: string) => void): void;
  /**
   * Optional, one-way calls (voter/one-way.ts): sends `script` with no reply coming back, in order
   * with the connection's other commands. False when it did not send it (the caller then runs it
   * with a reply). Only let-go scripts are sent this way. `encoder`, when given, encodes the bytes
   * (the engine's, shared by its voters: a release encodes once, not once per voter).
   */
  runOneWay?(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    encoder?: OneWayEncoder,
  ): boolean;
  /**
   * Optional, for clients that route by slot (a Redis Cluster): the slot of a key. A watchdog's
   * batch of extensions is then sent as one call per slot (a script cannot reach across slots).
   */
  keySlot?(key: string): number;
  /**
   * Optional, for clients with more than one server behind them (a Redis Cluster): the clock
   * guard's marking for every client, done their way (one marker per slot, one clock per master;
   * cluster-script-client.ts). Elsewhere the voter marks the one server (scripts/clock-mark.ts).
   */
  markClockStep?(forMs: number, steppedPastMs?: number): Promise<ClockMark>;
  /**
   * Optional: true for a client that routes by slot (a Redis Cluster): the lock scripts are sent
   * with every key they touch declared (scripts/key-layout.ts); elsewhere they derive the names of
   * a lock key's fence counter and queue, and the keys sent are the lock keys alone.
   */
  readonly declaresEveryKey?: boolean;
  /**
   * Optional: true when the client may send a command again later, after commands that followed
   * it (a Cluster client retrying after MOVED or a slot refresh). A let-go then waits for the
   * voter's acquire of the same value, which it must follow.
   */
  readonly reorders?: boolean;
}
