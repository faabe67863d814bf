import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { markFreshNodeAt } from '../core/guards/fresh-node.js';
import { NodeNotFreshError } from '../core/errors.js';
import { DEFAULTS } from '../core/options.js';
import { testClient } from './ioredis-module.js';
import type { IoRedisTestClient } from './test-clients.js';
import { endProcess, spawnServer, tempDir } from './child-processes.js';
import { onReservedPort, releasePorts, serverArgs } from './redis-node-process.js';
import { assertRedisServerInstalled, type RedisServerVersion } from './redis-server-binary.js';

export { assertRedisServerInstalled } from './redis-server-binary.js';

/** How a node keeps its data across a restart (`aof-everysec`: may lose the last second of writes). */
export type Persistence = 'none' | 'aof-always' | 'aof-everysec';

/** Options for the nodes {@link RedisNodes.start} launches. */
export interface RedisNodesOptions {
  /**
   * The server binary to run: a path, or a name on PATH (`valkey-server`). Default: the
   * `REDIS_SERVER_BIN` environment variable, else `redis-server`.
   */
  serverBinary?: string;
  /** Default `none` (`--save '' --appendonly no`): a restart loses everything. */
  persistence?: Persistence;
  /** Start with `--enable-debug-command local` (for DEBUG SLEEP and friends). */
  debugCommands?: boolean;
  /** `requirepass` for every node. */
  password?: string;
  /** An ACL user to create on every node: `{ username, password }` with full rights. */
  aclUser?: { username: string; password: string };
  /** Serve TLS only (no plain port), with these PEM files. */
  tls?: { certFile: string; keyFile: string; caFile: string };
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Extra server arguments for every node. */
  extraArgs?: string[];
  /** How long one node may take to start, ms (default 10000). */
  startTimeout?: number;
  /**
   * Extra environment variables of node `index`'s process, on every (re)start: e.g. an LD_PRELOAD
   * library that steps the node's wall clock in a test of clock faults.
   */
  env?: (index: number) => Record<string, string>;
  /**
   * The key prefixes (the engine's `keyPrefix`) the nodes are recorded fresh for when the set starts
   * (`markFreshNode`): an engine with one of them lets them vote at once, the restart guard on. The
   * record names each server's run_id, so a node restarted later ({@link RedisNodes.restart},
   * {@link RedisNodes.revive}) is another server and abstains for `restartGuard`, as in production.
   * Default `['redlock:']` (the engine's default prefix), where `extraArgs` left the nodes standalone
   * primaries (a replica or a Cluster node is left unrecorded); `[]` records nothing (new nodes abstain).
   */
  freshFor?: readonly string[];
}

/** One running (or stopped) server of a {@link RedisNodes} set. */
export interface RedisNodeInfo {
  readonly index: number;
  readonly host: string;
  readonly port: number;
  /** `redis://host:port` (or `rediss://`), with the password when one is set. */
  readonly url: string;
  /** pid of the current process, undefined while killed. */
  readonly pid: number | undefined;
}

/**
 * Starts real `redis-server` processes on free loopback ports, for integration tests of code that
 * locks (yours and ours), and injects faults into them: kill (SIGKILL), stop (SIGSTOP), resume,
 * restart on the same port with or without persistence. Every process is ended by its pid in
 * {@link close}, and on process exit if close was never reached. Another server binary (a
 * `valkey-server`, a Redis built from source) is run with the `serverBinary` option or the
 * `REDIS_SERVER_BIN` environment variable; {@link server} says which one runs.
 *
 * ```ts
 * const redis = await RedisNodes.start(5);
 * try { ... redis.urls ... } finally { await redis.close(); }
 * const valkey = await RedisNodes.start(3, { serverBinary: 'valkey-server' });
 * ```
 */
export class RedisNodes {
  private readonly dir = tempDir('redis-nodes-');
  private readonly host: string;
  private readonly procs: Array<ChildProcess | undefined>;
  private readonly persistence: Persistence[];
  private readonly clients = new Map<number, IoRedisTestClient>();
  private closed = false;

  private constructor(
    /** The binary the nodes run, and which server and version it is (its `--version`). */
    readonly server: RedisServerVersion,
    private readonly options: RedisNodesOptions,
    readonly ports: readonly number[],
  ) {
    this.host = options.host ?? '127.0.0.1';
    this.procs = ports.map(() => undefined);
    this.persistence = ports.map(() => options.persistence ?? 'none');
  }

  /**
   * Starts `count` nodes. Throws with install instructions when the server binary cannot be run
   * (`redis-server` not on PATH, or the one `serverBinary` / `REDIS_SERVER_BIN` names).
   */
  static async start(count = 5, options: RedisNodesOptions = {}): Promise<RedisNodes> {
    const server = assertRedisServerInstalled(options.serverBinary);
    const ports: number[] = Array.from({ length: count }, () => 0);
    const nodes = new RedisNodes(server, options, ports);
    // allSettled: a node still retrying must not spawn a process after close() below.
    const launched = await Promise.allSettled(
      ports.map((_, i) =>
        onReservedPort(nodes.host, (port) => {
          ports[i] = port;
          return nodes.launch(i);
        }),
      ),
    );
    const failed = launched.find((r) => r.status === 'rejected');
    const marked = failed ? [] : await Promise.allSettled(ports.map((_, i) => nodes.markFresh(i)));
    const refused = failed ?? marked.find((r) => r.status === 'rejected');
    if (refused) {
      await nodes.close();
      throw refused.reason;
    }
    return nodes;
  }

