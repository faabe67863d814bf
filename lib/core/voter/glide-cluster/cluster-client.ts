import { tryLoad, PACKAGE_NAME } from '../../clients/load.js';
import { CLUSTER_SCRIPTS, type LuaScript } from '../../scripts/index.js';
import { RUN_ID } from '../../scripts/identity.js';
import { settleWithin, TIMED_OUT } from '../../timeouts.js';
import type { ShardServer } from '../cluster-preflight.js';
import { GuardedClusterClient } from '../guarded-cluster-client.js';
import type { ServerCommands } from '../server-commands.js';
import { closeGlideSubscriber, createGlideSubscriber, type GlideFactory } from '../glide/glide-subscriber.js';
import { seedMarkersByShard } from '../ioredis-cluster/slot-markers.js';
import { ShardSubscribers, type ShardSubscription } from '../shard-subscribers.js';
import type { VoterContext } from '../voter.js';
import { parseClusterSlots } from './cluster-slots.js';

/*
 * Valkey GLIDE 2 (`GlideClusterClient`) as a cluster voter drives it. GLIDE is an optional peer:
 * the members called are written out here, and the package is loaded only for the subscribers.
 *
 * - Scripts: EVALSHA through `customCommand`, routed to the primary of the first key's slot
 *   (`primarySlotKey`), once SCRIPT LOAD has put the script on every primary (EVAL there on
 *   NOSCRIPT: a master that restarted unseen, and the scripts are loaded again). GLIDE logs every
 *   error reply at WARN through the application's logger: the voter avoids them. The scripts a
 *   master's check runs (identity check, RUN_ID) go by EVAL: they are rare or short, and the first
 *   calls on a master that restarted, whose script cache is empty.
 * - Bounds: GLIDE times every request out after its `requestTimeout` (250 ms by default) and has
 *   no offline queue; each call is bounded by nodeTimeout here besides.
 * - Health: GLIDE reconnects inside its core and says nothing; CLUSTER SLOTS, read once a second
 *   from any node, says whether the cluster answers, and gives the masters (for the subscribers)
 *   and the slots of each (for seeding the restart-guard markers).
 * - Wake-ups: GLIDE applies subscriptions when a client is created, and its cluster subscriber
 *   sits on one node (../shard-subscribers.ts says why that does not do): one GLIDE `GlideClient`
 *   per master, created from the cluster client's configuration (credentials, TLS, protocol).
 */

/** A GLIDE reply decoder option, passed as GLIDE takes it (`Decoder.String` is 1). */
const DECODER_STRING = 1;

/** Where GLIDE sends a command: a named route, or the primary of a key's slot. */
type Route =
  | 'randomNode'
  | 'allPrimaries'
  | { readonly type: 'primarySlotKey'; readonly key: string }
  | { readonly type: 'routeByAddress'; readonly host: string; readonly port: number };

/** The members of a GLIDE cluster client the voter calls (and reads: `config` is public at run time). */
export interface GlideClusterApi {
  customCommand(args: readonly string[], options?: { route?: Route; decoder?: number }): Promise<unknown>;
  close(errorMessage?: string): void;
  readonly config?: Record<string, unknown> & {
    readonly addresses?: ReadonlyArray<{ readonly host?: string; readonly port?: number }>;
    readonly useTLS?: boolean;
  };
  readonly isClosed?: boolean;
}

