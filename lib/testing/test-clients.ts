import type { IoRedisClient, IoRedisCluster } from '../core/clients/types.js';

/*
 * The ioredis clients the testing helpers hand out, typed without ioredis' typings (ioredis is an
 * optional peer: an application on node-redis compiles `nest-quorum-lock/testing` with
 * `skipLibCheck: false` too). ioredis itself is loaded when a helper first opens a client.
 */

/**
 * An ioredis `Redis` client from a testing helper: every command is there, typed loosely. For
 * ioredis' own typings: `nodes.client(0) as unknown as Redis`.
 */
export interface IoRedisTestClient extends IoRedisClient {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- ioredis' commands, untyped here
  readonly [member: string]: any;
  info(section?: string): Promise<string>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string | number, ...options: (string | number)[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  exists(...keys: string[]): Promise<number>;
  pttl(key: string): Promise<number>;
  keys(pattern: string): Promise<string[]>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  ping(): Promise<string>;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** An ioredis `Cluster` client from a testing helper, typed loosely like {@link IoRedisTestClient}. */
export interface IoRedisClusterTestClient extends IoRedisCluster {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- ioredis' commands, untyped here
  readonly [member: string]: any;
}
