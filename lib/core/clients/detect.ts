/*
 * What an entry of `nodes` is, told by duck-typing: the client packages are optional peers, so
 * none of them is imported to compare classes (and `instanceof` fails across two copies of a
 * package, or across a test runner's module registry and Node's own).
 */

/**
 * A client object `nodes` may hold, by API and kind. `ioredis` and `ioredis-cluster` are the ioredis
 * API: ioredis 5 and 6, and iovalkey (its fork for Valkey, the same members and events), which no
 * public member tells apart and which the transport serves alike.
 */
export type ClientKind =
  'ioredis' | 'ioredis-cluster' | 'node-redis' | 'node-redis-cluster' | 'glide' | 'glide-cluster';

type Members = Record<string, unknown>;

const fn = (value: unknown): boolean => typeof value === 'function';

/**
 * The kind of a client object, or undefined when it is none of those supported. Reads members
 * only (node-redis clients are proxies of their prototype; a getter is read once).
 */
export function clientKind(node: object): ClientKind | undefined {
  const o = node as Members;
  // ioredis and iovalkey: `status` and `isCluster` on both; a Cluster has nodes(), a Redis duplicate().
  if (typeof o.status === 'string' && typeof o.isCluster === 'boolean' && fn(o.sendCommand)) {
    if (o.isCluster) return fn(o.nodes) ? 'ioredis-cluster' : undefined;
    return fn(o.duplicate) && fn(o.evalsha) ? 'ioredis' : undefined;
  }
  // Valkey GLIDE: customCommand and invokeScript on both; only the cluster client routes scripts.
  if (fn(o.customCommand) && fn(o.invokeScript)) {
    return fn(o.invokeScriptWithRoute) ? 'glide-cluster' : 'glide';
  }
  // node-redis 5 / 6: isOpen and sendCommand on clients, clusters, pools and sentinels alike.
  if (typeof o.isOpen === 'boolean' && fn(o.sendCommand)) {
    if (fn(o.getSlotMaster)) return 'node-redis-cluster';
    if (fn(o.duplicate) && fn(o.connect) && !('totalClients' in o) && !fn(o.getMasterNode)) {
      return 'node-redis';
    }
  }
  return undefined;
}

/** Whether `node` is a plain object (options, or `{ cluster: [...] }`), not an instance of some class. */
export function isPlainObject(node: object): boolean {
  const proto: unknown = Object.getPrototypeOf(node);
  return proto === Object.prototype || proto === null;
}

/**
 * What an unsupported object in `nodes` looks like, for the error message: its class, and a hint
 * when it is a client we can name (a node-redis pool or sentinel).
 */
export function describeUnsupported(node: object): { what: string; hint?: string } {
  const o = node as Members;
  const name = (node.constructor as { name?: unknown } | undefined)?.name;
  const what = typeof name === 'string' && name !== '' ? `an object of class ${name}` : 'an object';
  if (typeof o.isOpen === 'boolean' && 'totalClients' in o) {
    return { what: 'a node-redis client pool', hint: 'pass a client from createClient() instead of a pool' };
  }
  if (typeof o.isOpen === 'boolean' && fn(o.getMasterNode)) {
    return {
      what: 'a node-redis Sentinel client',
      hint: 'for a Sentinel-managed primary use ioredis options { sentinels: [...], name }',
    };
  }
  return { what };
}
