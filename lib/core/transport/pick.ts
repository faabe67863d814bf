import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { clientKind } from '../clients/detect.js';
import { ioredisModule, PACKAGE_NAME, tryLoad } from '../clients/load.js';
import type { ClusterVoterNode, RedisClientPackage } from '../clients/types.js';
import { CrossSlotLockError, RedlockOptionsError } from '../errors.js';
import type { RedlockNode } from '../options.js';
import { keyPrefixOf, keySlot } from '../scripts/keys.js';
import type { ServerSend } from '../voter/server.js';
import { TransportVoter } from '../voter/voter.js';
import { isVoterFactory, type Voter, type VoterContext } from '../voter/voter-api.js';
import { glideSend, glideTransport, openGlideOnce } from './glide/glide.js';
import type { GlideFactory } from './glide/subscriber.js';
import { IoredisTransport } from './ioredis/ioredis.js';
import {
  clusterLabel,
  ioredisCall,
  openIoredis,
  openIoredisCluster,
  openIoredisOnce,
  type IoredisModule,
} from './ioredis/open.js';
import { nodeRedisSend, nodeRedisTransport, openNodeRedisOnce } from './node-redis/node-redis.js';
import type { OneOffConnection, Transport } from './transport.js';

/*
 * The one place that picks a client folder: a transport for a `nodes` entry (and its voter), raw
 * commands on a client passed in, a one-off connection; the client folders are imported here only.
 * A client passed in is told by duck-typing (clients/detect.ts); a URL or options open a connection
 * with the chosen client package (`client`, default ioredis).
 */

/** A voter for one `nodes` entry. */
export function createVoter(
  node: RedlockNode,
  context: VoterContext,
  client: RedisClientPackage | undefined,
  option: string,
): Voter {
  if (isVoterFactory(node)) return node.createVoter(context);
  // Refused before anything is opened: a Cluster connection opened for a refused voter would go on
  // reconnecting, with nobody left to close it.
  if (isCluster(node) && /[{}]/.test(context.settings.guardKey)) {
    throw new RedlockOptionsError(
      'keyPrefix',
      `${option} is a Redis Cluster, and the key prefix "${keyPrefixOf(context.settings.guardKey)}" holds a brace`,
      'Use a prefix without { or }: each resource gets its own hash tag already, and a tag in the prefix would put every lock on one shard',
    );
  }
  return new TransportVoter(pickTransport(node, context, client), context);
}

/** Whether a `nodes` entry is a Redis Cluster: options `{ cluster }`, or a Cluster client passed in. */
function isCluster(node: RedlockNode): boolean {
  if (typeof node !== 'object') return false;
  if (Array.isArray((node as Partial<ClusterVoterNode>).cluster)) return true;
  const kind = clientKind(node);
  return kind === 'ioredis-cluster' || kind === 'node-redis-cluster' || kind === 'glide-cluster';
}

function pickTransport(
  node: RedlockNode,
  context: VoterContext,
  client: RedisClientPackage | undefined,
): Transport {
  const { connectTimeout, runtime } = context;
  const io = () => ioredisModule<IoredisModule>();
  if (typeof node === 'object') {
    switch (clientKind(node)) {
      // ioredis 5, 6 and iovalkey alike: a client passed in needs no package loaded.
      case 'ioredis':
        return new IoredisTransport(
          { client: node as Redis, label: ioredisLabel(node as Redis), owned: false },
          runtime,
          connectTimeout,
        );
      case 'ioredis-cluster': {
        const startup = (node as unknown as { startupNodes?: ClusterNode[] }).startupNodes ?? [];
        return new IoredisTransport(
          { client: node as Cluster, label: clusterLabel(startup), owned: false },
          runtime,
          connectTimeout,
        );
      }
      case 'node-redis':
      case 'node-redis-cluster':
        return nodeRedisTransport(node, context);
      case 'glide':
      case 'glide-cluster':
        return glideTransport(node, context);
      case undefined:
        break;
    }
    if (Array.isArray((node as Partial<ClusterVoterNode>).cluster)) {
      const { cluster, options } = node as ClusterVoterNode;
      return new IoredisTransport(
        openIoredisCluster(io(), cluster as ClusterNode[], options as ClusterOptions, connectTimeout),
        runtime,
        connectTimeout,
      );
    }
  }
  if (client === 'node-redis') return nodeRedisTransport(node as string | object, context);
  return new IoredisTransport(
    openIoredis(io(), node as string | RedisOptions, connectTimeout),
    runtime,
    connectTimeout,
  );
}

/** `redis://host:port` of an ioredis (or iovalkey) client passed in. */
function ioredisLabel(client: Redis): string {
  const o = client.options;
  return `${o.tls ? 'rediss' : 'redis'}://${o.host}:${o.port}`;
}

/**
 * Raw commands on a client passed in (FencedWriter's store), as each client sends them: a
 * Cluster routes a script by its first key. Undefined for an object that is no supported client.
 */
export function clientSend(client: object): ServerSend | undefined {
  switch (clientKind(client)) {
    case 'ioredis':
    case 'ioredis-cluster':
      return (command) => ioredisCall(client as Redis, command);
    case 'node-redis':
    case 'node-redis-cluster':
      return nodeRedisSend(client);
    case 'glide':
    case 'glide-cluster':
      return glideSend(client);
  }
  return undefined;
}

/**
 * A one-off connection to `url` (`tls` for a `rediss://` one) with the client package installed:
 * ioredis, else node-redis, else Valkey GLIDE.
 * @throws RedlockOptionsError when none is installed.
 */
export function openOneOff(url: string, timeoutMs: number, tls: object | undefined): OneOffConnection {
  if (tryLoad(PACKAGE_NAME.ioredis) === undefined) {
    if (tryLoad(PACKAGE_NAME['node-redis']) !== undefined) return openNodeRedisOnce(url, timeoutMs, tls);
    const glide = tryLoad(PACKAGE_NAME.glide) as { GlideClient?: GlideFactory } | undefined;
    if (glide?.GlideClient) return openGlideOnce(glide.GlideClient, url, timeoutMs);
  }
  return openIoredisOnce(url, timeoutMs, tls); // (no package at all: ioredis' error says what to install)
}

/**
 * Throws CrossSlotLockError when `voters` hold a Redis Cluster and the lock's keys do not share
 * one slot: one voter must take all of them in one script.
 */
export function assertOneSlot(
  voters: readonly Voter[],
  resources: readonly string[],
  lockKeys: readonly string[],
): void {
  const cluster = voters.find((voter) => voter instanceof TransportVoter && voter.transport.clustered);
  if (!cluster) return;
  const slot = keySlot(lockKeys[0]!);
  if (lockKeys.some((key) => keySlot(key) !== slot)) throw new CrossSlotLockError(resources, cluster.label);
}
