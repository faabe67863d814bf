import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisConnectionOptions } from '../core/clients/types.js';
import { testClient } from './ioredis-module.js';
import type { IoRedisTestClient } from './test-clients.js';
import { endProcess, removeDir, startProcess, tempDir, until } from './child-processes.js';
import { freePort } from './free-port.js';
import { RedisNodes } from './redis-nodes.js';

/** Options for {@link SentinelGroup.start}. */
export interface SentinelGroupOptions {
  /** Sentinel processes: 1 (quorum 1) or 3 (quorum 2). Default 1. */
  sentinels?: 1 | 3;
  /** The monitored primary's name. Default `mymaster`. */
  name?: string;
  /** `down-after-milliseconds`: how long the primary may be silent before a failover. Default 1000. */
  downAfterMs?: number;
  /** `failover-timeout`. Default 5000. */
  failoverTimeoutMs?: number;
}

const HOST = '127.0.0.1';

type Address = { host: string; port: number };

/**
 * A Sentinel-managed primary on real processes, for integration tests of failovers: one primary
 * and one replica (`redis-server`, without persistence), watched by 1 or 3 Sentinels
 * (`redis-server <generated config> --sentinel`) on free loopback ports. Every process is ended
 * by its pid in {@link close}; the data servers are a {@link RedisNodes} set each.
 *
 * ```ts
 * const group = await SentinelGroup.start();
 * const engine = new Redlock({ nodes: [group.nodeOptions] }); // { sentinels, name }
 * await group.killPrimary();
 * const promoted = await group.waitForFailover();
 * ```
 */
export class SentinelGroup {
  private readonly procs: ChildProcess[] = [];
  private closed = false;

  private constructor(
    readonly name: string,
    private readonly dir: string,
    /** Index 0: the first primary; index 1: its replica. */
    readonly servers: readonly [RedisNodes, RedisNodes],
    readonly sentinelPorts: number[],
  ) {}

  /** Starts the primary, its replica (synced) and the Sentinels (watching both). */
  static async start(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
    const name = options.name ?? 'mymaster';
    const primary = await RedisNodes.start(1);
    const replicaOf = ['--replicaof', HOST, String(primary.port(0))];
    const replica = await RedisNodes.start(1, { extraArgs: replicaOf }).catch(async (err: unknown) => {
      await primary.close();
      throw err;
    });
    const dir = tempDir('sentinels-');
    const group = new SentinelGroup(name, dir, [primary, replica], []);
    try {
      await until(async () =>
        String(await replica.client(0).info('replication')).includes('master_link_status:up'),
      );
      const count = options.sentinels ?? 1;
      for (let i = 0; i < count; i++) group.sentinelPorts.push(await freePort(HOST));
      await Promise.all(group.sentinelPorts.map((port, i) => group.launchSentinel(i, port, count, options)));
      // A failover needs a replica the Sentinels know of.
      await until(
        async () => ((await group.sentinel(0).call('SENTINEL', 'REPLICAS', name)) as unknown[]).length > 0,
      );
    } catch (err) {
      await group.close();
      throw err;
    }
    return group;
  }

  /** The Sentinels' addresses. */
  get sentinels(): Address[] {
    return this.sentinelPorts.map((port) => ({ host: HOST, port }));
  }

  /** The voter, as `nodes` takes it: ioredis options with `sentinels` and `name`. */
  get nodeOptions(): RedisConnectionOptions & { readonly sentinels: Address[]; readonly name: string } {
    return { sentinels: this.sentinels, name: this.name };
  }

  /** The port of the current primary, as the Sentinels report it. */
  async primaryPort(): Promise<number> {
    const address = (await this.sentinel(0).call(
      'SENTINEL',
      'GET-MASTER-ADDR-BY-NAME',
      this.name,
    )) as string[];
    return Number(address[1]);
  }

  /** SIGKILL the current primary (a crash). Resolves with its port once it is gone. */
  async killPrimary(): Promise<number> {
    const port = await this.primaryPort();
    const server = this.servers.find((s) => s.port(0) === port);
    if (!server) throw new Error(`no server of this group listens on ${port}`);
    await server.kill(0);
    return port;
  }

  /** Waits until the Sentinels name another primary than `oldPort`; resolves with its port. */
  async waitForFailover(oldPort: number, ms = 15_000): Promise<number> {
    await until(async () => (await this.primaryPort()) !== oldPort, ms);
    return this.primaryPort();
  }

  /** Ends every process by pid (Sentinels first) and removes the temporary directories. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const client of this.clients.values()) client.disconnect();
    await Promise.all(this.procs.map((proc) => endProcess(proc, 'SIGKILL')));
    await Promise.all(this.servers.map((s) => s.close()));
    removeDir(this.dir);
  }

  private readonly clients = new Map<number, IoRedisTestClient>();

  /** A cached client of Sentinel `index`. */
  sentinel(index: number): IoRedisTestClient {
    const port = this.sentinelPorts[index];
    const client = this.clients.get(index) ?? testClient({ host: HOST, port }, { maxRetriesPerRequest: 1 });
    this.clients.set(index, client);
    return client;
  }

  private async launchSentinel(
    index: number,
    port: number,
    count: number,
    o: SentinelGroupOptions,
  ): Promise<void> {
    // Sentinel rewrites its config file: one writable file per process.
    const config = join(this.dir, `sentinel-${index}.conf`);
    const monitor = `${this.name} ${HOST} ${this.servers[0].port(0)} ${Math.floor(count / 2) + 1}`;
    const lines = [
      `port ${port}`,
      `bind ${HOST}`,
      `dir ${this.dir}`,
      'protected-mode no',
      `sentinel monitor ${monitor}`,
    ];
    lines.push(`sentinel down-after-milliseconds ${this.name} ${o.downAfterMs ?? 1000}`);
    lines.push(`sentinel failover-timeout ${this.name} ${o.failoverTimeoutMs ?? 5000}`);
    writeFileSync(config, [...lines, `sentinel parallel-syncs ${this.name} 1`, ''].join('\n'));
    const name = `redis-server --sentinel on port ${port}`;
    const args = [config, '--sentinel'];
    this.procs.push(
      await startProcess({
        name,
        command: 'redis-server',
        args,
        ready: '+monitor master',
        timeoutMs: 10_000,
      }),
    );
    await until(async () => (await this.sentinel(index).ping()) === 'PONG', 10_000);
  }
}
