import type { RedlockLogger } from '../logger.js';
import { isLetGo, type LuaScript } from '../scripts/index.js';
import { settleWithin, startTimeout } from '../timeouts.js';
import { describeError, faultRetryMs, isFinalFault, nodeErrorLine, nodeFault } from './describe-error.js';
import { ADMISSION_RETRY_MS, admitServer, type AdmissionSettings } from './ioredis/admission.js';
import type { ScriptClient } from './script-client.js';
import type { ServerCommands } from './server-commands.js';
import type { VoterContext } from './voter.js';

/**
 * A lock command ran on another connection than the one admitted (the client reconnected, and
 * maybe reached a server that restarted or took over, before the command was sent): its vote must
 * not count. AdmittedVoter lets go of it and votes again once the new connection was checked.
 */
export class ServerChangedError extends Error {
  constructor() {
    super('the connection changed under this call: the new one is checked before it votes');
    this.name = 'ServerChangedError';
  }
}

/**
 * The part of a {@link ScriptClient} that is the same for every client of one Redis server:
 * admission of each new connection (preflight and the identity guard: ioredis/admission.ts)
 * before it votes, health and abstention reporting, and holding calls back while a connection is
 * being checked, and the back-off after refused credentials or permissions. A client adapter
 * (ioredis/, node-redis/, glide/) supplies the transport: whether its connection is up, running a
 * script, the server's commands for admission, and it reports each new connection
 * ({@link connectionUp}, every reconnection included), each loss ({@link connectionDown}) and
 * errors ({@link connectionFailed}).
 */
export abstract class AdmittedClient implements ScriptClient {
  abstract readonly label: string;
  lastError: string | undefined;
  /** Whether the transport is connected now (before admission). */
  protected abstract get transportUp(): boolean;
  /** Runs a script on the connection (EVALSHA, EVAL on NOSCRIPT). */
  protected abstract send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T>;
  /** INFO, CONFIG GET and scripts for admission, bounded by `timeoutMs` each. */
  protected abstract server(timeoutMs: number): ServerCommands;
  /** Starts connecting when not connected nor connecting (a client passed in not yet connected). */
  protected abstract startConnecting(): void;
  /**
   * Loads the scripts on the newly admitted connection of admission `attempt` (a restarted node
   * lost its script cache); {@link isCurrent} tells later whether that connection is still the one.
   */
  protected abstract prepareConnection(attempt: number): void;
  abstract ping(): Promise<void>;
  abstract subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  abstract close(timeoutMs: number): Promise<void>;

  protected readonly logger: RedlockLogger;
  private readonly guardKey: string;
  // Admission (ioredis/admission.ts): each new connection votes only once preflight and the
  // identity check passed. A connection that is up but not admitted is "not connected" to the engine.
  private readonly admission: AdmissionSettings;
  private up = false;
  private admitted = false;
  private admissions = 0;
  /** The admission in flight, if any: calls made meanwhile wait for it (bounded by their round). */
  private pending: Promise<void> | undefined;
  /** Why the current connection's server does not vote (refused, or not checked yet). */
  private refusal: string | undefined;
  /** The check on this connection said no (not merely failed to run): nothing to wait for. */
  private refused = false;
  /** What the last logged error was (its kind, or its message): each is logged once in a row. */
  private reported: string | undefined;
  /** The node refused the credentials or a command (final until fixed): nothing to wait for. */
  private refusedCredentials = false;
  /** Admissions failed in a row for such a refusal (their back-off). */
  private admissionFaults = 0;
  private readonly admissionWaiters = new Set<() => void>();
  /** performance.now() until which the node abstains under the identity guard (0: it votes). */
  private abstainUntil = 0;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly abstentionListeners: Array<(forMs: number, why: string) => void> = [];
  private voter: object = this;

  constructor(context: VoterContext) {
    this.logger = context.logger;
    this.guardKey = context.settings.guardKey;
    this.admission = {
      preflight: context.preflight,
      guardMs: context.settings.guardMs,
      markerKey: context.settings.guardKey,
      timeoutMs: Math.max(context.connectTimeout, 1000),
      logger: context.logger,
    };
  }

