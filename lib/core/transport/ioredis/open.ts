import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { ioredisModule } from '../../clients/load.js';
import { settleWithin, type Runtime } from '../../runtime.js';
import type { ShardSubscription } from '../subscribers.js';
import type { OneOffConnection } from '../transport.js';
import { faultRetryMs, isFinalFault, nodeFault } from '../../voter/describe-error.js';
import { addressOf, redactUrl } from '../urls.js';

/*
 * The connections the library opens with ioredis for a URL, options or `{ cluster: [...] }`: they fail
 * fast (no offline queue, no retried command: a command in flight when a connection drops fails
 * instead of running after the lock decision), and a node that refuses the credentials is asked again
 * with a back-off. Labels are log-safe (no password).
 */

/** The members of the ioredis module that open connections for URLs and options (an optional peer). */
export interface IoredisModule {
  Redis: new (...args: unknown[]) => Redis;
  Cluster: new (startup: ClusterNode[], options?: ClusterOptions) => Cluster;
}

/** What an ioredis transport is built from. */
export interface IoredisSpec {
  readonly client: Redis | Cluster;
  readonly label: string;
  /** The library opened it, and closes it. */
  readonly owned: boolean;
}

/** A connection the library opens for a URL or options (a Sentinel-managed primary included). */
export function openIoredis(
  io: IoredisModule,
  node: string | RedisOptions,
  connectTimeout: number,
): IoredisSpec {
  let faults = 0;
  const defaults: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: Math.max(connectTimeout, 500),
    retryStrategy: (attempt: number) => (faults > 0 ? faultRetryMs(faults) : Math.min(attempt * 100, 2000)),
  };
  const options: RedisOptions = typeof node === 'string' ? defaults : { ...defaults, ...node };
  const client = typeof node === 'string' ? new io.Redis(node, defaults) : new io.Redis(options);
  client.on('error', (err: unknown) => void (faults = isFinalFault(nodeFault(err)) ? faults + 1 : 0));
  client.on('ready', () => void (faults = 0));
  const scheme = options.tls ? 'rediss' : 'redis';
  const user = options.username ? `${options.username}@` : '';
  const label =
    typeof node === 'string'
      ? redactUrl(node)
      : options.sentinels?.length
        ? `sentinel://${options.sentinels.map(addressOf).join(',')}/${options.name ?? ''}`
        : `${scheme}://${user}${options.host ?? 'localhost'}:${options.port ?? 6379}`;
  return { client, label, owned: true };
}

/** A Cluster the library opens for `{ cluster: [...], options? }`. */
export function openIoredisCluster(
  io: IoredisModule,
  startup: ClusterNode[],
  given: ClusterOptions | undefined,
  connectTimeout: number,
): IoredisSpec {
  const options: ClusterOptions = {
    enableOfflineQueue: false,
    clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 2000),
    retryDelayOnFailover: 50,
    retryDelayOnClusterDown: 50,
    maxRedirections: 4,
    ...given,
    redisOptions: {
      connectTimeout: Math.max(connectTimeout, 500),
      maxRetriesPerRequest: 0,
      ...given?.redisOptions,
    },
  };
  return { client: new io.Cluster(startup, options), label: clusterLabel(startup), owned: true };
}

/** Sends a raw command on a `Redis` or a `Cluster` (which routes it by its first key). */
export function ioredisCall(client: Redis | Cluster, [name, ...args]: readonly string[]): Promise<unknown> {
  return client.call(name!, ...args);
}

/** A one-off connection to `url` (see OneOffConnection): connected by its user, never reconnected. */
export function openIoredisOnce(url: string, timeoutMs: number, tls: object | undefined): OneOffConnection {
  const { Redis } = ioredisModule<IoredisModule>();
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...(tls ? { tls } : {}),
  });
  let lastError: unknown;
  client.on('error', (err: unknown) => (lastError = err)); // the socket's own error: why connect() failed
  return {
    connect: () => client.connect().catch((err: unknown) => Promise.reject(lastError ?? err)),
    send: (command) => ioredisCall(client, command),
    close: () =>
      client.quit().then(
        () => undefined,
        () => client.disconnect(),
      ),
    abort: () => client.disconnect(),
  };
}

/** `cluster://host:port,...` of a Cluster's startup nodes. */
export function clusterLabel(startup: readonly unknown[]): string {
  return `cluster://${startup.map(addressOf).join(',')}`;
}

/**
 * A subscriber connection (a subscribed connection can run nothing else), a duplicate of `source`
 * with `options`, re-subscribed by ioredis; kept in `open` until it ends (the transport's close
 * ends those still connecting).
 */
export async function openSubscriber(
  [source, options]: [Redis, RedisOptions],
  channels: readonly string[],
  deliver: (channel: string, message: string) => void,
  open: Set<Redis>,
  runtime: Runtime,
): Promise<ShardSubscription> {
  const connection = source.duplicate(options);
  open.add(connection);
  connection.once('end', () => open.delete(connection));
  connection.on('error', () => undefined); // the transport's own connection reports health
  connection.on('message', deliver);
  if (channels.length > 0) {
    await connection.subscribe(...channels).catch((err: unknown) => {
      connection.disconnect();
      throw err;
    });
  }
  return {
    get healthy() {
      return connection.status === 'ready';
    },
    get ended() {
      return connection.status === 'end';
    },
    subscribe: async (more) => void (await connection.subscribe(...more)),
    close: async () => {
      const ended = new Promise((resolve) => connection.once('end', resolve));
      connection.disconnect();
      await settleWithin(runtime, ended, 1000);
    },
  };
}
