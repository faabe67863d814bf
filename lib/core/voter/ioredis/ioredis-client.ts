import type { Redis } from 'ioredis';
import type { RedlockLogger } from '../../logger.js';
import { runScript, SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { settleWithin, startTimeout } from '../../timeouts.js';
import { describeError, faultRetryMs, isFinalFault, nodeErrorLine, nodeFault } from '../describe-error.js';
import { OneWayCalls, type OneWayEncoder } from '../one-way.js';
import type { ScriptClient } from '../script-client.js';
import type { VoterContext } from '../voter.js';
import { WriteBatcher } from '../write-batching.js';
import { ADMISSION_RETRY_MS, admitServer, type AdmissionSettings } from './admission.js';
import {
  corkableStream,
  ioredisServer,
  loadScripts,
  quitConnection,
  subscriberConnection,
  type RedisConnection,
} from './connection.js';

/**
 * One Redis server (a Sentinel-managed primary included) reached with ioredis, as the
 * {@link ScriptClient} of a RedisVoter: admission of each new connection (preflight and the
 * identity guard, admission.ts), write batching, one-way let-go calls, and the wake subscription.
 */
export class IoredisClient implements ScriptClient {
  readonly client: Redis;
  readonly label: string;
  /** The connection that receives wake messages (a subscribed connection can run nothing else). */
  subscriber: Redis | undefined;
  lastError: string | undefined;
  /** What the last logged error was (its kind, or its message): each is logged once in a row. */
  private reported: string | undefined;
  /** The node refused the credentials or a command (final until fixed): nothing to wait for. */
  private refusedCredentials = false;
  /** Admissions failed in a row for such a refusal (their back-off). */
  private admissionFaults = 0;
  private readonly writes: WriteBatcher;
  private up = false;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly owned: boolean;
  private readonly guardKey: string;
  private readonly logger: RedlockLogger;
  private readonly onError = (err: Error) => this.recordError(err);
  private readonly onReady = () => this.admit();
  private readonly onClose = () => this.recordDown();
  // Admission (admission.ts): each new connection votes only once preflight and the identity
  // check passed. A connection that is up but not admitted is "not connected" to the engine.
  private readonly admission: AdmissionSettings;
  private admitted = false;
  private admissions = 0;
  /** The admission in flight, if any: calls made meanwhile wait for it (bounded by their round). */
  private pending: Promise<void> | undefined;
  /** Why the current connection's server does not vote (refused, or not checked yet). */
  private refusal: string | undefined;
  /** The check on this connection said no (not merely failed to run): nothing to wait for. */
  private refused = false;
  private readonly admissionWaiters = new Set<() => void>();
  /** performance.now() until which the node abstains under the identity guard (0: it votes). */
  private abstainUntil = 0;
  private readonly abstentionListeners: Array<(forMs: number, why: string) => void> = [];
  /** The voter this client serves: preflight reviews its server under that voter (attach). */
  private voter: object = this;
  /**
   * Letting go without a reply (one-way.ts): allowed on a connection once its scripts are loaded
   * and the server allows `CLIENT REPLY`; off from a NOSCRIPT (a flushed script cache) until the
   * scripts are loaded again, when the calls that may have met it are sent again.
   */
  private readonly oneWay: OneWayCalls;
  private readonly coalesce = () => this.coalesceWrites();
  private readonly onNoScript = () => {
    if (this.oneWay.noScript()) this.prepareConnection(this.admissions); // loads ahead of the resends
    this.oneWay.sendUnconfirmedAgain();
  };

  constructor(connection: RedisConnection, context: VoterContext) {
    this.client = connection.client;
    this.writes = new WriteBatcher(context.writes);
    this.oneWay = new OneWayCalls(this.client);
    this.label = connection.label;
    this.owned = connection.owned;
    this.guardKey = context.settings.guardKey;
    this.logger = context.logger;
    this.admission = {
      preflight: context.preflight,
      guardMs: context.settings.guardMs,
      markerKey: context.settings.guardKey,
      timeoutMs: Math.max(context.connectTimeout, 1000),
      logger: context.logger,
    };
    this.client.on('error', this.onError);
    this.client.on('ready', this.onReady);
    this.client.on('close', this.onClose);
  }

  attach(voter: object): void {
    this.voter = voter;
    if (this.client.status === 'ready') this.admit(); // a client passed in already connected
  }

  get connected(): boolean {
    return this.admitted && this.client.status === 'ready';
  }

  get connectionError(): string | undefined {
    if (this.connected) return undefined;
    if (this.client.status === 'ready')
      return this.refusal ?? 'connected; checking the server before it votes';
    return this.lastError ?? this.client.status;
  }

  get checking(): Promise<void> | undefined {
    return this.admitted ? undefined : this.pending;
  }

  abstainingForMs(): number {
    if (this.abstainUntil === 0) return 0;
    // The identity guard, decided on connecting: no I/O until it ends.
    const forMs = this.abstainUntil - performance.now();
    if (forMs > 0) return forMs;
    this.abstainUntil = 0;
    return 0;
  }

  /** One server: one marker. */
  markerKey(): string {
    return this.guardKey;
  }

  run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    if (!this.admitted) {
      const checked = (): Promise<T> =>
        this.admitted
          ? this.run(script, keys, args, decode)
          : Promise.reject(new Error(this.connectionError));
      return this.pending ? this.pending.then(checked) : checked();
    }
    this.coalesceWrites();
    // A reply to a command sent after one-way calls confirms that they ran (one-way.ts).
    return runScript(this.client, script, keys, args, this.oneWay.confirming(decode), this.onNoScript);
  }

  /** Writes the call one-way where this connection allows it (one-way.ts). */
  runOneWay(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    encoder?: OneWayEncoder,
  ): boolean {
    return this.oneWay.send(script, keys, args, this.coalesce, encoder);
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.subscriber ??= subscriberConnection(this.client);
    this.subscriber.on('message', (from: string, message: string) => {
      if (from === channel) onMessage(message);
    });
    await this.subscriber.subscribe(channel);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  onAbstention(listener: (forMs: number, why: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  /** Resolves once the server was admitted (true) or refused (false), or after `timeoutMs` (false). */
  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    // Refused on this connection (preflight): it will not vote until it reconnects; do not wait.
    if (this.client.status === 'ready' && this.refused) return Promise.resolve(false);
    // Wrong credentials (or ACL) are final until fixed: waiting out the time-out gains nothing.
    if (this.refusedCredentials) return Promise.resolve(false);
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    let onSettled: (() => void) | undefined;
    const settled = new Promise<void>((resolve) => this.admissionWaiters.add((onSettled = resolve)));
    return settleWithin(settled, timeoutMs).then(() => {
      this.admissionWaiters.delete(onSettled!);
      return this.connected;
    });
  }

  /**
   * Closes the connections we opened; detaches our listeners from a client passed in. QUIT waits
   * for pending replies, at most `timeoutMs`: a hung (e.g. SIGSTOPped) node never answers, and
   * must not stall shutdown. The subscriber connection is always ours.
   */
  async close(timeoutMs: number): Promise<void> {
    this.admissions++; // no retry of an admission after this
    await Promise.all([
      this.subscriber && quitConnection(this.subscriber, timeoutMs),
      this.owned && quitConnection(this.client, timeoutMs),
    ]);
    this.client.off('error', this.onError);
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onClose);
  }

  /**
   * Commands sent to this node in the same tick leave in one socket write, after the first
   * (write-batching.ts): many concurrent locks then cost about one syscall per node per tick, and
   * a lone call is written at once. (ioredis' auto-pipelining waits for setImmediate instead.)
   */
  private coalesceWrites(): void {
    const stream = corkableStream(this.client);
    if (stream) this.writes.beforeWrite(stream);
  }

  private recordError(err: unknown): void {
    const message = describeError(err);
    const fault = nodeFault(err);
    if ((fault ?? message) !== this.reported) this.logger.warn(nodeErrorLine(this.label, err));
    this.reported = fault ?? message;
    this.lastError = message;
    this.refusedCredentials = isFinalFault(fault);
    if (this.refusedCredentials) for (const settled of this.admissionWaiters) settled();
  }

  /**
   * Admits the server of a new connection (preflight, identity guard: admission.ts) before
   * it counts as connected; a later connection's admission supersedes this one.
   */
  private admit(): void {
    const attempt = ++this.admissions;
    this.admitted = false;
    this.oneWay.reset(); // a new connection: what the old one ran or lost is unknown, as for any call
    this.refusal = undefined;
    this.refused = false;
    const current = () => attempt === this.admissions && this.client.status === 'ready';
    this.pending = admitServer(ioredisServer(this.client), this.voter, this.label, this.admission).then(
      (result) => {
        if (attempt === this.admissions) this.pending = undefined;
        if (!current()) return;
        if (!result.vote) {
          this.refusal = result.refusal.message;
          this.refused = true;
        } else {
          // Monotonic: a step of this machine's wall clock neither ends the guard nor stretches it.
          this.abstainUntil = result.abstainMs > 0 ? performance.now() + result.abstainMs : 0;
          if (result.abstainMs > 0) {
            for (const listener of this.abstentionListeners) listener(result.abstainMs, result.why ?? '');
          }
          this.admitted = true;
          this.recordReady(attempt);
        }
        for (const settled of this.admissionWaiters) settled();
      },
      (err: unknown) => {
        if (attempt === this.admissions) this.pending = undefined;
        if (!current()) return;
        // A permission refusal (NOPERM) is reported once and asked again with a back-off.
        const final = isFinalFault(nodeFault(err));
        this.refusal = final
          ? describeError(err)
          : `connected, but the server could not be checked yet: ${describeError(err)}`;
        if (final) this.recordError(err);
        this.admissionFaults = final ? this.admissionFaults + 1 : 0;
        startTimeout(final ? faultRetryMs(this.admissionFaults) : ADMISSION_RETRY_MS, () => {
          if (current()) this.admit();
        });
      },
    );
  }

  private recordReady(attempt: number): void {
    this.prepareConnection(attempt);
    if (this.lastError !== undefined) {
      this.logger.log(
        this.refusedCredentials
          ? `Redis node ${this.label} accepts the credentials now: connected again`
          : `Redis node ${this.label} is reachable again`,
      );
    }
    this.lastError = undefined;
    this.reported = undefined;
    this.refusedCredentials = false;
    this.admissionFaults = 0;
    this.up = true;
    for (const listener of this.healthListeners) listener(true);
  }

  /**
   * Loads the scripts on the connection of admission `attempt` (a restarted node has lost its
   * script cache: now rather than on a NOSCRIPT storm), and allows one-way calls on it once they
   * are all loaded and the server allows skipping replies. Only on a connection the engine owns:
   * on a client passed in, the application's own commands (a MULTI) could enclose ours.
   */
  private prepareConnection(attempt: number): void {
    const loaded = loadScripts(this.client, SCRIPTS.all);
    if (!this.owned || this.client.options.keyPrefix) return;
    this.oneWay.enable(loaded, () => attempt === this.admissions && this.connected);
  }

  private recordDown(): void {
    this.admitted = false;
    this.oneWay.reset();
    if (!this.up) return;
    this.up = false;
    for (const listener of this.healthListeners) listener(false, this.lastError ?? 'connection closed');
  }
}
