/*
 * The shapes of the Redis clients `nodes` accepts, written here instead of imported from the
 * clients' packages: `ioredis`, `iovalkey`, `redis` (node-redis) and `@valkey/valkey-glide` are all optional
 * peers, and an application that has only one of them must compile against these typings with
 * `skipLibCheck: false`. Each shape names a few members its client really has, so that the
 * client's own type is assignable to it; which client a value is, is told at run time by
 * duck-typing (detect.ts), never by `instanceof` (a second copy of a package, or a test runner's
 * module registry, would defeat it).
 */

/** Which package URL strings and option objects in `nodes` become connections of. */
export type RedisClientPackage = 'ioredis' | 'node-redis';

/**
 * Options for one connection, as the chosen client takes them (see `RedlockOptions.client`):
 * ioredis `RedisOptions` (`{ host, port, username, password, db, tls, sentinels, name, ... }`) or
 * node-redis `createClient` options (`{ url, socket: { host, port, tls }, username, password,
 * database, ... }`). The library's own settings for connections it opens (no offline queue, a
 * bounded connect timeout) are applied under yours. Any object type (ioredis' `RedisOptions`, an
 * interface of your own) is accepted here; the entries are checked when the engine is built.
 */
export type RedisConnectionOptions = object;

/** An ioredis `Redis` client (ioredis 5 or 6), or an iovalkey `Redis` (`Valkey`): the same API. */
export interface IoRedisClient {
  readonly status: string;
  readonly isCluster: boolean;
  readonly options: object;
  duplicate(...args: never[]): unknown;
}

/** An ioredis `Cluster` client (ioredis 5 or 6, or iovalkey): a Redis Cluster as ONE voter. */
export interface IoRedisCluster {
  readonly status: string;
  readonly isCluster: boolean;
  nodes(...args: never[]): unknown;
}

/** A startup node of a Redis Cluster given as `{ cluster: [...] }`: a port, `host:port`, or `{ host, port }`. */
export type ClusterStartupNode = number | string | { readonly host?: string; readonly port?: number };

/**
 * A Redis Cluster as one voter, described by its startup nodes (ioredis discovers the rest of the
 * cluster from them) and, optionally, ioredis `ClusterOptions`; opened with ioredis.
 */
export interface ClusterVoterNode {
  readonly cluster: readonly ClusterStartupNode[];
  /** ioredis `ClusterOptions`. */
  readonly options?: RedisConnectionOptions;
}

/** A node-redis client from `createClient` (`redis` 5 or 6, RESP2 or RESP3). */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  duplicate(...args: never[]): unknown;
  sendCommand(...args: never[]): Promise<unknown>;
}

/** A node-redis cluster client from `createCluster` (`redis` 5 or 6): a Redis Cluster as ONE voter. */
export interface NodeRedisCluster {
  readonly isOpen: boolean;
  getSlotMaster(slot: number): unknown;
  sendCommand(...args: never[]): Promise<unknown>;
}

/** A Valkey GLIDE 2 client: `GlideClient` (one server) or `GlideClusterClient` (a cluster as ONE voter). */
export interface GlideClient {
  customCommand(...args: never[]): Promise<unknown>;
  invokeScript(...args: never[]): Promise<unknown>;
  close(...args: never[]): void;
}
