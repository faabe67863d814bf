import { clientKind } from '../../clients/detect.js';
import { nodeRedisModule } from '../../clients/load.js';
import { RedlockOptionsError } from '../../errors.js';
import { settleWithin, TIMED_OUT, type Runtime } from '../../runtime.js';
import { faultRetryMs, isFinalFault, nodeFault } from '../../voter/describe-error.js';
import type { ServerSend } from '../../voter/server.js';
import type { VoterContext } from '../../voter/voter-api.js';
import type { Emitter } from '../base.js';
import type { OneOffConnection, Transport } from '../transport.js';
import { addressOf, redactUrl } from '../urls.js';
import { NodeRedisTransport } from './transport.js';

/*
 * node-redis (`redis` 5 and 6, RESP2 and RESP3): a client from createClient (one shard) or a cluster
 * from createCluster (a shard per master), passed in, or a client the library opens for a URL or
 * createClient options (`client: 'node-redis'`). node-redis is an optional peer: only the members
 * below are used, and the package is loaded only to open a connection.
 */

/** `abortSignal` takes a command out of the client's queue when it aborts (not once it was written). */
type Options = { abortSignal?: AbortSignal };

/** What clients and clusters have in common. */
interface Connectable extends Emitter {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): unknown;
}

/** The members of a node-redis client (createClient, or a cluster's client of one node) used here. */
export interface NodeRedisClientApi extends Connectable {
  readonly isReady: boolean;
  readonly options?: {
    url?: string;
    username?: string;
    disableOfflineQueue?: boolean;
    socket?: { host?: string; port?: number; tls?: boolean };
  };
  sendCommand(args: readonly string[], options?: Options): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisClientApi;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unref(): void;
}

/** A master of a node-redis cluster, as `masters` and `slots[n].master` give it. */
export type MasterNode = { readonly address: string; readonly client?: NodeRedisClientApi };

/** The members of a node-redis cluster (createCluster) used here. */
export interface NodeRedisClusterApi extends Connectable {
  readonly _options?: { rootNodes?: readonly object[]; defaults?: { username?: string } };
  readonly masters: readonly MasterNode[];
  readonly slots: ReadonlyArray<{ readonly master?: MasterNode } | undefined>;
  sendCommand(
    key: string | undefined,
    readOnly: boolean,
    args: readonly string[],
    o?: Options,
  ): Promise<unknown>;
}

/** What a node-redis transport is built from. */
export type NodeRedisSpec = { readonly label: string; readonly owned: boolean } & (
  | { readonly clustered: false; readonly client: NodeRedisClientApi }
  | { readonly clustered: true; readonly client: NodeRedisClusterApi }
);

/** A node-redis client, cluster, URL or options as a transport. */
export function nodeRedisTransport(node: string | object, context: VoterContext): Transport {
  const kind = typeof node === 'object' ? clientKind(node) : undefined;
  const client = node as NodeRedisClientApi & NodeRedisClusterApi;
  if (kind === 'node-redis-cluster') {
    const roots = (client._options?.rootNodes ?? []).map((root) =>
      labelOf(root).replace(/^rediss?:\/\/([^@]*@)?/, ''),
    );
    return new NodeRedisTransport(
      { clustered: true, client, label: `cluster://${roots.join(',')}`, owned: false },
      context,
    );
  }
  const spec: NodeRedisSpec =
    kind === 'node-redis'
      ? { clustered: false, client, label: labelOf(client.options), owned: false }
      : openClient(node, context.connectTimeout);
  return new NodeRedisTransport(spec, context);
}

/**
 * A client the library opens, failing fast: no offline queue (a command sent while disconnected
 * fails at once, and one in flight when the connection drops fails instead of running later);
 * refused credentials are asked again with a back-off.
 */
function openClient(node: string | object, connectTimeout: number): NodeRedisSpec {
  const { createClient } = nodeRedisModule<{ createClient(options: object): NodeRedisClientApi }>();
  const given = (typeof node === 'string' ? { url: node } : node) as { socket?: object };
  const misplaced = ['host', 'port', 'sentinels'].filter((key) => key in given);
  if (misplaced.length > 0) {
    throw new RedlockOptionsError(
      'nodes',
      `node-redis options with ${misplaced.join(', ')} (ioredis options): node-redis would ignore them`,
      "Give createClient options ({ url } or { socket: { host, port } }), or choose client: 'ioredis' (a Sentinel-managed primary needs ioredis).",
    );
  }
  let faults = 0;
  const reconnectStrategy = (retries: number, cause: unknown) => {
    faults = isFinalFault(nodeFault(cause)) ? faults + 1 : 0;
    return faults > 0 ? faultRetryMs(faults) : Math.min((retries + 1) * 100, 2000);
  };
  const options = {
    ...given,
    disableOfflineQueue: true,
    socket: { connectTimeout: Math.max(connectTimeout, 500), reconnectStrategy, ...given.socket },
  };
  return { clustered: false, client: createClient(options), label: labelOf(options), owned: true };
}

/** Raw commands on a client or cluster (which routes a script by its key: EVALSHA sha numkeys key ...). */
export function nodeRedisSend(node: object): ServerSend {
  const client = node as NodeRedisClientApi & NodeRedisClusterApi;
  return clientKind(node) === 'node-redis-cluster'
    ? (command) => client.sendCommand(command[3], false, command)
    : (command) => client.sendCommand(command);
}

/** A one-off connection to `url` (see OneOffConnection): connected by its user, never reconnected. */
export function openNodeRedisOnce(url: string, timeoutMs: number, tls: object | undefined): OneOffConnection {
  const { client } = openClient({ url, socket: { reconnectStrategy: false, ...tls } }, timeoutMs);
  client.on('error', () => undefined); // connect() rejects with it
  const destroy = () => void client.destroy();
  return {
    connect: () => client.connect(),
    send: nodeRedisSend(client),
    close: async () => destroy(),
    abort: destroy,
  };
}

/** `redis://host:port` (or the URL, its password masked) of client options or a cluster's root node. */
function labelOf(options: object | undefined): string {
  const o = (options ?? {}) as NonNullable<NodeRedisClientApi['options']>;
  if (o.url) return redactUrl(o.url);
  return `${o.socket?.tls ? 'rediss' : 'redis'}://${addressOf(o.socket ?? {})}`;
}

/**
 * Closes a client or cluster: close() lets the replies in flight come, at most `timeoutMs` (a
 * paused server never answers), then destroy() drops what is left; `nodes` are a cluster's node
 * clients, destroyed too (a cluster forgets them as it starts to close). node-redis 5 refuses
 * destroy() after close(): its socket is then unref'd, so that it keeps no process alive.
 */
export async function closeNodeRedis(
  runtime: Runtime,
  client: NodeRedisClientApi | NodeRedisClusterApi,
  timeoutMs: number,
  nodes: readonly NodeRedisClientApi[] = [],
): Promise<void> {
  if (!client.isOpen) return;
  const ready = (client as { isReady?: boolean }).isReady ?? true; // (a cluster of node-redis 5 has none)
  const closing = ready ? client.close().catch(() => undefined) : undefined;
  if (closing && (await settleWithin(runtime, closing, timeoutMs)) !== TIMED_OUT) return;
  for (const one of [client, ...nodes]) {
    try {
      one.destroy();
    } catch {
      (one as Partial<NodeRedisClientApi>).unref?.();
    }
  }
}
