import { SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { RUN_ID } from '../../scripts/identity.js';
import { settleWithin, TIMED_OUT } from '../../timeouts.js';
import { AdmittedClient, ServerChangedError } from '../admitted-client.js';
import { closeGlideSubscriber, createGlideSubscriber, type GlideFactory } from './glide-subscriber.js';
import type { ServerCommands } from '../server-commands.js';
import type { VoterContext } from '../voter.js';

/*
 * Valkey GLIDE 2 (`GlideClient`) as the voter drives it. GLIDE is an optional
 * peer, and the voter only adopts clients the application created (GLIDE connects in its async
 * `createClient`, so it never opens one from a URL): nothing is loaded, the members it calls are
 * written out here.
 *
 * - Scripts: EVALSHA through `customCommand`, once SCRIPT LOAD has put the script on the server
 *   of the current connection (EVAL on NOSCRIPT: a server that restarted unseen). GLIDE logs every
 *   error reply at WARN through its process-wide logger, which belongs to the application: the
 *   voter avoids them instead. The run_id probe and the admission's scripts (identity check, ACL
 *   probe) go by EVAL: they are short or rare, and they are the first calls on a server that
 *   restarted, whose script cache is empty.
 * - Bounds: GLIDE times every request out after its `requestTimeout` (250 ms by default) and has no
 *   offline queue to wait in; the engine's rounds bound each call by nodeTimeout besides.
 * - Wake-ups: GLIDE applies pub/sub subscriptions when a client is created (a client without a
 *   callback configured then cannot deliver messages to us). The voter opens a subscriber of its
 *   own from the client's configuration (same addresses, credentials, TLS) with the wake channel:
 *   one more connection per node, closed with the engine.
 * - Reconnections: GLIDE reconnects inside its core and says nothing, and sets the connection's
 *   name, database and client id space up again (CLIENT ID starts over on a restarted server), so
 *   none of those tells. The voter reads the server's run_id (a one-line script) right behind
 *   every acquire, on the same connection and in the same round trip: a grant counts only when it
 *   ran on the server that was admitted; another server is checked by the identity guard before it
 *   votes. The run_id is also read once a second while idle. Cost: one small extra script call
 *   per acquire per GLIDE voter, pipelined. Where the ACL denies INFO, there is no run_id: the
 *   identity guard is off for that node (admission says so in the log), and PING is the probe.
 */

/** A GLIDE reply decoder option, passed as GLIDE takes it (`Decoder.String` is 1). */
const DECODE_STRINGS = { decoder: 1 } as const;

/** The members of a GLIDE client the voter calls (and reads: `config` is public at run time). */
export interface GlideClientApi {
  customCommand(args: readonly string[], options?: object): Promise<unknown>;
  close(errorMessage?: string): void;
  readonly config?: Record<string, unknown> & {
    readonly addresses?: ReadonlyArray<{ readonly host?: string; readonly port?: number }>;
    readonly useTLS?: boolean;
    readonly credentials?: { readonly username?: string };
  };
  readonly isClosed?: boolean;
}

/** How often the server's run_id is read while idle to see a reconnection, ms. */
const RECONNECTION_PROBE_MS = 1000;

/**
 * One Redis / Valkey server reached with a Valkey GLIDE `GlideClient` passed in, as the
 * {@link ScriptClient} of a GlideVoter (see the top of this file).
 */
export class GlideScriptClient extends AdmittedClient {
  readonly label: string;
  readonly client: GlideClientApi;
  private readonly nodeTimeout: number;
  private subscriber: GlideClientApi | undefined;
  private readonly subscriptions = new Map<string, (message: string) => void>();
  /**
   * The run_id of the server the current connection was admitted on: GLIDE reconnects without a
   * word (and sets the connection's name and database again, so neither tells), and a server
   * that restarted has another run_id.
   */
  private runId: string | undefined;
  private alive = false;
  private probe: NodeJS.Timeout | undefined;
  private closed = false;
  /** SHAs of the scripts loaded on the server of the current connection (SCRIPT LOAD answered). */
  private readonly loaded = new Set<string>();
  /** SCRIPT LOADs in flight, by SHA: a script's first calls wait for the one load. */
  private readonly loading = new Map<string, Promise<void>>();
  /** Commands sent on the application's client and not answered yet (close waits for them). */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(client: object, context: VoterContext) {
    super(context);
    this.client = client as GlideClientApi;
    this.nodeTimeout = context.nodeTimeout ?? 1000;
    const addresses = this.client.config?.addresses ?? [];
    const scheme = this.client.config?.useTLS ? 'rediss' : 'redis';
    const list = addresses.map((a) => `${a.host ?? 'localhost'}:${a.port ?? 6379}`).join(',');
    this.label = `${scheme}://${list || 'glide'}`;
    this.startConnecting();
  }

  protected get transportUp(): boolean {
    return this.alive && !this.client.isClosed && !this.closed;
  }

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    const call = this.runScript(script, keys, args, this.nodeTimeout);
    const admittedOn = this.runId;
    if (script !== SCRIPTS.acquire || admittedOn === undefined) return call.then(decode);
    // GLIDE reconnects without a word: a grant counts only when the server that ran it is the one
    // admitted. RUN_ID goes right behind the acquire, on the same connection, in the same round
    // trip; another run_id means GLIDE reconnected to a server that restarted (or took over)
    // before the acquire ran: the vote fails (the engine lets go of it) and the identity guard
    // checks the server before it votes again.
    const current = this.afterLoads(() => this.evalScript(RUN_ID, [], [], this.nodeTimeout));
    return Promise.all([call, current]).then(([reply, runId]) => {
      if (String(runId) === admittedOn) return decode(reply);
      this.serverChanged(); // checked now, by the identity guard
      throw new ServerChangedError();
    });
  }

  protected server(timeoutMs: number): ServerCommands {
    return {
      info: (section) => this.command(['INFO', section], timeoutMs).then(String),
      configGet: (parameter) => this.command(['CONFIG', 'GET', parameter], timeoutMs),
      runScript: (script, keys, args) => this.evalScript(script, keys, args, timeoutMs),
      username: this.client.config?.credentials?.username,
    };
  }

  /** Starts following the connection: a first probe now (its 'up'), then one every second. */
  protected startConnecting(): void {
    if (this.probe || this.closed) return;
    void this.check();
    this.probe = setInterval(() => void this.check(), RECONNECTION_PROBE_MS);
    this.probe.unref();
  }

  protected prepareConnection(): void {
    // A server just admitted: perhaps another one than before (a restart), with an empty cache.
    this.loaded.clear();
    for (const script of SCRIPTS.all) this.load(script, 5000).catch(() => undefined);
    // The admitted server's run_id (see runId); until it is read, grants are taken as they come
    // (the admission just checked this server).
    this.runId = undefined;
    this.evalScript(RUN_ID, [], [], 5000).then(
      (runId) => {
        if (this.connected) this.runId = String(runId);
      },
      () => undefined,
    );
  }

  async ping(): Promise<void> {
    await this.command(['PING'], this.nodeTimeout);
  }

  /**
   * Delivers the messages of `channel` to `onMessage`: a subscriber client of our own, created
   * from the client's configuration with the channel (GLIDE subscribes at creation). Rejects when
   * the client's configuration cannot be read: waiters then retry on the holder's lease instead.
   */
  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.subscriptions.set(channel, onMessage);
    const config = this.client.config;
    const factory = (this.client as { constructor?: Partial<GlideFactory> }).constructor;
    if (!config || typeof factory?.createClient !== 'function') {
      throw new Error('this GLIDE client does not show its configuration: no subscriber for wake-ups');
    }
    const previous = this.subscriber;
    this.subscriber = (await createGlideSubscriber(
      factory as GlideFactory,
      config,
      this.subscriptions.keys(),
      (from, message) => this.subscriptions.get(from)?.(message),
    )) as GlideClientApi;
    if (this.closed) void closeGlideSubscriber(this.subscriber);
    if (previous) void closeGlideSubscriber(previous);
  }

  /**
   * Stops following the connection, closes the subscriber and waits for the commands still in
   * flight on the application's client, at most `timeoutMs` (an application that closes its client
   * right after would close it under them: GLIDE logs `client closing - Connection reset by peer`).
   */
  async close(timeoutMs = 1000): Promise<void> {
    this.closed = true;
    this.stopAdmissions();
    if (this.probe) clearInterval(this.probe);
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    const closing = subscriber ? closeGlideSubscriber(subscriber, timeoutMs) : Promise.resolve();
    await settleWithin(Promise.allSettled([closing, ...this.inFlight]), timeoutMs);
  }

  /**
   * Runs a script by SHA once it is loaded on this connection's server (EVAL on NOSCRIPT, and the
   * scripts are loaded again: the server restarted unseen), bounded by `timeoutMs`.
   */
  private runScript(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    timeoutMs: number,
  ): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...args.map(String)];
    const bySha = () =>
      this.command(['EVALSHA', script.sha, ...rest], timeoutMs).catch((err: unknown) => {
        if (err instanceof Error && /NOSCRIPT|NoScriptError/.test(err.message)) {
          this.loaded.clear();
          return this.command(['EVAL', script.source, ...rest], timeoutMs);
        }
        throw err;
      });
    // Sent at once when loaded: an acquire and the RUN_ID behind it stay in order.
    if (this.loaded.has(script.sha)) return bySha();
    return this.load(script, timeoutMs).then(bySha, bySha);
  }

  /** Runs a script by its source (no NOSCRIPT possible), bounded by `timeoutMs`. */
  private evalScript(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    timeoutMs: number,
  ): Promise<unknown> {
    return this.command(
      ['EVAL', script.source, String(keys.length), ...keys, ...args.map(String)],
      timeoutMs,
    );
  }

  /**
   * Runs `send` once the SCRIPT LOADs in flight settled (at once when none is): a call queued
   * behind a script's first load is sent before it.
   */
  private afterLoads<T>(send: () => Promise<T>): Promise<T> {
    if (this.loading.size === 0) return send();
    return Promise.allSettled([...this.loading.values()]).then(send);
  }

  /** SCRIPT LOAD of `script` on this connection's server (one in flight per script). */
  private load(script: LuaScript, timeoutMs: number): Promise<void> {
    let pending = this.loading.get(script.sha);
    if (!pending) {
      pending = this.command(['SCRIPT', 'LOAD', script.source], timeoutMs)
        .then(() => void this.loaded.add(script.sha))
        .finally(() => this.loading.delete(script.sha));
      this.loading.set(script.sha, pending);
    }
    return pending;
  }

  /** Any command, with string replies, bounded by `timeoutMs`. */
  private command(args: readonly string[], timeoutMs: number): Promise<unknown> {
    const sent = this.client.customCommand(args, DECODE_STRINGS);
    this.inFlight.add(sent);
    const settled = () => void this.inFlight.delete(sent);
    sent.then(settled, settled);
    return settleWithin(sent, timeoutMs).then((reply) => {
      if (reply === TIMED_OUT) throw new Error(`no reply to ${args[0]} within ${timeoutMs} ms`);
      return normaliseReply(reply);
    });
  }

  /**
   * One probe: the connection answers (up) or not (down); another run_id than the admitted one
   * is another server (GLIDE reconnected), checked before it votes again.
   */
  private async check(): Promise<void> {
    try {
      const timeoutMs = Math.max(this.nodeTimeout, 1000);
      const runId = await this.evalScript(RUN_ID, [], [], timeoutMs).catch((err: unknown) => {
        // INFO denied to the ACL user: no run_id to compare; PING says whether it answers.
        if (err instanceof Error && /NOPERM/.test(err.message)) {
          return this.command(['PING'], timeoutMs).then(() => this.runId);
        }
        throw err;
      });
      if (this.closed) return;
      const wasAlive = this.alive;
      this.alive = true;
      if (!wasAlive) {
        this.loaded.clear(); // back after an outage: perhaps on a restarted server
        this.connectionUp();
      } else if (this.runId !== undefined && String(runId) !== this.runId) this.serverChanged();
    } catch (err) {
      if (this.closed) return;
      const wasAlive = this.alive;
      this.alive = false;
      this.connectionFailed(err);
      if (wasAlive) this.connectionDown();
    }
  }

  /** GLIDE reconnected to another server: it is checked (admission) before it votes again. */
  private serverChanged(): void {
    if (this.runId === undefined) return; // already being checked
    this.runId = undefined;
    this.loaded.clear(); // its script cache is empty
    this.connectionUp();
  }
}

/**
 * GLIDE's replies in the shapes the scripts' decoders and preflight read: a RESP3 map (CONFIG GET)
 * comes as `[{ key, value }, ...]`, made `[key, value, ...]` here.
 */
export function normaliseReply(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length === 0) return reply;
  const first = reply[0] as { key?: unknown; value?: unknown } | null;
  if (first && typeof first === 'object' && !Array.isArray(first) && 'key' in first && 'value' in first) {
    return (reply as Array<{ key: unknown; value: unknown }>).flatMap(({ key, value }) => [key, value]);
  }
  return reply;
}