/** GLIDE's route to the node at `address` (`host:port`). */
function byAddress(address: string): Route {
  const colon = address.lastIndexOf(':');
  return { type: 'routeByAddress', host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}

/** How often CLUSTER SLOTS is read (health, masters, slots), ms. */
const PROBE_MS = 1000;

/**
 * A Redis / Valkey Cluster reached with a Valkey GLIDE `GlideClusterClient` passed in, as the
 * {@link ScriptClient} of a GlideClusterVoter (see the top of this file).
 */
export class GlideClusterScriptClient extends GuardedClusterClient {
  readonly label: string;
  readonly client: GlideClusterApi;
  private readonly nodeTimeout: number;
  private alive = false;
  private closed = false;
  private probe: NodeJS.Timeout | undefined;
  /** The masters' slots (`host:port` -> slots), from the latest CLUSTER SLOTS. */
  private shards = new Map<string, number[]>();
  private subscribers: ShardSubscribers | undefined;
  private readonly channelListeners = new Map<string, (message: string) => void>();
  /** SHAs of the scripts every primary answered SCRIPT LOAD for. */
  private readonly loaded = new Set<string>();
  /** SCRIPT LOADs in flight, by SHA: a script's first calls wait for the one load. */
  private readonly loading = new Map<string, Promise<void>>();
  /** Commands sent on the application's client and not answered yet (close waits for them). */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(client: object, context: VoterContext) {
    super(context);
    this.client = client as GlideClusterApi;
    this.nodeTimeout = context.nodeTimeout ?? 1000;
    const addresses = this.client.config?.addresses ?? [];
    this.label = `cluster://${addresses.map((a) => `${a.host ?? 'localhost'}:${a.port ?? 6379}`).join(',') || 'glide'}`;
    void this.check();
    this.probe = setInterval(() => void this.check(), PROBE_MS);
    this.probe.unref();
  }

  protected get transportUp(): boolean {
    return this.alive && !this.closed && !this.client.isClosed;
  }

  protected runRouted(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    routeKey: string | undefined,
  ): Promise<unknown> {
    return this.runScript(script, keys, args, routeKey, this.nodeTimeout);
  }

  /** The masters and their slots, from CLUSTER SLOTS read now (a failover moves slots at once). */
  async masters(): Promise<ReadonlyMap<string, readonly number[]>> {
    const reply = await this.command(['CLUSTER', 'SLOTS'], 'randomNode', Math.max(this.nodeTimeout, 1000));
    this.shards = parseClusterSlots(reply);
    return this.shards;
  }

  /** INFO, CONFIG GET and scripts on the master at `address` (GLIDE's routeByAddress). */
  serverOf(address: string, timeoutMs: number): ServerCommands {
    const route = byAddress(address);
    const credentials = this.client.config?.credentials as { username?: string } | undefined;
    return {
      info: (section: string) => this.command(['INFO', section], route, timeoutMs).then(String),
      configGet: (parameter: string) => this.command(['CONFIG', 'GET', parameter], route, timeoutMs),
      runScript: (script, keys, args) => {
        const rest = [String(keys.length), ...keys, ...args.map(String)];
        return this.command(['EVAL', script.source, ...rest], route, timeoutMs);
      },
      username: credentials?.username,
    };
  }

  protected waitTransport(timeoutMs: number): Promise<boolean> {
    if (this.transportUp) return Promise.resolve(true);
    return settleWithin(this.check(), timeoutMs).then(() => this.transportUp);
  }

  protected shardServers(): ShardServer[] {
    const timeout = Math.max(this.nodeTimeout, 1000);
    return [...this.shards.keys()].map((address) => ({ address, server: this.serverOf(address, timeout) }));
  }

  async ping(): Promise<void> {
    await this.command(['PING'], 'randomNode', this.nodeTimeout);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channelListeners.set(channel, onMessage);
    if (!this.subscribers) {
      this.subscribers = new ShardSubscribers(
        async () => {
          if (this.shards.size === 0) await this.check();
          return [...this.shards.keys()];
        },
        (address, channels, deliver) => this.openSubscriber(address, channels, deliver),
      );
      this.subscribers.onMessage((from, message) => this.channelListeners.get(from)?.(message));
    }
    await this.subscribers.subscribe(channel);
  }

  /**
   * Stops following the cluster, closes the subscribers and waits for the commands still in
   * flight on the application's client (the slot markers' seeding stops after its chunk in
   * flight), at most `timeoutMs`: an application that closes its client right after would close
   * it under them, and GLIDE logs `client closing - Connection reset by peer` then.
   */
  async close(timeoutMs: number): Promise<void> {
    await Promise.all([this.stopGuard(timeoutMs), this.stopSeeding(timeoutMs)]);
    this.closed = true;
    if (this.probe) clearInterval(this.probe);
    const subscribers = this.subscribers?.close() ?? Promise.resolve();
    await settleWithin(Promise.allSettled([subscribers, ...this.inFlight]), timeoutMs);
  }

  protected loadScripts(): void {
    // The cluster (again) ready: perhaps with restarted masters, their caches empty.
    this.loaded.clear();
    for (const script of CLUSTER_SCRIPTS.all) this.load(script, 5000).catch(() => undefined);
  }

  /** SCRIPT LOAD of `script` on every primary (one in flight per script). */
  private load(script: LuaScript, timeoutMs: number): Promise<void> {
    let pending = this.loading.get(script.sha);
    if (!pending) {
      pending = this.command(['SCRIPT', 'LOAD', script.source], 'allPrimaries', timeoutMs)
        .then(() => void this.loaded.add(script.sha))
        .finally(() => this.loading.delete(script.sha));
      this.loading.set(script.sha, pending);
    }
    return pending;
  }

  protected seedMarkers(): Promise<void> {
    // Keyless, sent to the primary of the chunk's first marker (all of a chunk are that shard's).
    return seedMarkersByShard(
      this.shards,
      this.guardKey,
      this.guardMs,
      (_shard, script, markers, args) => this.runScript(script, [], args, markers[0], 5000).then(() => true),
      () => this.closing,
    ).catch(() => undefined);
  }

  protected slotsByShard(): ReadonlyMap<string, readonly number[]> {
    return this.shards;
  }

  protected runOnShard(script: LuaScript, routeKey: string, args: readonly string[], timeoutMs: number) {
    return this.runScript(script, [], args, routeKey, timeoutMs);
  }

  /**
   * Runs a script on the primary of `routeKey`'s slot, bounded by `timeoutMs`: by SHA once loaded
   * on every primary (EVAL on NOSCRIPT, and the scripts are loaded again); RUN_ID by its source.
   */
  private runScript(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    routeKey: string | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...args.map(String)];
    const route: Route = routeKey === undefined ? 'randomNode' : { type: 'primarySlotKey', key: routeKey };
    if (script === RUN_ID) {
      // Behind the acquire it follows (guarded-cluster-client.ts), even when that one waits for
      // its first load.
      const send = () => this.command(['EVAL', script.source, ...rest], route, timeoutMs);
      return this.loading.size === 0 ? send() : Promise.allSettled([...this.loading.values()]).then(send);
    }
    const bySha = () =>
      this.command(['EVALSHA', script.sha, ...rest], route, timeoutMs).catch((err: unknown) => {
        if (err instanceof Error && /NOSCRIPT|NoScriptError/.test(err.message)) {
          this.loaded.clear();
          return this.command(['EVAL', script.source, ...rest], route, timeoutMs);
        }
        throw err;
      });
    // Sent at once when loaded: an acquire and the RUN_ID behind it stay in order.
    if (this.loaded.has(script.sha)) return bySha();
    return this.load(script, timeoutMs).then(bySha, bySha);
  }

  /** Any command, with string replies, bounded by `timeoutMs`. */
  private command(args: readonly string[], route: Route, timeoutMs: number): Promise<unknown> {
    const sent = this.client.customCommand(args, { route, decoder: DECODER_STRING });
    this.inFlight.add(sent);
    const settled = () => void this.inFlight.delete(sent);
    sent.then(settled, settled);
    return settleWithin(sent, timeoutMs).then((reply) => {
      if (reply === TIMED_OUT) throw new Error(`no reply to ${args[0]} within ${timeoutMs} ms`);
      return reply;
    });
  }

  /** One probe: CLUSTER SLOTS from any node (up, or down with why), and the masters' slots. */
  private async check(): Promise<void> {
    try {
      const reply = await this.command(['CLUSTER', 'SLOTS'], 'randomNode', Math.max(this.nodeTimeout, 1000));
      if (this.closed) return;
      this.shards = parseClusterSlots(reply);
      const wasAlive = this.alive;
      this.alive = true;
      if (!wasAlive) this.recordReady();
      else void this.surveyMasters(); // a master restarted or replaced: GLIDE says nothing
    } catch (err) {
      if (this.closed) return;
      this.alive = false;
      this.recordError(err instanceof Error ? err.message : String(err));
      this.recordDown();
    }
  }

  /**
   * A subscriber on one master: a GLIDE `GlideClient` of its own, created from the cluster
   * client's configuration with the channels (GLIDE subscribes at creation, so more channels
   * mean a new client).
   */
  private async openSubscriber(
    address: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const glide = tryLoad(PACKAGE_NAME.glide) as { GlideClient?: GlideFactory } | undefined;
    if (typeof glide?.GlideClient?.createClient !== 'function') {
      throw new Error(`${PACKAGE_NAME.glide} cannot be loaded here: no subscriber for wake-ups`);
    }
    const factory = glide.GlideClient;
    const colon = address.lastIndexOf(':');
    const { credentials, useTLS, requestTimeout, protocol, advancedConfiguration } = this.client.config ?? {};
    const all = new Set(channels);
    let closed = false;
    const config = {
      addresses: [{ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) }],
      credentials,
      useTLS,
      requestTimeout,
      protocol,
      advancedConfiguration,
    };
    const create = () => createGlideSubscriber(factory, config, all, deliver);
    let current = await create();
    // GLIDE says nothing when a connection drops: the master is asked (PING through the cluster
    // client, by address) once a round, and a subscriber whose master does not answer stops
    // delivering (another one takes over).
    let answers = true;
    const route: Route = { type: 'routeByAddress', ...config.addresses[0]! };
    const timeoutMs = Math.max(this.nodeTimeout, 1000);
    return {
      get healthy() {
        return !closed && answers;
      },
      probe: () =>
        this.command(['PING'], route, timeoutMs).then(
          () => void (answers = true),
          () => void (answers = false),
        ),
      subscribe: async (more) => {
        for (const channel of more) all.add(channel);
        const previous = current;
        current = await create();
        void closeGlideSubscriber(previous, timeoutMs);
      },
      close: async () => {
        closed = true;
        await closeGlideSubscriber(current, timeoutMs);
      },
    };
  }
}
