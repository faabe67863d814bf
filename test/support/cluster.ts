import { Redlock, type RedlockOptions } from '../../lib/index.js';
import { RedisClusterNodes, RedisNodes, type RedisNodesOptions } from '../../lib/testing/index.js';
import { LOCK_USER, MINIMAL_ACL, underMinimalAcl } from './acl.js';
import type { Cluster, Redis } from 'ioredis';
import { realRuntime } from '../../lib/core/runtime.js';
import {
  IoredisTransport as IoredisTransportClass,
  type IoredisTransport,
} from '../../lib/core/transport/ioredis/ioredis.js';
import { seedSlotMarkers } from '../../lib/core/voter/batches.js';
import type { TransportVoter } from '../../lib/core/voter/voter.js';

/**
 * Drops the connections of `engine` as when its process dies: its command connections, and its
 * wake-up subscriptions unless `keepSubscriptions` (an engine that hears but cannot answer).
 */
export function severConnections(engine: Redlock, { keepSubscriptions = false } = {}): void {
  for (const voter of engine.voters as readonly TransportVoter[]) {
    // The transport's own connections, read from outside (a dying process does not ask them).
    const transport = voter.transport as IoredisTransport;
    if (!keepSubscriptions) void transport['subscribers'].close(0);
    (transport['client'] as Redis).disconnect();
  }
}

/** A logger that keeps messages, so tests can assert what users would be told. */
export class MemoryLogger {
  readonly lines: string[] = [];
  log = (m: string) => void this.lines.push(`log: ${m}`);
  warn = (m: string) => void this.lines.push(`warn: ${m}`);
  error = (m: string) => void this.lines.push(`error: ${m}`);
}

/** Real redis-server nodes plus engines on them; everything is closed by {@link TestCluster.close}. */
export class TestCluster {
  private readonly engines: Redlock[] = [];

  private constructor(
    readonly redis: RedisNodes,
    private readonly acl = false,
  ) {}

  static async start(count = 5, options?: RedisNodesOptions): Promise<TestCluster> {
    // REDLOCK_TEST_ACL=1: the nodes also have the minimal lock user, and engines log in as it.
    const acl = underMinimalAcl && !options?.tls && !options?.password && !options?.aclUser;
    const extraArgs = [
      ...(options?.extraArgs ?? []),
      ...(acl ? ['--user', LOCK_USER.username, ...MINIMAL_ACL] : []),
    ];
    return new TestCluster(await RedisNodes.start(count, { ...options, extraArgs }), acl);
  }

  /** The URL engines use for node `index` (as the minimal lock user under REDLOCK_TEST_ACL=1). */
  url(index: number): string {
    if (!this.acl) return this.redis.url(index);
    return `redis://${LOCK_USER.username}:${LOCK_USER.password}@127.0.0.1:${this.redis.port(index)}`;
  }

  /** An engine over the given node indices (default all), restart guard off unless set. */
  async engine(options: Partial<RedlockOptions> = {}, indices?: number[]): Promise<Redlock> {
    const urls = (indices ?? this.redis.urls.map((_, i) => i)).map((i) => this.url(i));
    const engine = new Redlock({ restartGuard: false, logger: new MemoryLogger(), nodes: urls, ...options });
    this.engines.push(engine);
    await engine.connect();
    return engine;
  }

  async close(): Promise<void> {
    await Promise.all(this.engines.map((e) => e.close()));
    await this.redis.close();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Every slot's restart-guard marker under `guardKey` says the guard has passed (a cluster in
 * service, as a first voter with the guard off leaves it), so that only what a test does makes a
 * shard abstain. The seeding the voters run, through a transport over a client of the cluster's.
 */
export async function settleSlotMarkers(cluster: RedisClusterNodes, guardKey: string): Promise<void> {
  const client = cluster.client();
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  const spec = { client: client as unknown as Cluster, label: 'settle', owned: false };
  const transport = new IoredisTransportClass(spec, realRuntime, 2000);
  try {
    await seedSlotMarkers(transport, guardKey, 0, () => false);
  } finally {
    await transport.close(1000);
    client.disconnect();
  }
}
