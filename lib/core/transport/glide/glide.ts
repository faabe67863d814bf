import { clientKind } from '../../clients/detect.js';
import { PACKAGE_NAME, tryLoad } from '../../clients/load.js';
import { settleWithin, sleep, TIMED_OUT } from '../../runtime.js';
import { keySlot } from '../../scripts/keys.js';
import type { ServerSend } from '../../voter/server.js';
import type { VoterContext } from '../../voter/voter-api.js';
import { SINGLE, TransportBase } from '../base.js';
import type { ShardSubscription } from '../subscribers.js';
import type { OneOffConnection, Route, Transport } from '../transport.js';
import { addressOf } from '../urls.js';
import { openGlideSubscription, type GlideFactory } from './subscriber.js';

/*
 * Valkey GLIDE 2: a `GlideClient` (one server) or a `GlideClusterClient` (a shard per master), always
 * the application's: GLIDE connects in its async createClient, so the library never opens one, nor
 * closes one. GLIDE is an optional peer: the members called are written out here.
 *
 * GLIDE reconnects inside its core without a word, and sets a new connection up as the old one was
 * (name, database), so nothing of a connection tells which server it reached: the transport does not
 * see reconnections, and the identity guard reads the run_id behind each vote and surveys it. What
 * the transport sees is whether the client answers, by a probe once a second: PING, or on a Cluster
 * CLUSTER SLOTS (GLIDE does not show its slot map), which gives the masters and their slots too.
 * When the client answers again after it did not, every shard's epoch changes (what it reconnected
 * to is checked before it votes); so does that of a master that appears.
 */

/** How often the probe asks, ms. */
const PROBE_MS = 1000;
/** GLIDE's `Decoder.String`: replies as strings, not Buffers. */
const DECODE_STRINGS = 1;

/** Where GLIDE sends a command on a Cluster: a named route, the primary of a key's slot, a node. */
type GlideRoute =
  | 'randomNode'
  | { readonly type: 'primarySlotKey'; readonly key: string }
  | { readonly type: 'routeByAddress'; readonly host: string; readonly port: number };

/** The configuration a GLIDE client was created with (public at run time, only read here). */
interface GlideConfig {
  readonly addresses?: ReadonlyArray<{ readonly host?: string; readonly port?: number }>;
  readonly useTLS?: boolean;
  readonly credentials?: { readonly username?: string };
  readonly requestTimeout?: number;
  readonly advancedConfiguration?: object;
}

/** The members of a GLIDE client the transport calls. */
interface GlideApi {
  customCommand(args: string[], options?: { route?: GlideRoute; decoder?: number }): Promise<unknown>;
  readonly config?: GlideConfig;
  readonly isClosed?: boolean;
}

/** A Valkey GLIDE `GlideClient` or `GlideClusterClient` passed in, as a transport. */
export function glideTransport(node: object, context: VoterContext): Transport {
  return new GlideTransport(node as GlideApi, clientKind(node) === 'glide-cluster', context);
}

/** A GLIDE client as a transport (see the top of this file). */
class GlideTransport extends TransportBase implements Transport {
  readonly seesReconnects = false;
  /** Whether the last probe was answered (set before the events it causes are told). */
  private alive = false;
  private closed = false;
  private masters: ReadonlyMap<string, readonly number[]> = SINGLE;
  /** The master of each slot, from the latest CLUSTER SLOTS. */
  private owners: ReadonlyArray<string | undefined> = [];
  /** Commands sent on the application's client and not answered yet (close waits for them). */
  private readonly inFlight = new Set<Promise<unknown>>();
  private probing: Promise<void> | undefined;
  private cancelProbe: (() => void) | undefined;

  constructor(
    private readonly client: GlideApi,
    clustered: boolean,
    private readonly context: VoterContext,
  ) {
    const list = (client.config?.addresses ?? []).map(addressOf).join(',') || 'glide';
    const scheme = clustered ? 'cluster' : client.config?.useTLS ? 'rediss' : 'redis';
    super(`${scheme}://${list}`, clustered, context.runtime);
    this.scheduleProbe(0);
  }

