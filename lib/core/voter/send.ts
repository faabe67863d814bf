import type { LuaScript } from '../scripts/lua.js';
import { callFunction } from './functions.js';
import type { ScriptMode, ServerSend } from './server.js';

/*
 * How a voter's commands go out: as scripts (runScript, the NOSCRIPT fallback) and in the order the
 * engine gave them (SendOrder).
 */

/** How {@link runScript} sends one script. */
export interface ScriptCall {
  /** Default `eval`. */
  readonly mode?: ScriptMode;
  /**
   * `eval`: a script a connection runs rarely (the guards' maintenance) goes by its source at once,
   * so that it never meets NOSCRIPT (which some clients log as an error: Valkey GLIDE).
   */
  readonly bySource?: boolean;
  /**
   * `eval`: whether a call met by NOSCRIPT is still to be sent with its source (default: yes). A
   * vote's is not once its voter let go of the value since: the let-go may have run first.
   */
  readonly resendIf?: () => boolean;
  /**
   * `functions`: where FUNCTION LOAD goes when the server lacks the library (default: `send`).
   * A keyless command sent by a key's route may reach any master of a Cluster: give the key's shard.
   */
  readonly loadVia?: ServerSend;
}

/**
 * Runs `script` on `send`'s server: by SHA, its source on NOSCRIPT (a first use, a flushed cache);
 * or, in `functions` mode, as its function, the library loaded on "Function not found". The one
 * place every script of the engine goes through, whatever the client.
 */
export function runScript(
  send: ServerSend,
  script: LuaScript,
  keys: readonly string[],
  args: readonly string[],
  how: ScriptCall = {},
): Promise<unknown> {
  const tail = [String(keys.length), ...keys, ...args];
  if (how.mode === 'functions') return callFunction(send, script, tail, how.loadVia ?? send);
  if (how.bySource) return send(['EVAL', script.source, ...tail]);
  return send(['EVALSHA', script.sha, ...tail]).catch((err: unknown) => {
    if (!(err instanceof Error && /NOSCRIPT|NoScriptError/.test(err.message))) throw err;
    if (how.resendIf?.() === false)
      throw new Error(`${script.name}: not sent again after NOSCRIPT, let go of since`);
    return send(['EVAL', script.source, ...tail]);
  });
}

/**
 * The order of one voter's acquires and let-gos of a lock. The engine lets go without waiting (a
 * one-way release), so the order it gives them in must hold on the server, and two things can
 * break it: the voter itself holds an acquire back before sending it (its vote waits for its
 * server's check after a new connection, or is cast again on a changed server: voter.ts, `hold`)
 * while the let-go would go out; and a client that sends a command again after later ones (a
 * Cluster client following MOVED, ASK, TRYAGAIN or CLUSTERDOWN; a server that lost its functions
 * has the call sent again after the library is loaded: `resends`).
 *
 * - A let-go waits for this voter's acquire of the same value: a let-go that frees a late grant
 *   must run after it. Without `resends` the connection runs commands in the order they were sent:
 *   the let-go waits only while that acquire is held back, and goes right after it is sent.
 * - An acquire waits for this voter's let-go of the same key: a release runs before the same
 *   voter's next vote on that key, which would otherwise find its own lock still held (a
 *   re-acquire, a hand-over to the next waiter of this engine). Without `resends`: only for a
 *   let-go held back by the rule above, until it is sent (no round trip on the usual path). A release
 *   waiting in the voter's batch of the tick goes out before any later command (batches.ts).
 * - Without `resends`, one command is still sent again: a script met by NOSCRIPT goes again with
 *   its source, behind what was sent meanwhile. An acquire is not once this voter let go of its
 *   value since (`letGoSince`): the let-go ran first, and the acquire would take the key for its lease.
 */
export class SendOrder {
  /** `resends`: acquires in flight by value. */
  private readonly acquiring = new Map<string, Promise<unknown>>();
  /** Let-gos by lock key: in flight (`resends`), or else held back until sent. */
  private readonly lettingGo = new Map<string, Promise<unknown>>();
  /** Without `resends`: acquires the voter holds back before sending them, by value (see hold). */
  private readonly held = new Map<string, Promise<unknown>>();
  /** Without `resends`: let-gos sent and not answered yet, by value (see letGoSince). */
  private readonly unanswered = new Map<string, Promise<unknown>>();

  constructor(private readonly resends: boolean) {}

  /** Sends an acquire of `keys` for `value` once this voter's let-gos of those keys allow it. */
  acquire<T>(keys: readonly string[], value: string, send: () => Promise<T>): Promise<T> {
    // The usual case (nothing let go of in flight or held back) allocates nothing: every acquire.
    const before =
      this.lettingGo.size === 0
        ? undefined
        : keys.flatMap((key) => {
            const letGo = this.lettingGo.get(key);
            return letGo ? [letGo] : [];
          });
    const sent = before?.length ? Promise.allSettled(before).then(send) : send();
    if (this.resends) track(this.acquiring, value, sent);
    return sent;
  }

  /**
   * The voter holds the acquire of `value` back until `until` settles; a vote that continues on it
   * must have been chained on it before this call (it is sent first, or held again).
   */
  hold(value: string, until: Promise<unknown>): void {
    if (!this.resends) track(this.held, value, until);
  }

  /** Sends a let-go of `keys` for `value` after this voter's acquire of `value` (see above). */
  letGo(keys: readonly string[], value: string, send: () => Promise<unknown>): Promise<unknown> {
    if (this.resends) {
      const acquiring = this.acquiring.get(value);
      const sent = acquiring ? acquiring.then(send, send) : send();
      for (const key of keys) track(this.lettingGo, key, sent);
      return sent;
    }
    const held = this.held.get(value);
    if (!held) return track(this.unanswered, value, send());
    let goes!: () => void;
    const going = new Promise<void>((resolve) => (goes = resolve));
    for (const key of keys) track(this.lettingGo, key, going);
    const go = (): Promise<unknown> => {
      const again = this.held.get(value);
      if (again) return again.then(go, go);
      goes();
      return track(this.unanswered, value, send());
    };
    return held.then(go, go);
  }

  /** A mark of the let-gos of `value` sent so far, taken when an acquire of it is sent. */
  letGoMark(value: string): unknown {
    return this.unanswered.get(value);
  }

  /**
   * Whether a let-go of `value` was sent after `mark` was taken. Asked when the acquire met
   * NOSCRIPT: a let-go sent behind it has not been answered yet (the connection answers in order).
   */
  letGoSince(value: string, mark: unknown): boolean {
    const now = this.unanswered.get(value);
    return now !== undefined && now !== mark;
  }
}

/** Keeps `sent` under `id` until it settles (unless a later one took its place); returns it. */
function track<T>(inFlight: Map<string, Promise<unknown>>, id: string, sent: Promise<T>): Promise<T> {
  inFlight.set(id, sent);
  const settled = () => void (inFlight.get(id) === sent && inFlight.delete(id));
  sent.then(settled, settled);
  return sent;
}
