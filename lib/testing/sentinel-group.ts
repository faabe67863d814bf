import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisConnectionOptions } from '../core/clients/types.js';
import { testClient } from './ioredis-module.js';
import type { IoRedisTestClient } from './test-clients.js';
import { endProcess, spawnServer, tempDir, until, type TempDir } from './child-processes.js';
import { onFreePort } from './free-port.js';
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
  /**
   * The server binary of the primary, the replica and the Sentinels (`<binary> <config>
   * --sentinel`), as for RedisNodes. Default: `REDIS_SERVER_BIN`, else `redis-server`.
   */
  serverBinary?: string;
}

const HOST = '127.0.0.1';

/**
 * A Sentinel-managed primary on real processes, for integration tests of failovers: one primary
 * and one replica (`redis-server`, without persistence), watched by 1 or 3 Sentinels
 * (`redis-server <generated config> --sentinel`) on free loopback ports; `serverBinary` (or
 * `REDIS_SERVER_BIN`) runs another binary for all of them, e.g. `valkey-server`. Every process is ended
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
    private readonly dir: TempDir,
    /** Index 0: the first primary; index 1: its replica. */
    readonly servers: readonly [RedisNodes, RedisNodes],
    readonly sentinelPorts: number[],
  ) {}

  /** Starts the primary, its replica (synced) and the Sentinels (watching both). */
  static async start(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
    const name = options.name ?? 'mymaster';
    const serverBinary = options.serverBinary;
    const primary = await RedisNodes.start(1, { serverBinary });
    const replica = await RedisNodes.start(1, {
      freshFor: [], // a replica: it gets the primary's record by replication
      serverBinary,
      extraArgs: ['--replicaof', HOST, String(primary.port(0))],
    }).catch(async (err: unknown) => {
      await primary.close();
      throw err;
    });
    const group = new SentinelGroup(name, tempDir('sentinels-'), [primary, replica], []);
    try {
      await until(async () =>
        (await replica.client(0).info('replication')).includes('master_link_status:up'),
      );
      const count = options.sentinels ?? 1;
      for (let i = 0; i < count; i++) await group.launchSentinel(i, count, options);
      // A failover needs a replica the Sentinels know of.
      await until(
        async () => ((await group.sentinel(0).call('SENTINEL', 'REPLICAS', name)) as []).length > 0,
      );
    } catch (err) {
      await group.close();
      throw err;
    }
    return group;
  }

  /** The Sentinels' addresses. */
  get sentinels(): Array<{ host: string; port: number }> {
    return this.sentinelPorts.map((port) => ({ host: HOST, port }));
  }

  /** The voter, as `nodes` takes it: ioredis options with `sentinels` and `name`. */
  get nodeOptions(): RedisConnectionOptions & {
    readonly sentinels: Array<{ host: string; port: number }>;
    readonly name: string;
  } {
    return { sentinels: this.sentinels, name: this.name };
  }

  /** The port of the current primary, as the Sentinels report it. */
  async primaryPort(): Promise<number> {
    const address = await this.sentinel(0).call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name);
    return Number((address as [string, string])[1]);
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
    this.dir.remove();
  }

  private readonly clients = new Map<number, IoRedisTestClient>();

  /** A cached client of Sentinel `index`. */
  sentinel(index: number): IoRedisTestClient {
    let client = this.clients.get(index);
    const options = { host: HOST, port: this.sentinelPorts[index]!, maxRetriesPerRequest: 1 };
    if (!client) this.clients.set(index, (client = testClient(options)));
    return client;
  }

  private async launchSentinel(index: number, count: number, o: SentinelGroupOptions): Promise<void> {
    // Sentinel rewrites its config file: one writable file per process.
    const config = join(this.dir.path, `sentinel-${index}.conf`);
    const { proc, port } = await startSentinel(this.servers[0].server.binary, config, (port) => [
      `port ${port}`,
      `bind ${HOST}`,
      `dir ${this.dir.path}`,
      'protected-mode no',
      `sentinel monitor ${this.name} ${HOST} ${this.servers[0].port(0)} ${Math.floor(count / 2) + 1}`,
      `sentinel down-after-milliseconds ${this.name} ${o.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${this.name} ${o.failoverTimeoutMs ?? 5000}`,
      `sentinel parallel-syncs ${this.name} 1`,
    ]);
    this.procs.push(proc);
    this.sentinelPorts[index] = port;
    await until(async () => (await this.sentinel(index).ping()) === 'PONG', 10_000);
  }
}

/**
 * Starts `<binary> <configFile> --sentinel` on a free loopback port, with the configuration
 * `config(port)` (written to `configFile`), and resolves once it listens; on another port when
 * the one picked was taken before the Sentinel could bind it. Ended by pid when this process exits.
 */
export function startSentinel(
  binary: string,
  configFile: string,
  config: (port: number) => string[],
): Promise<{ proc: ChildProcess; port: number }> {
  return onFreePort(HOST, async (port) => {
    writeFileSync(configFile, [...config(port), ''].join('\n'));
    const { ready } = spawnServer(binary, [configFile, '--sentinel'], {
      ready: 'Sentinel ID is', // its own line, not a PING: whatever took the port would answer that
      name: `Sentinel on port ${port}`,
      timeoutMs: 10_000,
    });
    return { proc: await ready, port };
  });
}
