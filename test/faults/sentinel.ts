/**
 * S15's deployment: lock voters that are Sentinel-managed primaries, each with one replica that
 * lags it, and a real `redis-server --sentinel` that fails them over. Every process started here
 * is ended by its pid in {@link SentinelNodes.close}.
 *
 * Replication lag on one machine: over loopback a replica is a fraction of a millisecond behind,
 * and the kernel's socket buffers keep what a killed primary had sent. So each replica replicates
 * through a small proxy that holds the primary's stream for `lagMs` and drops what it holds when
 * the primary dies: the replica promoted next lacks the primary's last `lagMs` of writes, as with
 * asynchronous replication over a real network.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisNodes } from '../../lib/testing/index.js';
import { startSentinel } from '../../lib/testing/sentinel-group.js';
import type { LockNodes } from './harness.js';
import { sleep } from './harness.js';

/** A TCP proxy that delays what flows from `upstreamPort` to the client by `lagMs`. */
class LagProxy {
  private constructor(
    private readonly server: Server,
    private readonly sockets: Set<Socket>,
    readonly port: number,
  ) {}

  static async start(upstreamPort: number, lagMs: number): Promise<LagProxy> {
    const sockets = new Set<Socket>();
    const server = createServer((down) => {
      const up = connect(upstreamPort, '127.0.0.1');
      const held = new Set<NodeJS.Timeout>();
      sockets.add(down).add(up);
      const drop = () => {
        for (const t of held) clearTimeout(t); // what the primary sent last never arrives
        held.clear();
        up.destroy();
        down.destroy();
      };
      up.on('data', (chunk) => {
        const t = setTimeout(() => {
          held.delete(t);
          down.write(chunk);
        }, lagMs);
        held.add(t);
      });
      down.on('data', (chunk) => up.write(chunk));
      for (const s of [up, down]) s.on('error', drop).on('close', drop);
    });
    // Port 0: the OS picks the port as it binds it (a port picked before could be taken meanwhile).
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return new LagProxy(server, sockets, (server.address() as AddressInfo).port);
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }
}

/** One Sentinel-managed voter: its current primary, and the lagging replica that may replace it. */
interface Group {
  readonly name: string;
  primary: RedisNodes;
  replica: RedisNodes;
  proxy: LagProxy;
}

/**
 * `plain` standalone voters, then `groups` Sentinel-managed ones (name `g0`, `g1`, ...), and one
 * Sentinel (quorum 1) watching the groups.
 */
export class SentinelNodes implements LockNodes {
  private readonly retired: Array<RedisNodes | LagProxy> = [];

  private constructor(
    private readonly plain: RedisNodes,
    private readonly groups: Group[],
    private readonly sentinel: ChildProcess,
    private readonly sentinelPort: number,
    private readonly dir: string,
    private readonly lagMs: number,
  ) {}

  static async start(plainCount: number, groupCount: number, lagMs: number): Promise<SentinelNodes> {
    const dir = mkdtempSync(join(tmpdir(), 'redlock-sentinel-'));
    const plain = await RedisNodes.start(plainCount);
    const groups: Group[] = [];
    for (let g = 0; g < groupCount; g++) {
      const primary = await RedisNodes.start(1);
      const { replica, proxy } = await laggingReplica(primary.port(0), lagMs);
      groups.push({ name: `g${g}`, primary, replica, proxy });
    }
    const { proc: sentinel, port: sentinelPort } = await startSentinel(
      'redis-server',
      join(dir, 'sentinel.conf'),
      (port) => [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'protected-mode no',
        ...groups.flatMap((g) => [
          `sentinel monitor ${g.name} 127.0.0.1 ${g.primary.port(0)} 1`,
          `sentinel down-after-milliseconds ${g.name} 400`,
          `sentinel failover-timeout ${g.name} 4000`,
        ]),
      ],
    );
    const nodes = new SentinelNodes(plain, groups, sentinel, sentinelPort, dir, lagMs);
    for (const g of groups) await nodes.waitForReplicaKnown(g);
    return nodes;
  }

  get urls(): string[] {
    return [...this.plain.urls, ...this.groups.map((g) => g.primary.url(0))];
  }

  url(index: number): string {
    return this.urls[index]!;
  }

  /** Plain voters as URLs; Sentinel-managed ones as ioredis options (ioredis asks the Sentinel). */
  workerNodes(): Array<string | object> {
    const sentinels = [{ host: '127.0.0.1', port: this.sentinelPort }];
    return [...this.plain.urls, ...this.groups.map((g) => ({ sentinels, name: g.name }))];
  }

