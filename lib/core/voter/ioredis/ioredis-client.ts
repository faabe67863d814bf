import type { Redis } from 'ioredis';
import { runScript, SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { AdmittedClient } from '../admitted-client.js';
import { OneWayCalls, type OneWayEncoder } from '../one-way.js';
import type { ServerCommands } from '../server-commands.js';
import type { VoterContext } from '../voter.js';
import { WriteBatcher } from '../write-batching.js';
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
 * {@link ScriptClient} of a RedisVoter. Admission of each new connection (preflight and the
 * identity guard) is AdmittedClient's, as for every client of one server; ioredis' own part is
 * write batching, one-way let-go calls, and the wake subscription.
 */
export class IoredisClient extends AdmittedClient {
  readonly client: Redis;
  readonly label: string;
  /** The connection that receives wake messages (a subscribed connection can run nothing else). */
  subscriber: Redis | undefined;
  /** What each subscribed channel delivers to. */
  private readonly channels = new Map<string, (message: string) => void>();
  private readonly writes: WriteBatcher;
  private readonly owned: boolean;
  /** A client passed in unconnected (`lazyConnect`) that this engine connected: closed with it. */
  private connectedHere = false;
  private readonly onError = (err: Error) => this.connectionFailed(err);
  private readonly onReady = () => this.connectionUp();
  private readonly onClose = () => this.connectionDown();
  /**
   * Letting go without a reply (one-way.ts): allowed on a connection once its scripts are loaded
   * and the server allows `CLIENT REPLY`; off from a NOSCRIPT (a flushed script cache) until the
   * scripts are loaded again, when the calls that may have met it are sent again.
   */
  private readonly oneWay: OneWayCalls;
  /** The admission whose connection prepared last (one-way calls are allowed on it). */
  private preparedAttempt = 0;
  private readonly coalesce = () => this.coalesceWrites();
  private readonly onNoScript = () => {
    if (this.oneWay.noScript()) this.prepareConnection(this.preparedAttempt); // loads ahead of the resends
    this.oneWay.sendUnconfirmedAgain();
  };

  constructor(connection: RedisConnection, context: VoterContext) {
    super(context);
    this.client = connection.client;
    this.writes = new WriteBatcher(context.writes);
    this.oneWay = new OneWayCalls(this.client);
    this.label = connection.label;
    this.owned = connection.owned;
    this.client.on('error', this.onError);
    this.client.on('ready', this.onReady);
    this.client.on('close', this.onClose);
  }

  protected get transportUp(): boolean {
    return this.client.status === 'ready';
  }

  protected override get transportState(): string {
    return this.client.status;
  }

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    this.coalesceWrites();
    // A reply to a command sent after one-way calls confirms that they ran (one-way.ts).
    return runScript(this.client, script, keys, args, this.oneWay.confirming(decode), this.onNoScript);
  }

  protected server(): ServerCommands {
    return ioredisServer(this.client);
  }

  protected startConnecting(): void {
    if (this.client.status !== 'wait') return;
    this.connectedHere = !this.owned;
    this.client.connect().catch(() => undefined);
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

  /** Subscribes `channel` (again after a failure: one listener per channel, whatever the tries). */
  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    if (!this.subscriber) {
      this.subscriber = subscriberConnection(this.client);
      this.subscriber.on('message', (from: string, message: string) => this.channels.get(from)?.(message));
    }
    this.channels.set(channel, onMessage);
    await this.subscriber.subscribe(channel);
  }

  /**
   * Closes the connections we opened (a client passed in unconnected included); detaches our
   * listeners from a client passed in. QUIT waits
   * for pending replies, at most `timeoutMs`: a hung (e.g. SIGSTOPped) node never answers, and
   * must not stall shutdown. The subscriber connection is always ours.
   */
  async close(timeoutMs: number): Promise<void> {
    this.stopAdmissions();
    await Promise.all([
      this.subscriber && quitConnection(this.subscriber, timeoutMs),
      (this.owned || this.connectedHere) && quitConnection(this.client, timeoutMs),
    ]);
    this.client.off('error', this.onError);
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onClose);
  }

  /** A new connection: what the old one ran or lost is unknown, as for any call. */
  protected override connectionUp(): void {
    this.oneWay.reset();
    super.connectionUp();
  }

  protected override connectionDown(reason?: string): void {
    this.oneWay.reset();
    super.connectionDown(reason);
  }

  /**
   * Loads the scripts on the connection of admission `attempt` (a restarted node has lost its
   * script cache: now rather than on a NOSCRIPT storm), and allows one-way calls on it once they
   * are all loaded and the server allows skipping replies. Only on a connection the engine owns:
   * on a client passed in, the application's own commands (a MULTI) could enclose ours.
   */
  protected prepareConnection(attempt: number): void {
    this.preparedAttempt = attempt;
    const loaded = loadScripts(this.client, SCRIPTS.all);
    if (!this.owned || this.client.options.keyPrefix) return;
    this.oneWay.enable(loaded, () => this.isCurrent(attempt));
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
}
