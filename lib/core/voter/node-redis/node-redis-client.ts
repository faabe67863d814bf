import { SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { AdmittedClient, ServerChangedError } from '../admitted-client.js';
import type { ServerCommands } from '../server-commands.js';
import type { VoterContext } from '../voter.js';
import {
  closeNodeRedis,
  nodeRedisSubscriber,
  runNodeRedisScript,
  type NodeRedisClientApi,
  type NodeRedisConnection,
} from './connection.js';

/**
 * One Redis server reached with node-redis (5 or 6, RESP2 or RESP3; a client from createClient,
 * passed in or opened from a URL or options), as the {@link ScriptClient} of a NodeRedisVoter.
 * Admission (preflight, identity guard) is AdmittedClient's; node-redis emits 'ready' on every
 * (re)connection, and each is checked before it votes.
 *
 * No command waits past nodeTimeout: on a client with an offline queue (a client passed in, unless
 * it has `disableOfflineQueue`) each lock command carries node-redis' own `timeout`, which takes it
 * out of the queue when it expires; a connection the engine opens has no queue (a command sent
 * while it is down fails at once), and spares that per-command timer on the hot path. A command
 * already written to a node that stopped answering is bounded by the engine's rounds (node-redis'
 * timeout no longer applies to it), as with every client.
 */
export class NodeRedisClient extends AdmittedClient {
  readonly label: string;
  private readonly owned: boolean;
  /**
   * A client passed in unconnected that this engine connected: its connection is the engine's,
   * closed with it (else node-redis would go on reconnecting to a node that is down, after close).
   */
  private connectedHere = false;
  private readonly nodeTimeout: number;
  /** The socketEpoch of the connection admitted last (undefined: not known). */
  private admittedEpoch: number | undefined;
  /** The lock commands' node-redis timeout: nodeTimeout where the client queues while offline. */
  private readonly queueTimeout: number | undefined;
  private subscriber: NodeRedisClientApi | undefined;
  private readonly channels = new Map<string, (message: string) => void>();
  private readonly onReady = () => this.connectionUp();
  private readonly onEnd = () => this.connectionDown('connection closed');
  private readonly onReconnecting = () => this.connectionDown();
  private readonly onError = (err: Error) => this.connectionFailed(err);

  constructor(
    private readonly connection: NodeRedisConnection,
    context: VoterContext,
  ) {
    super(context);
    this.label = connection.label;
    this.owned = connection.owned;
    this.nodeTimeout = context.nodeTimeout ?? 1000;
    const client = connection.client;
    const options = (client as { options?: { disableOfflineQueue?: boolean } }).options;
    this.queueTimeout = options?.disableOfflineQueue && !connection.cluster ? undefined : this.nodeTimeout;
    client.on('error', this.onError); // before connecting: node-redis throws an unheard 'error'
    client.on('ready', this.onReady);
    client.on('end', this.onEnd);
    client.on('reconnecting', this.onReconnecting);
    if (this.owned) this.startConnecting();
  }

  /** The client that runs the scripts (ours, or the one passed in). */
  get client(): NodeRedisClientApi {
    return this.connection.client as NodeRedisClientApi;
  }

  protected get transportUp(): boolean {
    return this.connection.client.isReady;
  }

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    const sent = runNodeRedisScript(this.connection, script, keys, args, this.queueTimeout);
    if (script !== SCRIPTS.acquire || this.admittedEpoch === undefined) return sent.then(decode);
    // node-redis replays its offline queue on a new connection before it says 'ready' (before
    // that connection's server was checked): a grant counts only when it came back on the
    // admitted connection (node-redis counts its connections: socketEpoch).
    const epoch = this.admittedEpoch;
    return sent.then((reply) => {
      if (this.epoch() !== epoch) throw new ServerChangedError();
      return decode(reply);
    });
  }

  protected server(timeoutMs: number): ServerCommands {
    const connection = this.connection;
    const options = (connection.client as { options?: { username?: string } }).options;
    return {
      info: (section) => connection.command(['INFO', section], timeoutMs).then(String),
      configGet: (parameter) => connection.command(['CONFIG', 'GET', parameter], timeoutMs),
      runScript: (script, keys, args) => runNodeRedisScript(connection, script, keys, args, timeoutMs),
      username: options?.username,
    };
  }

  protected startConnecting(): void {
    if (this.connection.client.isOpen) return;
    this.connectedHere = !this.owned;
    this.connection.client.connect().catch(() => undefined);
  }

  protected prepareConnection(): void {
    this.admittedEpoch = this.epoch();
    if (this.connection.cluster) return; // a cluster loads them shard by shard, on first use
    for (const script of SCRIPTS.all) {
      this.connection.command(['SCRIPT', 'LOAD', script.source], 5000).catch(() => undefined);
    }
  }

  /** node-redis' count of the client's connections (5 and 6); undefined where it has none. */
  private epoch(): number | undefined {
    const epoch = (this.connection.client as { socketEpoch?: unknown }).socketEpoch;
    return typeof epoch === 'number' ? epoch : undefined;
  }

  async ping(): Promise<void> {
    await this.connection.command(['PING'], this.nodeTimeout);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channels.set(channel, onMessage);
    if (this.subscriber) {
      await this.subscriber.subscribe(channel, (message) => onMessage(message));
      return;
    }
    this.subscriber = await nodeRedisSubscriber(this.connection, channel, onMessage);
  }

  async close(timeoutMs: number): Promise<void> {
    this.stopAdmissions();
    await Promise.all([
      this.subscriber && closeNodeRedis(this.subscriber, timeoutMs),
      (this.owned || this.connectedHere) && closeNodeRedis(this.connection.client, timeoutMs),
    ]);
    const client = this.connection.client;
    client.off('error', this.onError);
    client.off('ready', this.onReady);
    client.off('end', this.onEnd);
    client.off('reconnecting', this.onReconnecting);
  }
}
