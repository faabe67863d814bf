import type { Redis } from 'ioredis';
import { identity, runScript, type LuaScript } from '../scripts/lua-script.js';
import { oneWayScriptCall, type OneWayEncoder } from './one-way-wires.js';

export { oneWayScriptCall, OneWayWires, type OneWayEncoder } from './one-way-wires.js';

/*
 * One-way script calls: a script whose reply nobody reads (letting go of lock keys: a release, a
 * failed attempt's clean-up, a waiter leaving the line), sent so that the server sends no reply.
 *
 * `CLIENT REPLY SKIP` before the call tells the server to skip the reply to the next command, the
 * call's error included, and to send none for itself. Each reply costs a socket write and a wake-up
 * of this process on the server's side and a read on ours: in an uncontended acquire + release,
 * the five release replies are a quarter of the messages of the cycle. Without replies, the
 * release is on the wire once written: the holder does not wait for a round trip to let go.
 *
 * The two commands are written to the connection's socket directly, in one write, so that they
 * reach the server in the connection's order (behind every command sent before, ahead of every
 * command sent after) and ioredis never expects a reply for them: its reply queue stays as it was.
 * This is only sound on a connection nobody else writes to (a MULTI of someone else's could
 * enclose them) and whose user may run `CLIENT REPLY` (a refusal would be a reply ioredis reads as
 * the answer to its next command): the ioredis adapter (ioredis/ioredis-client.ts) checks both first (see oneWayAllowed). A call that
 * meets a flushed script cache is sent again (see UnconfirmedCalls).
 */

/** Encodes each call anew (a caller without an engine's {@link OneWayWires}). */
const ENCODE_EACH: OneWayEncoder = {
  oneWayWire: (script, keys, args) => oneWayScriptCall(script.sha, keys, args),
};

/**
 * Whether the server lets this connection's user skip replies: `CLIENT REPLY ON` (the mode every
 * connection starts in) answers OK where `CLIENT REPLY SKIP` is allowed too, and an error where
 * the ACL denies it or a proxy in between does not know it. Never rejects.
 */
export function oneWayAllowed(client: { call(...args: string[]): Promise<unknown> }): Promise<boolean> {
  return client.call('CLIENT', 'REPLY', 'ON').then(
    (reply) => reply === 'OK',
    () => false,
  );
}

/**
 * Unconfirmed calls one connection may hold: a node that stops answering but keeps its connection
 * (a paused process) confirms nothing, and past this the voter waits for replies again.
 */
const MAX_UNCONFIRMED = 1024;

/** A one-way script call, kept until a later reply shows that it ran. */
export interface OneWayCall {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/**
 * The one-way calls of one connection that no later reply has confirmed yet. A one-way call that
 * meets a flushed script cache (NOSCRIPT) fails without a word, and a NOSCRIPT reply to a command
 * sent before it may still be on its way when it is sent. A command sent after it that succeeds
 * confirms it: the server ran them in order, and the cache is only ever refilled by the engine
 * after a NOSCRIPT. So on a NOSCRIPT the voter sends the unconfirmed calls again, with replies:
 * letting go again is harmless (the scripts free only what still holds the caller's value).
 * In steady use the list holds the calls since the node's last reply: a release until the next
 * acquire's reply.
 */
export class UnconfirmedCalls {
  /** Number of one-way calls sent so far on this connection. */
  private sent = 0;
  /** Unconfirmed calls, oldest first, each with its number. */
  private calls: Array<{ readonly seq: number; readonly call: OneWayCall }> = [];

  /** Whether any call waits for confirmation. */
  get pending(): boolean {
    return this.calls.length > 0;
  }

  /** Whether no more calls should be sent one-way until some are confirmed. */
  get full(): boolean {
    return this.calls.length >= MAX_UNCONFIRMED;
  }

  /** Records a call just sent. */
  sentNow(call: OneWayCall): void {
    this.calls.push({ seq: ++this.sent, call });
  }

  /**
   * `decode`, which first confirms every call sent before now: for a command sent now, whose
   * successful reply shows that they ran.
   */
  confirmingBy<T>(decode: (reply: unknown) => T): (reply: unknown) => T {
    const mark = this.sent;
    return (reply) => {
      let confirmed = 0;
      while (confirmed < this.calls.length && this.calls[confirmed]!.seq <= mark) confirmed++;
      if (confirmed > 0) this.calls.splice(0, confirmed);
      return decode(reply);
    };
  }

  /** Takes every unconfirmed call out (to send again, or on a new connection to forget). */
  takeAll(): OneWayCall[] {
    return this.calls.splice(0).map((entry) => entry.call);
  }
}

/**
 * One-way calls on one voter's connections: whether the current connection allows them, the
 * calls not yet confirmed, and sending them again after a NOSCRIPT. The voter calls
 * {@link reset} on each new connection, {@link enable} once it is prepared, and routes every
 * answered script call through {@link confirming}.
 */
export class OneWayCalls {
  private enabled = false;
  private readonly unconfirmed = new UnconfirmedCalls();

  constructor(private readonly client: Redis) {}

  /** A new connection, or none: no one-way call until {@link enable}; earlier calls are forgotten. */
  reset(): void {
    this.enabled = false;
    this.unconfirmed.takeAll();
  }

  /**
   * Allows one-way calls on the current connection once its scripts are `loaded` and the server
   * allows skipping replies (oneWayAllowed), if `current()` still holds then.
   */
  enable(loaded: Promise<boolean>, current: () => boolean): void {
    void Promise.all([loaded, oneWayAllowed(this.client)]).then(([scripts, allowed]) => {
      if (scripts && allowed && current()) this.enabled = true;
    });
  }

  /**
   * Sends `script` one-way, after `beforeWrite` (the voter's write batching), encoded by `encoder`
   * (the engine's shared {@link OneWayWires} when given). False when the connection does not allow
   * it now: the caller sends it with a reply instead.
   */
  send(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    beforeWrite: () => void,
    encoder: OneWayEncoder = ENCODE_EACH,
  ): boolean {
    if (!this.enabled || this.unconfirmed.full) return false;
    const { stream } = this.client as unknown as {
      stream?: { writable?: boolean; write(data: string): boolean };
    };
    if (!stream?.writable) return false;
    beforeWrite();
    stream.write(encoder.oneWayWire(script, keys, args));
    this.unconfirmed.sentNow({ script, keys, args });
    return true;
  }

  /** The decoder for an answered call sent now: its reply confirms the one-way calls before it. */
  confirming<T>(decode: ((reply: unknown) => T) | undefined): ((reply: unknown) => T) | undefined {
    return this.unconfirmed.pending
      ? this.unconfirmed.confirmingBy(decode ?? (identity as (r: unknown) => T))
      : decode;
  }

  /**
   * A NOSCRIPT came back: no one-way call until the scripts are loaded again. Returns true when
   * the caller must load them and {@link enable} again; it then calls {@link sendUnconfirmedAgain}.
   */
  noScript(): boolean {
    const wasEnabled = this.enabled;
    this.enabled = false;
    return wasEnabled;
  }

  /**
   * Sends the unconfirmed calls again, answered, behind the call that met NOSCRIPT and its retry
   * (letting go twice is harmless).
   */
  sendUnconfirmedAgain(): void {
    for (const { script, keys, args } of this.unconfirmed.takeAll()) {
      runScript(this.client, script, keys, args).catch(() => undefined);
    }
  }
}
