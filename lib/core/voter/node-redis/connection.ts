import { clientKind } from '../../clients/detect.js';
import { nodeRedisModule } from '../../clients/load.js';
import type { LuaScript } from '../../scripts/lua-script.js';
import { settleWithin } from '../../timeouts.js';
import { redactUrl } from '../ioredis/connection.js';

/*
 * What the voter needs of node-redis (`redis` 5 and 6, clients from createClient and clusters from
 * createCluster, RESP2 and RESP3), written as the few members it calls: node-redis is an optional
 * peer, loaded only to open a connection the engine owns.
 *
 * - Every command carries node-redis' own per-command `timeout` (nodeTimeout or the admission's
 *   bound): a command that waits in a client's offline queue (a client passed in keeps its queue
 *   on) is taken out of the queue when it expires, instead of running after the lock decision.
 * - Connections the engine opens have the offline queue off (`disableOfflineQueue`): a command
 *   sent while disconnected fails at once.
 * - A subscribed connection can run nothing else: wake-ups come over a duplicate() of the client.
 */

/** Per-command options node-redis 5 and 6 take (`CommandOptions`). */
interface CommandOptions {
  readonly timeout?: number;
}

/** The members of a node-redis client (createClient) the voter calls. */
export interface NodeRedisClientApi {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: {
    readonly url?: string;
    readonly socket?: { readonly host?: string; readonly port?: number; readonly tls?: boolean };
  };
  sendCommand(args: readonly string[], options?: CommandOptions): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisClientApi;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  close?(): Promise<void>;
  destroy?(): void;
  disconnect?(): Promise<void>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

/** The members of a node-redis cluster (createCluster) the voter calls. */
export interface NodeRedisClusterApi extends Omit<NodeRedisClientApi, 'sendCommand' | 'options'> {
  readonly _options?: { readonly rootNodes?: ReadonlyArray<{ readonly url?: string; socket?: object }> };
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: readonly string[],
    options?: CommandOptions,
  ): Promise<unknown>;
}

/** One node-redis connection (a client or a cluster) as the voter drives it. */
export interface NodeRedisConnection {
  readonly label: string;
  /** Opened by the engine (closed by it), or passed in (never closed by it). */
  readonly owned: boolean;
  readonly cluster: boolean;
  /** The client or cluster itself (its events). */
  readonly client: NodeRedisClientApi | NodeRedisClusterApi;
  /**
   * Sends a command, out of the offline queue after `timeoutMs` (undefined: no node-redis timeout,
   * on a connection without an offline queue); a cluster routes it by `firstKey`.
   */
  command(args: readonly string[], timeoutMs: number | undefined, firstKey?: string): Promise<unknown>;
}

/** node-redis' defaults for connections the engine opens: no offline queue, bounded connects. */
function ownedOptions(node: string | object, connectTimeout: number): Record<string, unknown> {
  const given = (typeof node === 'string' ? { url: node } : node) as Record<string, unknown>;
  const socket = (given.socket ?? {}) as Record<string, unknown>;
  return {
    ...given,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: Math.max(connectTimeout, 500),
      reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000),
      ...socket,
    },
  };
}

/** A log-safe label of node-redis client options. */
function labelOf(options: NodeRedisClientApi['options'] | Record<string, unknown> | undefined): string {
  const o = (options ?? {}) as {
    url?: string;
    socket?: { host?: string; port?: number; tls?: boolean };
  };
  if (o.url) return redactUrl(o.url);
  const scheme = o.socket?.tls ? 'rediss' : 'redis';
  return `${scheme}://${o.socket?.host ?? 'localhost'}:${o.socket?.port ?? 6379}`;
}

/** Opens (URL or createClient options) or adopts (a client or cluster) a node-redis connection. */
export function nodeRedisConnection(node: string | object, connectTimeout: number): NodeRedisConnection {
  const kind = typeof node === 'object' ? clientKind(node) : undefined;
  if (kind === 'node-redis-cluster') {
    const cluster = node as NodeRedisClusterApi;
    const roots = cluster._options?.rootNodes ?? [];
    const label = `cluster://${roots.map((r) => labelOf(r as Record<string, unknown>).replace(/^rediss?:\/\/([^@]*@)?/, '')).join(',')}`;
    return {
      label,
      owned: false,
      cluster: true,
      client: cluster,
      command: (args, timeoutMs, firstKey) =>
        cluster.sendCommand(firstKey, false, args, { timeout: timeoutMs }),
    };
  }
  if (kind === 'node-redis') {
    const client = node as NodeRedisClientApi;
    return adopted(client, labelOf(client.options), false);
  }
  const { createClient } = nodeRedisModule<{ createClient(options: object): NodeRedisClientApi }>();
  const options = ownedOptions(node, connectTimeout);
  return adopted(createClient(options), labelOf(options), true);
}

function adopted(client: NodeRedisClientApi, label: string, owned: boolean): NodeRedisConnection {
  return {
    label,
    owned,
    cluster: false,
    client,
    command: (args, timeoutMs) =>
      client.sendCommand(args, timeoutMs === undefined ? undefined : { timeout: timeoutMs }),
  };
}

/**
 * Runs a script by SHA, and sends its source on NOSCRIPT (first use on a node, or a node that
 * restarted and lost its script cache); each command bounded by `timeoutMs`. On a cluster both go
 * to the shard of `routeKey` (the first key; a keyless script names a key of the shard it is for).
 */
export function runNodeRedisScript(
  connection: NodeRedisConnection,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  timeoutMs: number | undefined,
  routeKey: string | undefined = keys[0],
): Promise<unknown> {
  const rest = [String(keys.length), ...keys, ...args.map(String)];
  return connection.command(['EVALSHA', script.sha, ...rest], timeoutMs, routeKey).catch((err: unknown) => {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return connection.command(['EVAL', script.source, ...rest], timeoutMs, routeKey);
    }
    throw err;
  });
}

/**
 * The subscriber of wake messages: a duplicate() of the client (a subscribed connection can run
 * nothing else), with its offline queue on so that SUBSCRIBE waits for the connection, and
 * node-redis re-subscribing after a reconnect. A cluster's duplicate subscribes on one of its
 * nodes (PUBLISH reaches every node of a cluster).
 */
export async function nodeRedisSubscriber(
  connection: NodeRedisConnection,
  channel: string,
  onMessage: (message: string) => void,
): Promise<NodeRedisClientApi> {
  const subscriber = connection.client.duplicate({ disableOfflineQueue: false });
  subscriber.on('error', () => undefined); // the main connection already reports health
  await subscriber.connect();
  await subscriber.subscribe(channel, (message) => onMessage(message));
  return subscriber;
}

/**
 * Closes a node-redis client or cluster: close() lets pending replies come, at most `timeoutMs`
 * (a paused node never answers), then destroy() drops the socket(s).
 */
export async function closeNodeRedis(
  client: NodeRedisClientApi | NodeRedisClusterApi,
  timeoutMs: number,
): Promise<void> {
  if (!client.isOpen) return;
  const close = client.close ?? client.disconnect;
  await settleWithin(
    (close?.call(client) ?? Promise.resolve()).catch(() => undefined),
    timeoutMs,
  );
  if (client.isOpen) client.destroy?.();
}
