import type { Cluster, ClusterNode, ClusterOptions } from 'ioredis';
import { clientKind } from '../../clients/detect.js';
import { ioredisModule } from '../../clients/load.js';
import type { ClusterStartupNode, ClusterVoterNode } from '../../clients/types.js';

export type { ClusterVoterNode };
import { RedlockOptionsError } from '../../errors.js';
import { redactUrl } from '../ioredis/connection.js';

/** Whether a `nodes` entry is a Redis Cluster: a Cluster client, or `{ cluster: [...] }`. */
export function isClusterNode(node: unknown): node is Cluster | ClusterVoterNode {
  if (node === null || typeof node !== 'object') return false;
  return isClusterClient(node) || Array.isArray((node as Partial<ClusterVoterNode>).cluster);
}

/** Whether `node` is an ioredis Cluster client (duck-typed: ioredis is an optional peer). */
function isClusterClient(node: object): node is Cluster {
  return clientKind(node) === 'ioredis-cluster';
}

/** A cluster client, its log-safe label, and whether the library owns (and so closes) it. */
export interface ClusterConnection {
  readonly client: Cluster;
  readonly label: string;
  readonly owned: boolean;
}

/**
 * Settings for clusters the library opens itself: as for one node (../ioredis/connection.ts), a
 * command is never queued while the cluster is not ready, and is never replayed after the lock
 * decision was made. Redirections after a failover or a resharding are followed, a few times.
 */
function ownedClusterOptions(connectTimeout: number, given: ClusterOptions | undefined): ClusterOptions {
  return {
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
}

/** Opens (or adopts) the cluster client for a `nodes` entry. */
export function clusterConnection(
  node: Cluster | ClusterVoterNode,
  connectTimeout: number,
): ClusterConnection {
  if (isClusterClient(node)) {
    // startupNodes is private in ioredis' types, and public at run time: the label is all we read.
    const startup = (node as unknown as { startupNodes?: ClusterNode[] }).startupNodes ?? [];
    return { client: node, label: clusterLabel(startup), owned: false };
  }
  // Loaded only now: an engine whose nodes are all clients passed in never loads ioredis.
  const { Cluster } = ioredisModule<typeof import('ioredis')>();
  const startup = node.cluster as ClusterNode[];
  return {
    client: new Cluster(startup, ownedClusterOptions(connectTimeout, node.options as ClusterOptions)),
    label: clusterLabel(node.cluster),
    owned: true,
  };
}

/** `cluster://10.0.0.1:6379,10.0.0.2:6379`: the startup nodes, never a password. */
export function clusterLabel(nodes: readonly (ClusterNode | ClusterStartupNode)[]): string {
  const addresses = nodes.map((node) => {
    if (typeof node === 'number') return `localhost:${node}`;
    if (typeof node === 'string') {
      if (/^\d+$/.test(node)) return `localhost:${node}`;
      const redacted = redactUrl(node.includes('://') ? node : `redis://${node}`);
      return redacted.replace(/^rediss?:\/\/([^@]*@)?/, '');
    }
    return `${node.host ?? 'localhost'}:${node.port ?? 6379}`;
  });
  return `cluster://${addresses.join(',')}`;
}

/**
 * Checks a `{ cluster: [...] }` entry of `nodes` (a Cluster client needs no check).
 * @throws RedlockOptionsError naming the entry, what is wrong and the fix.
 */
export function validateClusterNode(node: unknown, option: string): void {
  if (node !== null && typeof node === 'object' && isClusterClient(node)) return;
  const { cluster, options } = node as { cluster: unknown; options?: unknown };
  const fix =
    'Use { cluster: [{ host: "10.0.0.1", port: 6379 }, ...], options?: ClusterOptions }, or an ioredis Cluster';
  if (!Array.isArray(cluster) || cluster.length === 0) {
    throw new RedlockOptionsError(`${option}.cluster`, 'no startup node given', fix);
  }
  cluster.forEach((entry: unknown, j) => {
    const ok =
      (typeof entry === 'number' && Number.isInteger(entry) && entry > 0) ||
      (typeof entry === 'string' && entry.length > 0) ||
      (entry !== null &&
        typeof entry === 'object' &&
        ((entry as { port?: unknown }).port === undefined ||
          Number.isInteger((entry as { port?: unknown }).port)));
    if (!ok) throw new RedlockOptionsError(`${option}.cluster[${j}]`, `got ${JSON.stringify(entry)}`, fix);
  });
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new RedlockOptionsError(
      `${option}.options`,
      `got ${String(options)}`,
      'Pass ioredis ClusterOptions, or leave it out',
    );
  }
  if (options && Array.isArray((options as { sentinels?: unknown }).sentinels)) {
    throw new RedlockOptionsError(
      `${option}.options`,
      'a Redis Cluster has no Sentinels',
      'A Sentinel-managed primary is a node of its own: { sentinels: [...], name: "mymaster" }',
    );
  }
}