  /** Number of nodes. */
  get count(): number {
    return this.ports.length;
  }

  /** Connection URLs, one per node, in index order. */
  get urls(): string[] {
    return this.ports.map((_, i) => this.url(i));
  }

  /** The connection URL of node `index`. */
  url(index: number): string {
    const { tls, aclUser, password } = this.options;
    const [user, secret] = aclUser ? [aclUser.username, aclUser.password] : ['', password ?? ''];
    const auth = aclUser || password ? `${encodeURIComponent(user)}:${encodeURIComponent(secret)}@` : '';
    return `${tls ? 'rediss' : 'redis'}://${auth}${this.host}:${this.port(index)}`;
  }

  /** The port of node `index`. */
  port(index: number): number {
    const port = this.ports[index];
    if (port === undefined) throw new RangeError(`No node ${index}: there are ${this.count}`);
    return port;
  }

  /** Details of node `index`. */
  info(index: number): RedisNodeInfo {
    return { index, host: this.host, port: this.port(index), url: this.url(index), pid: this.pid(index) };
  }

  /** The pid of node `index`'s process (undefined while killed). */
  pid(index: number): number | undefined {
    return this.procs[index]?.pid;
  }

  /**
   * A plain ioredis client to node `index` for inspecting or seeding data in tests (cached,
   * closed by {@link close}). Not for TLS nodes.
   */
  client(index: number): IoRedisTestClient {
    let client = this.clients.get(index);
    if (!client) this.clients.set(index, (client = testClient(this.url(index), { maxRetriesPerRequest: 1 })));
    return client;
  }

  /** SIGKILL node `index` (a crash: nothing is flushed) and wait until it is gone. */
  async kill(index: number): Promise<void> {
    const proc = this.procs[index];
    if (!proc) return;
    this.procs[index] = undefined;
    await endProcess(proc, 'SIGKILL');
  }

  /** SIGSTOP node `index`: its connections stay open but nothing answers (a paused or hung node). */
  stop(index: number): void {
    this.signal(index, 'SIGSTOP');
  }

  /** SIGCONT node `index` after {@link stop}. */
  resume(index: number): void {
    this.signal(index, 'SIGCONT');
  }

  /**
   * Kills node `index` (if running) and starts it again on the same port and data directory.
   * `persistence` changes how the new process keeps data (default: as before); with `none` the
   * node comes back empty, as after a crash without persistence.
   */
  async restart(index: number, options: { persistence?: Persistence } = {}): Promise<void> {
    await this.kill(index);
    if (options.persistence) this.persistence[index] = options.persistence;
    if (this.persistence[index] === 'none') rmSync(this.nodeDir(index), { recursive: true, force: true });
    await this.launch(index);
  }

  /** Starts node `index` again after {@link kill} (same port, same data directory). */
  async revive(index: number): Promise<void> {
    if (this.procs[index]) return;
    await this.launch(index);
  }

  /** Ends every node by pid (resuming stopped ones first) and removes the data directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const client of this.clients.values()) client.disconnect();
    this.clients.clear();
    await Promise.all(this.procs.map((_, i) => this.kill(i)));
    this.dir.remove();
    releasePorts(this.ports);
  }

  /** Records node `index`, started just now, as fresh for the prefixes of `freshFor`. */
  private async markFresh(index: number): Promise<void> {
    const prefixes = this.options.freshFor ?? [DEFAULTS.keyPrefix];
    const ca = this.options.tls ? readFileSync(this.options.tls.caFile) : undefined;
    const marked = prefixes.length > 0 ? markFreshNodeAt(this.url(index), prefixes, { ca }) : undefined;
    // By default, a node that extraArgs made a replica or a Cluster node is left unrecorded.
    const unasked = (err: unknown) => this.options.freshFor === undefined && err instanceof NodeNotFreshError;
    await marked?.catch((err: unknown) => {
      if (!unasked(err)) throw err;
    });
  }

  private signal(index: number, signal: NodeJS.Signals): void {
    const proc = this.procs[index];
    if (!proc?.pid) throw new Error(`Node ${index} is not running`);
    process.kill(proc.pid, signal);
  }

  private nodeDir(index: number): string {
    return join(this.dir.path, `node-${index}`);
  }

  private launch(index: number): Promise<unknown> {
    const dir = this.nodeDir(index);
    mkdirSync(dir, { recursive: true });
    const options = { ...this.options, persistence: this.persistence[index] };
    const args = serverArgs(options, this.host, String(this.port(index)), dir);
    const { proc, ready } = spawnServer(this.server.binary, args, {
      env: this.options.env && { ...process.env, ...this.options.env(index) },
      ready: 'Ready to accept connections',
      name: `${this.server.name}-server on port ${this.port(index)}`,
      timeoutMs: this.options.startTimeout ?? 10_000,
    });
    this.procs[index] = proc;
    return ready;
  }
}
