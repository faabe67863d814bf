import { CLUSTER_SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { settleWithin, TIMED_OUT } from '../../timeouts.js';
import type { ShardServer } from '../cluster-preflight.js';
import { GuardedClusterClient } from '../guarded-cluster-client.js';
import type { ServerCommands } from '../server-commands.js';
import { describeError } from '../describe-error.js';
import { seedMarkersByShard } from '../ioredis-cluster/slot-markers.js';
import {
  closeNodeRedis,
  runNodeRedisScript,
  type NodeRedisClientApi,
  type NodeRedisClusterApi,
  type NodeRedisConnection,
} from '../node-redis/connection.js';
import { ShardSubscribers, type ShardSubscription } from '../shard-subscribers.js';
import type { VoterContext } from '../voter.js';

/** How often the masters' run_ids are read (the identity guard), ms. */
const SURVEY_MS = 1000;

/** A master of a node-redis cluster, as `cluster.masters` and `cluster.slots[n].master` give it. */
interface MasterNode {
  readonly address: string;
  readonly host?: string;
  readonly port?: number;
}

/** The members of a node-redis cluster (5 and 6) read here, beside those of connection.ts. */
interface ClusterTopology {
  readonly masters?: readonly MasterNode[];
  readonly slots?: ReadonlyArray<{ readonly master?: MasterNode } | undefined>;
  nodeClient(node: MasterNode): Promise<NodeRedisClientApi>;
}

/**
 * A Redis Cluster reached with a node-redis cluster client (`createCluster`, `redis` 5 or 6), as the
 * {@link ScriptClient} of a NodeRedisClusterVoter: EVALSHA routed by the first key (EVAL on
 * NOSCRIPT, to the same slot), the slots' markers, let-gos behind their acquire and health from
 * ClusterScriptClient, and a wake subscription on every master (../shard-subscribers.ts).
 *
 * No command waits past nodeTimeout: a node-redis cluster keeps an offline queue on each of its
 * node connections, so every command carries node-redis' own per-command `timeout` (nodeTimeout),
 * which takes it out of the queue when it expires (node-redis 6's default commandTimeout is 5 s).
 * A command already written to a shard that stopped answering is bounded by the engine's rounds.
 */
export class NodeRedisClusterClient extends GuardedClusterClient {
  readonly label: string;
  readonly cluster: NodeRedisClusterApi;
  private readonly nodeTimeout: number;
  private ready: boolean;
  private readonly survey: NodeJS.Timeout;
  private subscribers: ShardSubscribers | undefined;
  private readonly channelListeners = new Map<string, (message: string) => void>();
  private readonly onConnect = () => {
    this.ready = true;
    this.recordReady();
  };
  private readonly onDisconnect = () => {
    this.ready = false;
    this.recordDown();
  };
  private readonly onError = (err: Error) => this.recordError(describeError(err));
  private readonly onNodeError = (err: Error, node?: { host?: string; port?: number }) =>
    this.recordError(`shard ${node?.host ?? '?'}:${node?.port ?? '?'}: ${describeError(err)}`);

  constructor(
    private readonly connection: NodeRedisConnection,
    context: VoterContext,
  ) {
    super(context);
    this.label = connection.label;
    this.cluster = connection.client as NodeRedisClusterApi;
    this.nodeTimeout = context.nodeTimeout ?? 1000;
    this.cluster.on('error', this.onError); // before connecting: node-redis throws an unheard 'error'
    this.cluster.on('node-error', this.onNodeError);
    this.cluster.on('connect', this.onConnect);
    this.cluster.on('disconnect', this.onDisconnect);
    // A cluster passed in already connected has its slot map.
    this.ready = this.cluster.isOpen && (this.topology.masters?.length ?? 0) > 0;
    // node-redis does not say which server a reconnection reached: the masters' run_ids are read
    // once a second (guarded-cluster-client.ts).
    this.survey = setInterval(() => {
      if (this.transportUp) void this.surveyMasters();
    }, SURVEY_MS);
    this.survey.unref();
  }

  override attach(voter: object): void {
    super.attach(voter);
    if (this.ready) this.recordReady(); // a cluster passed in already connected
  }

  protected get transportUp(): boolean {
    return this.ready && this.cluster.isOpen;
  }

  protected runRouted(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    routeKey: string | undefined,
  ): Promise<unknown> {
    return runNodeRedisScript(this.connection, script, keys, args, this.nodeTimeout, routeKey);
  }

  /** The masters and the slots each serves, from the cluster's slot map. */
  masters(): Promise<ReadonlyMap<string, readonly number[]>> {
    return Promise.resolve(this.slotsByShard());
  }

  /** INFO, CONFIG GET and scripts on the master at `address`, through the cluster's client of it. */
  serverOf(address: string, timeoutMs: number): ServerCommands {
    const node = async (): Promise<NodeRedisClientApi> => {
      const master = (this.topology.masters ?? []).find((m) => m.address === address);
      if (!master) throw new Error(`${address} is no longer a master of the cluster`);
      return this.topology.nodeClient(master);
    };
    const command = (args: string[]) =>
      node().then((client) => client.sendCommand(args, { timeout: timeoutMs }));
    const username = (this.cluster as { _options?: { defaults?: { username?: string } } })._options?.defaults
      ?.username;
    return {
      info: (section) => command(['INFO', section]).then(String),
      configGet: (parameter) => command(['CONFIG', 'GET', parameter]),
      runScript: (script, keys, args) => {
        const rest = [String(keys.length), ...keys, ...args.map(String)];
        return command(['EVALSHA', script.sha, ...rest]).catch((err: unknown) => {
          if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
            return command(['EVAL', script.source, ...rest]);
          }
          throw err;
        });
      },
      username,
    };
  }

  protected waitTransport(timeoutMs: number): Promise<boolean> {
    if (this.transportUp) return Promise.resolve(true);
    if (!this.cluster.isOpen) this.cluster.connect().catch(() => undefined);
    let onConnect: (() => void) | undefined;
    const ready = new Promise<void>((resolve) => this.cluster.on('connect', (onConnect = resolve)));
    return settleWithin(ready, timeoutMs).then(() => {
      this.cluster.off('connect', onConnect!);
      return this.transportUp;
    });
  }

  protected async shardServers(): Promise<ShardServer[]> {
    const timeout = Math.max(this.nodeTimeout, 1000);
    const masters = await this.masters();
    return [...masters.keys()].map((address) => ({ address, server: this.serverOf(address, timeout) }));
  }

  async ping(): Promise<void> {
    await this.connection.command(['PING'], this.nodeTimeout);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channelListeners.set(channel, onMessage);
    if (!this.subscribers) {
      this.subscribers = new ShardSubscribers(
        () => (this.topology.masters ?? []).map((m) => m.address),
        (address, channels, deliver) => this.openSubscriber(address, channels, deliver),
      );
      this.subscribers.onMessage((from, message) => this.channelListeners.get(from)?.(message));
    }
    await this.subscribers.subscribe(channel);
  }

  /** Closes the subscribers and detaches from the cluster (the application's: never closed here). */
  async close(timeoutMs: number): Promise<void> {
    await Promise.all([this.stopGuard(timeoutMs), this.stopSeeding(timeoutMs)]);
    clearInterval(this.survey);
    await settleWithin(this.subscribers?.close() ?? Promise.resolve(), timeoutMs);
    if (this.connection.owned) await closeNodeRedis(this.cluster, timeoutMs);
    this.cluster.off('error', this.onError);
    this.cluster.off('node-error', this.onNodeError);
    this.cluster.off('connect', this.onConnect);
    this.cluster.off('disconnect', this.onDisconnect);
  }

  protected loadScripts(): void {
    for (const master of this.topology.masters ?? []) {
      void this.topology
        .nodeClient(master)
        .then((client) =>
          Promise.all(
            CLUSTER_SCRIPTS.all.map((script) =>
              client.sendCommand(['SCRIPT', 'LOAD', script.source], { timeout: 5000 }),
            ),
          ),
        )
        .catch(() => undefined);
    }
  }

  protected async seedMarkers(): Promise<void> {
    // Keyless, sent to the shard of the chunk's first marker (all of a chunk are that shard's).
    await seedMarkersByShard(
      this.slotsByShard(),
      this.guardKey,
      this.guardMs,
      (_shard, script, markers, args) =>
        runNodeRedisScript(this.connection, script, [], args, 5000, markers[0]).then(() => true),
      () => this.closing,
    ).catch(() => undefined);
  }

  protected slotsByShard(): ReadonlyMap<string, readonly number[]> {
    const bySlotOwner = new Map<string, number[]>();
    (this.topology.slots ?? []).forEach((shard, slot) => {
      const address = shard?.master?.address;
      if (address === undefined) return;
      const slots = bySlotOwner.get(address);
      if (slots) slots.push(slot);
      else bySlotOwner.set(address, [slot]);
    });
    return bySlotOwner;
  }

  protected runOnShard(script: LuaScript, routeKey: string, args: readonly string[], timeoutMs: number) {
    return runNodeRedisScript(this.connection, script, [], args, timeoutMs, routeKey);
  }

  private get topology(): ClusterTopology {
    return this.cluster as unknown as ClusterTopology;
  }

  /**
   * A subscriber on one master: a duplicate() of the cluster's connection to it (same socket
   * options and credentials), with its offline queue on so that SUBSCRIBE waits for the
   * connection; node-redis re-subscribes it after a reconnect.
   */
  private async openSubscriber(
    address: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const master = (this.topology.masters ?? []).find((m) => m.address === address);
    if (!master) throw new Error(`${address} is no longer a master`);
    const client = (await this.topology.nodeClient(master)).duplicate({ disableOfflineQueue: false });
    client.on('error', () => undefined); // the cluster reports health
    await settleWithin(client.connect(), Math.max(this.nodeTimeout, 1000) * 2);
    const listen = (message: string, channel: string) => deliver(channel, message);
    const subscribeAll = (list: readonly string[]) =>
      Promise.all(list.map((channel) => client.subscribe(channel, listen))).then(() => undefined);
    try {
      if (!client.isReady) throw new Error(`no connection to ${address}`);
      await subscribeAll(channels);
    } catch (err) {
      await closeNodeRedis(client, 500);
      throw err;
    }
    // A paused master keeps its socket open (isReady stays true): it is asked once a round, through
    // the cluster's own connection to it, and stops delivering when it does not answer.
    let answers = true;
    const timeout = Math.max(this.nodeTimeout, 1000);
    return {
      get healthy() {
        return client.isReady && answers;
      },
      // (node-redis' timeout ends a command's wait in the queue only, not for a reply: settleWithin)
      probe: () =>
        settleWithin(
          this.topology.nodeClient(master).then((node) => node.sendCommand(['PING'], { timeout })),
          timeout,
        ).then(
          (reply) => void (answers = reply !== TIMED_OUT),
          () => void (answers = false),
        ),
      subscribe: subscribeAll,
      close: () => closeNodeRedis(client, 1000),
    };
  }
}