  get up(): boolean {
    return this.alive && !this.closed && this.client.isClosed !== true;
  }

  get username(): string | undefined {
    return this.client.config?.credentials?.username;
  }

  shards(): ReadonlyMap<string, readonly number[]> {
    return this.masters;
  }

  shardOf(key: string): string | undefined {
    return this.clustered ? this.owners[keySlot(key)] : '';
  }

  send(route: Route, command: readonly string[]): Promise<unknown> {
    const sent = glideCall(this.client, command, this.clustered ? glideRoute(route) : undefined);
    this.inFlight.add(sent);
    const settled = () => void this.inFlight.delete(sent);
    sent.then(settled, settled);
    return sent;
  }

  async connect(timeoutMs: number): Promise<boolean> {
    const { runtime } = this.context;
    const until = runtime.now() + timeoutMs;
    while (!this.up && !this.closed && runtime.now() < until) {
      await settleWithin(runtime, this.probe(), until - runtime.now());
      if (!this.up) await sleep(runtime, Math.min(100, Math.max(0, until - runtime.now())));
    }
    return this.up;
  }

  /** Stops the probe, closes the subscribers and waits for our commands in flight (the client stays open). */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.cancelProbe?.();
    const pending = [this.subscribers.close(timeoutMs), this.probing, ...this.inFlight];
    await settleWithin(this.context.runtime, Promise.allSettled(pending), timeoutMs);
  }

  private scheduleProbe(ms: number): void {
    this.cancelProbe = this.context.runtime.setTimeout(() => {
      void this.probe().finally(() => {
        if (!this.closed) this.scheduleProbe(PROBE_MS);
      });
    }, ms);
  }

  /** Asks the client whether it answers (one probe in flight at a time). */
  private probe(): Promise<void> {
    this.probing ??= this.ask().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async ask(): Promise<void> {
    const command = this.clustered ? ['CLUSTER', 'SLOTS'] : ['PING'];
    const timeoutMs = Math.max(this.context.connectTimeout, 1000);
    try {
      const reply = await settleWithin(this.context.runtime, this.send(undefined, command), timeoutMs);
      if (reply === TIMED_OUT) throw new Error(`no reply to ${command.join(' ')} within ${timeoutMs} ms`);
      if (this.closed) return;
      const known = this.masters;
      if (this.clustered) this.readSlots(reply);
      this.alive = true;
      this.lastError = undefined;
      // What it reconnected to, or a master that appears, is checked before it votes.
      for (const shard of this.masters.keys()) if (!this.wasUp || !known.has(shard)) this.bump(shard, true);
      this.markUp();
    } catch (err) {
      if (this.closed) return;
      this.alive = false;
      this.failed(err);
      this.markDown();
    }
  }

  /** The masters and their slots from a CLUSTER SLOTS reply (`[[start, end, [host, port, ...], ...], ...]`). */
  private readSlots(reply: unknown): void {
    if (!Array.isArray(reply)) throw new Error(`CLUSTER SLOTS answered ${String(reply)}`);
    const masters = new Map<string, number[]>();
    const owners = new Array<string | undefined>(16384);
    for (const range of reply as unknown[]) {
      if (!Array.isArray(range) || !Array.isArray(range[2])) continue;
      const [start, end, [host, port]] = range as [number, number, unknown[]];
      const address = `${String(host)}:${String(port)}`;
      const slots = masters.get(address) ?? [];
      for (let slot = Number(start); slot <= Number(end); slot++) {
        slots.push(slot);
        owners[slot] = address;
      }
      masters.set(address, slots);
    }
    if (masters.size === 0) throw new Error('CLUSTER SLOTS: no master serves a slot yet');
    this.masters = masters;
    this.owners = owners;
  }

  /**
   * A subscriber of `shard`: on one server, a client like the application's; on a Cluster, a
   * `GlideClient` on the master (GLIDE's cluster subscriber sits on one node, but a script's PUBLISH
   * reaches only the subscribers its own node counts), with the cluster client's credentials and TLS.
   */
  protected async openSubscriber(
    shard: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription> {
    const { runtime } = this.context;
    if (!this.clustered) {
      const factory = (this.client as { constructor?: Partial<GlideFactory> }).constructor;
      if (typeof factory?.createClient !== 'function')
        throw new Error('this GLIDE client shows no factory: no subscriber for wake-ups');
      return openGlideSubscription(
        runtime,
        factory as GlideFactory,
        this.client.config ?? {},
        channels,
        deliver,
        async () => this.up,
      );
    }
    const glide = tryLoad(PACKAGE_NAME.glide) as { GlideClient?: Partial<GlideFactory> } | undefined;
    if (typeof glide?.GlideClient?.createClient !== 'function')
      throw new Error(`${PACKAGE_NAME.glide} cannot be loaded here: no subscriber for wake-ups`);
    const route = glideRoute({ shard }) as { host: string; port: number };
    const { credentials, useTLS, requestTimeout, advancedConfiguration } = this.client.config ?? {};
    const config = {
      addresses: [{ host: route.host, port: route.port }],
      credentials,
      useTLS,
      requestTimeout,
      advancedConfiguration,
    };
    const answers = () =>
      this.send({ shard }, ['PING']).then(
        () => true,
        () => false,
      );
    return openGlideSubscription(
      runtime,
      glide.GlideClient as GlideFactory,
      config,
      channels,
      deliver,
      answers,
    );
  }
}

/** Sends a raw command, its reply decoded to strings (not Buffers); without a route, GLIDE picks one. */
function glideCall(client: GlideApi, command: readonly string[], route?: GlideRoute): Promise<unknown> {
  return client.customCommand(
    [...command],
    route ? { route, decoder: DECODE_STRINGS } : { decoder: DECODE_STRINGS },
  );
}

/**
 * Raw commands on a client or cluster client (which routes a script by its first key), a script's
 * table of pairs as the flat array other clients give (GLIDE gives it as `[{ key, value }]`).
 */
export function glideSend(client: object): ServerSend {
  return (command) => glideCall(client as GlideApi, command).then(pairsAsArray);
}

function pairsAsArray(reply: unknown): unknown {
  const first = Array.isArray(reply) ? (reply[0] as { key?: unknown; value?: unknown } | null) : undefined;
  if (!first || typeof first !== 'object' || Array.isArray(first) || !('key' in first && 'value' in first))
    return reply;
  return (reply as Array<{ key: unknown; value: unknown }>).flatMap(({ key, value }) => [key, value]);
}

/** A one-off client for `url` (see OneOffConnection); GLIDE takes no URL: its parts become the configuration. */
export function openGlideOnce(factory: GlideFactory, url: string, timeoutMs: number): OneOffConnection {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  const username = decodeURIComponent(parsed.username);
  const db = Number(parsed.pathname.slice(1) || '0');
  let client: { close(): void } | undefined;
  return {
    connect: async () => {
      client = await factory.createClient({
        addresses: [{ host: parsed.hostname, port: Number(parsed.port || 6379) }],
        useTLS: parsed.protocol === 'rediss:',
        requestTimeout: timeoutMs,
        ...(password ? { credentials: { password, ...(username ? { username } : {}) } } : {}),
        ...(db > 0 ? { databaseId: db } : {}),
      });
    },
    send: (command) => glideSend(client!)(command),
    close: () => Promise.resolve(client?.close()),
    abort: () => client?.close(),
  };
}

/** GLIDE's route for a command: the primary of a key's slot, a master by address, or any node. */
function glideRoute(route: Route): GlideRoute {
  if (route === undefined) return 'randomNode';
  if ('key' in route) return { type: 'primarySlotKey', key: route.key };
  const colon = route.shard.lastIndexOf(':');
  return {
    type: 'routeByAddress',
    host: route.shard.slice(0, colon),
    port: Number(route.shard.slice(colon + 1)),
  };
}