  attach(voter: object): void {
    this.voter = voter;
    if (this.transportUp) this.connectionUp(); // a client passed in already connected
  }

  get connected(): boolean {
    return this.admitted && this.transportUp;
  }

  get connectionError(): string | undefined {
    if (this.connected) return undefined;
    if (this.transportUp) return this.refusal ?? 'connected; checking the server before it votes';
    return this.lastError ?? this.transportState;
  }

  /** The transport's state while it is not up, for {@link connectionError} when no error says more. */
  protected get transportState(): string {
    return 'not connected';
  }

  get checking(): Promise<void> | undefined {
    return this.admitted ? undefined : this.pending;
  }

  /** Resolves once the connection in use was checked (admission) and whether it votes is known. */
  whenChecked(): Promise<void> {
    return this.pending ?? Promise.resolve();
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
    // A let-go is sent whatever the admission says: it may follow an acquire already written to
    // this connection, which a paused node runs when it resumes; held back, the let-go would never
    // be sent and that late grant would hold the key for its whole lease (S8 with GLIDE voters: 7
    // of 12 failed uncontended acquires met such a key). Sent, it runs behind that acquire.
    if (!this.admitted && !isLetGo(script)) {
      const checked = (): Promise<T> =>
        this.admitted
          ? this.send(script, keys, args, decode)
          : Promise.reject(new Error(this.connectionError));
      return this.pending ? this.pending.then(checked) : checked();
    }
    return this.send(script, keys, args, decode);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  onAbstention(listener: (forMs: number, why: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    // Refused on this connection (preflight): it will not vote until it reconnects; do not wait.
    if (this.transportUp && this.refused) return Promise.resolve(false);
    // Wrong credentials (or ACL) are final until fixed: waiting out the time-out gains nothing.
    if (this.refusedCredentials) return Promise.resolve(false);
    this.startConnecting();
    let onSettled: (() => void) | undefined;
    const settled = new Promise<void>((resolve) => this.admissionWaiters.add((onSettled = resolve)));
    return settleWithin(settled, timeoutMs).then(() => {
      this.admissionWaiters.delete(onSettled!);
      return this.connected;
    });
  }

  /**
   * The transport reports a new connection (every reconnection): its server is admitted
   * (preflight, identity guard: ioredis/admission.ts) before it counts as connected; a later
   * connection's admission supersedes this one.
   */
  protected connectionUp(): void {
    const attempt = ++this.admissions;
    this.admitted = false;
    this.refusal = undefined;
    this.refused = false;
    const current = () => attempt === this.admissions && this.transportUp;
    const server = this.server(this.admission.timeoutMs);
    this.pending = admitServer(server, this.voter, this.label, this.admission).then(
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
        if (final) this.connectionFailed(err);
        this.admissionFaults = final ? this.admissionFaults + 1 : 0;
        startTimeout(final ? faultRetryMs(this.admissionFaults) : ADMISSION_RETRY_MS, () => {
          if (current()) this.connectionUp();
        });
      },
    );
  }

  /** Whether admission `attempt`'s connection is still the one in use, and admitted. */
  protected isCurrent(attempt: number): boolean {
    return attempt === this.admissions && this.connected;
  }

  /** The transport lost its connection (it may reconnect: {@link connectionUp} then). */
  protected connectionDown(reason?: string): void {
    this.admitted = false;
    if (!this.up) return;
    this.up = false;
    for (const listener of this.healthListeners)
      listener(false, reason ?? this.lastError ?? 'connection closed');
  }

  /**
   * An error of the transport: logged once per kind of fault (describe-error.ts) or distinct
   * message in a row, kept as the reason it is down. Refused credentials or permissions end the
   * waits for this node at once: they are final until someone fixes them.
   */
  protected connectionFailed(err: unknown): void {
    const message = describeError(err);
    const fault = nodeFault(err);
    if ((fault ?? message) !== this.reported) this.logger.warn(nodeErrorLine(this.label, err));
    this.reported = fault ?? message;
    this.lastError = message;
    this.refusedCredentials = isFinalFault(fault);
    if (this.refusedCredentials) for (const settled of this.admissionWaiters) settled();
  }

  /** No admission after this (close). */
  protected stopAdmissions(): void {
    this.admissions++;
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
}