  /** Index of the first Sentinel-managed voter. */
  get firstGroup(): number {
    return this.plain.count;
  }

  pid(index: number): number | undefined {
    return this.target(index).set.pid(0);
  }

  /**
   * SIGKILLs group `index`'s primary, waits until the Sentinel promoted its replica (resolves with
   * how long that took, ms), and gives the new primary a new lagging replica for the next failover.
   */
  async failover(index: number): Promise<number> {
    const g = this.groups[index - this.plain.count]!;
    const started = performance.now();
    await g.primary.kill(0);
    const sentinel = this.sentinelClient();
    try {
      for (;;) {
        const [, port] = ((await sentinel.call('SENTINEL', 'get-master-addr-by-name', g.name)) ??
          []) as string[];
        if (Number(port) === g.replica.port(0)) break;
        if (performance.now() - started > 20_000) throw new Error(`no failover of ${g.name} within 20 s`);
        await sleep(20);
      }
    } finally {
      sentinel.disconnect();
    }
    const took = performance.now() - started;
    this.retired.push(g.primary, g.proxy);
    g.primary = g.replica;
    const next = await laggingReplica(g.primary.port(0), this.lagMs);
    g.replica = next.replica;
    g.proxy = next.proxy;
    await this.waitForReplicaKnown(g);
    return took;
  }

  async kill(index: number): Promise<void> {
    const t = this.target(index);
    await t.set.kill(0);
  }

  stop(index: number): void {
    this.target(index).set.stop(0);
  }

  resume(index: number): void {
    this.target(index).set.resume(0);
  }

  async restart(index: number): Promise<void> {
    await this.target(index).set.restart(0);
  }

  async revive(index: number): Promise<void> {
    await this.target(index).set.revive(0);
  }

  async close(): Promise<void> {
    if (this.sentinel.exitCode === null && this.sentinel.pid) {
      const exited = new Promise((r) => this.sentinel.once('exit', r));
      process.kill(this.sentinel.pid, 'SIGKILL');
      await exited;
    }
    for (const g of this.groups) g.proxy.close();
    for (const r of this.retired) if (r instanceof LagProxy) r.close();
    await Promise.all([
      this.plain.close(),
      ...this.groups.flatMap((g) => [g.primary.close(), g.replica.close()]),
      ...this.retired.flatMap((r) => (r instanceof RedisNodes ? [r.close()] : [])),
    ]);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private target(index: number): { set: RedisNodes } {
    if (index < this.plain.count) {
      const plain = this.plain;
      return {
        set: {
          pid: () => plain.pid(index),
          kill: () => plain.kill(index),
          stop: () => plain.stop(index),
          resume: () => plain.resume(index),
          restart: () => plain.restart(index),
          revive: () => plain.revive(index),
        } as unknown as RedisNodes,
      };
    }
    return { set: this.groups[index - this.plain.count]!.primary };
  }

  private sentinelClient(): Redis {
    const client = new Redis({ port: this.sentinelPort, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    return client;
  }

  /** Until the Sentinel lists `g`'s replica as a healthy candidate (it learns replicas from INFO). */
  private async waitForReplicaKnown(g: Group): Promise<void> {
    const sentinel = this.sentinelClient();
    const started = performance.now();
    try {
      for (;;) {
        const replicas = ((await sentinel.call('SENTINEL', 'replicas', g.name).catch(() => [])) ??
          []) as string[][];
        const known = replicas.some((fields) => {
          const f = Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]]] : [])));
          return (
            Number(f.port) === g.replica.port(0) && f.flags === 'slave' && f['master-link-status'] === 'ok'
          );
        });
        if (known) return;
        if (performance.now() - started > 30_000)
          throw new Error(`the Sentinel did not see ${g.name}'s replica`);
        await sleep(100);
      }
    } finally {
      sentinel.disconnect();
    }
  }
}

/** A replica of the primary on `primaryPort`, replicating through a {@link LagProxy}. */
async function laggingReplica(
  primaryPort: number,
  lagMs: number,
): Promise<{ replica: RedisNodes; proxy: LagProxy }> {
  const proxy = await LagProxy.start(primaryPort, lagMs);
  const replica = await RedisNodes.start(1, { extraArgs: ['--replicaof', '127.0.0.1', String(proxy.port)] });
  return { replica, proxy };
}
