/**
 * The network layer of the fault suite (TESTING.md S16-S19): each lock node is a "host" of its own,
 * a Linux network namespace with a veth link to the root namespace and a private /30, and its
 * redis-server runs inside it (`ip netns exec NS redis-server`, bound to the namespace's address).
 * The workers stay in the root namespace and reach the nodes over the veth links, so a fault is a
 * property of the network, not of a process:
 *
 * - partition: the namespace side of the link goes down. The root side loses its carrier but keeps
 *   its route (flagged `linkdown`), so packets to the node are dropped on the link; taking the root
 *   side down instead would delete that route and send the node's traffic to the default gateway.
 * - asymmetric: an nftables rule inside the namespace drops every TCP segment with a payload that
 *   leaves the redis port. Commands arrive, run and are acknowledged at the TCP level; the replies
 *   never leave.
 *
 * Addresses are /30s of 10.231.0.0/16, chosen free at start; no other address receives traffic.
 * Names carry the pid of the test process and a run counter, so parallel runs never collide.
 * Everything created is removed by {@link NetworkNodes.close}, and by exit and signal hooks when a
 * test process dies first (by name and pid, never by pattern). A run that was SIGKILLed leaves its
 * namespaces behind; the next run removes those of dead pids (see {@link sweepStaleNamespaces}).
 *
 * Needs root, iproute2 with `ip netns`, redis-server, and for S19 nftables (`apt-get install -y
 * nftables`). {@link netnsSupport} says why not when something is missing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { redisServerVersion, type Persistence } from '../../lib/testing/index.js';

/** The port every node listens on, inside its own namespace. */
export const REDIS_PORT = 6379;
/** Interface name of the link's namespace side (the same in every namespace: names are per namespace). */
const NS_IF = 'eth0';
/** The nftables table S19 adds inside a node's namespace. */
const ASYM_TABLE = 'nql_asym';

const NAMESPACE = /^nql-(\d+)-\d+-\d+$/;
const ROOT_LINK = /^nq(\d+)x\d+x\d+$/;

/** Runs `ip` (or any command) and returns stdout; a failure throws with the command's stderr. */
function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 10_000 });
  if (r.error || r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.error?.message}): ${r.stderr?.trim()}`);
  }
  return r.stdout;
}

/** Like {@link run}, but ignores failures (cleanup of something that may already be gone). */
function tryRun(cmd: string, args: string[]): void {
  spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

let support: { ok: boolean; reason?: string } | undefined;

/**
 * Whether namespaced nodes can run here: root, `ip netns` (probed by creating and deleting a
 * namespace of our own), and redis-server. Cached; `reason` says what is missing.
 */
export function netnsSupport(): { ok: boolean; reason?: string } {
  if (support) return support;
  if (process.platform !== 'linux') return (support = { ok: false, reason: 'not Linux' });
  if (process.getuid?.() !== 0) {
    return (support = { ok: false, reason: `not root (uid ${process.getuid?.()}): ip netns needs root` });
  }
  try {
    redisServerVersion();
  } catch (err) {
    return (support = { ok: false, reason: (err as Error).message });
  }
  const probe = `nql-${process.pid}-0-9`;
  try {
    run('ip', ['netns', 'add', probe]);
    run('ip', ['netns', 'del', probe]);
  } catch (err) {
    return (support = { ok: false, reason: `ip netns does not work here: ${(err as Error).message}` });
  }
  return (support = { ok: true });
}

let nftSupportResult: { ok: boolean; reason?: string } | undefined;

/**
 * Whether the asymmetric fault (S19) can run: namespaces work ({@link netnsSupport}), `nft` (Debian
 * `nftables`) is installed, and the kernel takes an nftables table inside a namespace (probed in a
 * namespace of our own; a container may lack nf_tables). Cached; `reason` says what is missing.
 */
export function nftSupport(): { ok: boolean; reason?: string } {
  if (nftSupportResult) return nftSupportResult;
  const net = netnsSupport();
  if (!net.ok) return (nftSupportResult = net);
  if (spawnSync('nft', ['--version']).status !== 0) {
    return (nftSupportResult = {
      ok: false,
      reason: 'nft is not installed: `apt-get install -y nftables` (npm test installs it when run as root)',
    });
  }
  const probe = `nql-${process.pid}-0-8`;
  try {
    run('ip', ['netns', 'add', probe]);
    run('ip', ['netns', 'exec', probe, 'nft', 'add', 'table', 'inet', 'nql_probe']);
    nftSupportResult = { ok: true };
  } catch (err) {
    nftSupportResult = {
      ok: false,
      reason: `nftables does not work in a namespace here: ${(err as Error).message}`,
    };
  } finally {
    tryRun('ip', ['netns', 'del', probe]);
  }
  return nftSupportResult;
}

/** Whether S19's nftables rule can be used here (see {@link nftSupport} for why not). */
export function nftAvailable(): boolean {
  return nftSupport().ok;
}

// ---- cleanup on every way out -------------------------------------------------------------------

const liveProcs = new Set<ChildProcess>();
const liveNamespaces = new Set<string>();
const liveLinks = new Set<string>();
let hooksInstalled = false;

/** Synchronous, for exit hooks: ends our redis-servers, deletes our links, then our namespaces. */
function cleanupSync(): void {
  for (const proc of liveProcs) {
    try {
      if (proc.pid) {
        process.kill(proc.pid, 'SIGCONT');
        process.kill(proc.pid, 'SIGKILL');
      }
    } catch {
      // already gone
    }
  }
  liveProcs.clear();
  for (const link of liveLinks) tryRun('ip', ['link', 'del', link]);
  liveLinks.clear();
  for (const ns of liveNamespaces) removeNamespace(ns);
  liveNamespaces.clear();
}

/** Kills what still runs inside namespace `ns` (only our redis-servers ever do), then deletes it. */
function removeNamespace(ns: string): void {
  let pids: number[] = [];
  try {
    pids = run('ip', ['netns', 'pids', ns]).split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // the namespace is gone already
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  tryRun('ip', ['netns', 'del', ns]);
}

/**
 * Cleanup when the test process ends without {@link NetworkNodes.close}. Two layers, because under
 * Jest the `process` a test file sees is a copy whose events never fire (jest-util's
 * createProcessObject), so `process.on('exit')` alone would never run:
 * - hooks on `process` (they work when this module runs outside Jest, e.g. from a script);
 * - a reaper: a detached shell in its own session that waits for this pid to end (however it ends:
 *   a failed test, SIGINT, SIGTERM or SIGKILL, or a whole process group killed), then ends what
 *   still runs in our namespaces and deletes the namespaces and links named after this pid.
 */
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', cleanupSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      cleanupSync();
      process.off(signal, onSignal);
      // Die of the same signal as we would have without this hook (unless someone else handles it).
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
  const pid = process.pid;
  const reaper = spawn(
    'sh',
    [
      '-c',
      `while kill -0 ${pid} 2>/dev/null; do sleep 0.5; done
for ns in $(ip netns list | cut -d' ' -f1 | grep '^nql-${pid}-'); do
  for p in $(ip netns pids "$ns"); do kill -9 "$p"; done
  ip netns del "$ns"
done
for link in $(ip -o link show | cut -d: -f2 | cut -d@ -f1 | grep '^ *nq${pid}x'); do ip link del "$link"; done`,
    ],
    { detached: true, stdio: 'ignore' },
  );
  reaper.unref();
}

/**
 * Removes the namespaces and root-side links a previous test process left behind when it was
 * SIGKILLed (no hook runs then): only names of our scheme whose creating pid is no longer alive.
 */
export function sweepStaleNamespaces(): string[] {
  const removed: string[] = [];
  for (const line of run('ip', ['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = NAMESPACE.exec(name);
    if (m && !alive(Number(m[1]))) {
      removeNamespace(name);
      removed.push(name);
    }
  }
  for (const line of run('ip', ['-o', 'link', 'show']).split('\n')) {
    const name = /^\d+:\s+([^@:]+)/.exec(line)?.[1] ?? '';
    const m = ROOT_LINK.exec(name);
    if (m && !alive(Number(m[1]))) {
      tryRun('ip', ['link', 'del', name]);
      removed.push(name);
    }
  }
  return removed;
}

// ---- addresses ----------------------------------------------------------------------------------

/** The /30 number `slot` of 10.231.0.0/16: [root side, namespace side]. */
function slotAddresses(slot: number): [string, string] {
  const base = `10.231.${slot >> 6}.`;
  const host = (slot & 63) * 4;
  return [`${base}${host + 1}`, `${base}${host + 2}`];
}

/** `count` /30 slots whose addresses no interface of the root namespace uses yet. */
function freeSlots(count: number, seed: number): number[] {
  const used = run('ip', ['-4', '-o', 'addr', 'show']);
  const slots: number[] = [];
  for (let k = 0; k < 16384 && slots.length < count; k++) {
    const slot = (seed + k) % 16384;
    const [rootSide] = slotAddresses(slot);
    if (!used.includes(` ${rootSide}/`)) slots.push(slot);
  }
  if (slots.length < count) throw new Error('no free /30 left in 10.231.0.0/16');
  return slots;
}

// ---- nodes --------------------------------------------------------------------------------------

/** One namespaced node. */
interface Host {
  index: number;
  /** Network namespace name. */
  ns: string;
  /** Root-side veth name. */
  link: string;
  /** Root-side address (the workers' source address towards this node). */
  gateway: string;
  /** The node's address. */
  address: string;
  proc?: ChildProcess;
  partitioned: boolean;
  droppingReplies: boolean;
}

export interface NetworkNodesOptions {
  persistence?: Persistence;
  debugCommands?: boolean;
}

let runs = 0;

/**
 * `count` redis-server lock nodes, each in its own network namespace. It offers what the fault
 * harness's {@link FaultEnv} uses of `RedisNodes` (urls, pid, kill, stop, resume, restart, revive,
 * close) plus the network faults: {@link partition}, {@link heal} and {@link dropReplies}.
 */
export class NetworkNodes {
  private closed = false;

  private constructor(
    private readonly hosts: Host[],
    private readonly dir: string,
    private readonly options: NetworkNodesOptions,
  ) {}

  /** Creates the namespaces and links, and starts a node in each. Throws if {@link netnsSupport} fails. */
  static async start(count = 5, options: NetworkNodesOptions = {}): Promise<NetworkNodes> {
    const supported = netnsSupport();
    if (!supported.ok) throw new Error(`network namespaces unavailable: ${supported.reason}`);
    installHooks();
    sweepStaleNamespaces();
    const runId = ++runs;
    const slots = freeSlots(count, (process.pid * 8 + runId * count) % 16384);
    const hosts: Host[] = slots.map((slot, index) => {
      const [gateway, address] = slotAddresses(slot);
      return {
        index,
        ns: `nql-${process.pid}-${runId}-${index}`,
        link: `nq${process.pid}x${runId}x${index}`,
        gateway,
        address,
        partitioned: false,
        droppingReplies: false,
      };
    });
    const nodes = new NetworkNodes(hosts, mkdtempSync(join(tmpdir(), 'redis-netns-')), options);
    try {
      for (const host of hosts) nodes.createHost(host);
      await Promise.all(hosts.map((h) => nodes.launch(h)));
    } catch (err) {
      await nodes.close();
      throw err;
    }
    return nodes;
  }

  private createHost(h: Host): void {
    liveNamespaces.add(h.ns);
    run('ip', ['netns', 'add', h.ns]);
    liveLinks.add(h.link);
    // The peer is created straight inside the namespace, so its fixed name never clashes.
    run('ip', ['link', 'add', h.link, 'type', 'veth', 'peer', 'name', NS_IF, 'netns', h.ns]);
    run('ip', ['addr', 'add', `${h.gateway}/30`, 'dev', h.link]);
    run('ip', ['link', 'set', h.link, 'up']);
    run('ip', ['-n', h.ns, 'addr', 'add', `${h.address}/30`, 'dev', NS_IF]);
    run('ip', ['-n', h.ns, 'link', 'set', NS_IF, 'up']);
    // Loopback inside the namespace: the harness reads a node through it while its link is faulty.
    run('ip', ['-n', h.ns, 'link', 'set', 'lo', 'up']);
  }

  get count(): number {
    return this.hosts.length;
  }

  get urls(): string[] {
    return this.hosts.map((_, i) => this.url(i));
  }

  url(index: number): string {
    return `redis://${this.host(index).address}:${REDIS_PORT}`;
  }

  /** The node's address, its namespace and the root-side link name. */
  describe(index: number): { address: string; namespace: string; link: string } {
    const h = this.host(index);
    return { address: h.address, namespace: h.ns, link: h.link };
  }

  pid(index: number): number | undefined {
    return this.host(index).proc?.pid;
  }

  async kill(index: number): Promise<void> {
    const h = this.host(index);
    const proc = h.proc;
    h.proc = undefined;
    if (proc) await endProcess(proc);
  }

  stop(index: number): void {
    const pid = this.pid(index);
    if (!pid) throw new Error(`node ${index} is not running`);
    process.kill(pid, 'SIGSTOP');
  }

  resume(index: number): void {
    const pid = this.pid(index);
    if (!pid) throw new Error(`node ${index} is not running`);
    process.kill(pid, 'SIGCONT');
  }

  async restart(index: number): Promise<void> {
    await this.kill(index);
    if ((this.options.persistence ?? 'none') === 'none') {
      rmSync(this.nodeDir(index), { recursive: true, force: true });
    }
    await this.launch(this.host(index));
  }

  async revive(index: number): Promise<void> {
    const h = this.host(index);
    if (!h.proc) await this.launch(h);
  }

  /**
   * Cuts nodes off: the namespace side of each link goes down. Connections stay open on both ends
   * and nothing is reset; segments are dropped until {@link heal}, as on a real partition.
   */
  partition(indices: readonly number[]): void {
    for (const i of indices) {
      const h = this.host(i);
      run('ip', ['-n', h.ns, 'link', 'set', NS_IF, 'down']);
      h.partitioned = true;
    }
  }

  /** Brings the links of `indices` (default: every partitioned node) back up. */
  heal(indices: readonly number[] = this.hosts.filter((h) => h.partitioned).map((h) => h.index)): void {
    for (const i of indices) {
      const h = this.host(i);
      run('ip', ['-n', h.ns, 'link', 'set', NS_IF, 'up']);
      h.partitioned = false;
    }
  }

  /** Indices of the nodes whose link is down. */
  get partitioned(): number[] {
    return this.hosts.filter((h) => h.partitioned).map((h) => h.index);
  }

  /**
   * Checks that traffic to every node, partitioned or not, is routed over its own link: a route
   * that fell back to the default gateway would send test traffic out of the machine.
   */
  assertRoutedLocally(): void {
    for (const h of this.hosts) {
      const route = run('ip', ['route', 'get', h.address]);
      if (!route.includes(`dev ${h.link} `)) {
        throw new Error(`traffic to node ${h.index} (${h.address}) would leave over: ${route.trim()}`);
      }
    }
  }

  /**
   * Asymmetric fault on node `index`: inside its namespace, nftables drops every TCP segment that
   * carries a payload (`@ih` is the transport payload; a segment without one fails the match) from
   * the redis port out of the link. Commands still arrive and run, and are ACKed; replies are lost.
   * Loopback inside the namespace is not touched (see {@link readInside}). Returns the undo.
   */
  dropReplies(index: number): () => void {
    const h = this.host(index);
    run(
      'ip',
      ['netns', 'exec', h.ns, 'nft', '-f', '-'],
      `table inet ${ASYM_TABLE} {\n` +
        '  chain output {\n' +
        '    type filter hook output priority 0; policy accept;\n' +
        `    oifname "${NS_IF}" tcp sport ${REDIS_PORT} @ih,0,8 0-255 counter drop\n` +
        '  }\n' +
        '}\n',
    );
    h.droppingReplies = true;
    return () => {
      if (!h.droppingReplies) return;
      h.droppingReplies = false;
      run('ip', ['netns', 'exec', h.ns, 'nft', 'delete', 'table', 'inet', ASYM_TABLE]);
    };
  }

  /** Packets the asymmetric rule of node `index` dropped so far (0 without the rule). */
  droppedReplies(index: number): number {
    const h = this.host(index);
    if (!h.droppingReplies) return 0;
    const listing = run('ip', ['netns', 'exec', h.ns, 'nft', 'list', 'table', 'inet', ASYM_TABLE]);
    return Number(/counter packets (\d+)/.exec(listing)?.[1] ?? 0);
  }

  /**
   * Runs a redis command on node `index` from inside its namespace, over loopback (redis-cli),
   * so that it works whatever the node's link does.
   */
  readInside(index: number, ...command: string[]): string {
    const h = this.host(index);
    return run('ip', [
      'netns',
      'exec',
      h.ns,
      'redis-cli',
      '-h',
      '127.0.0.1',
      '-p',
      String(REDIS_PORT),
      ...command,
    ]).trim();
  }

  /**
   * Proves the asymmetric fault on node `index` works as meant: a SET sent from the root namespace
   * over a fresh TCP connection gets no reply within `timeoutMs`, yet the value is on the node
   * (read over its loopback). A raw socket, because a client library's handshake (CLIENT SETNAME,
   * the ready check) would itself wait for replies forever.
   */
  async probeAsymmetric(index: number, timeoutMs = 500): Promise<{ replied: boolean; landed: boolean }> {
    const key = `nql:probe:${process.pid}:${Date.now()}`;
    const socket = createConnection({ host: this.host(index).address, port: REDIS_PORT });
    socket.on('error', () => undefined);
    try {
      // The TCP handshake carries no payload in the node's direction, so the rule lets it through.
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      let timer: NodeJS.Timeout | undefined;
      const replied = new Promise<boolean>((resolve) => {
        socket.once('data', () => resolve(true));
        timer = setTimeout(() => resolve(false), timeoutMs);
      }).finally(() => clearTimeout(timer));
      const args = ['SET', key, 'landed', 'PX', '10000'];
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
      const gotReply = await replied;
      return { replied: gotReply, landed: this.readInside(index, 'GET', key) === 'landed' };
    } finally {
      socket.destroy();
    }
  }

  /** Ends every node by pid, deletes every link and namespace, removes the data directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.hosts.map((h) => this.kill(h.index)));
    for (const h of this.hosts) {
      tryRun('ip', ['link', 'del', h.link]);
      liveLinks.delete(h.link);
      removeNamespace(h.ns);
      liveNamespaces.delete(h.ns);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private host(index: number): Host {
    const h = this.hosts[index];
    if (!h) throw new RangeError(`No node ${index}: there are ${this.hosts.length}`);
    return h;
  }

  private nodeDir(index: number): string {
    return join(this.dir, `node-${index}`);
  }

  private launch(h: Host): Promise<void> {
    const dir = this.nodeDir(h.index);
    mkdirSync(dir, { recursive: true });
    const args = [
      ...['netns', 'exec', h.ns, redisServerVersion().binary], // REDIS_SERVER_BIN, else redis-server
      ...['--bind', h.address, '127.0.0.1', '--port', String(REDIS_PORT), '--dir', dir],
      ...['--daemonize', 'no', '--protected-mode', 'no', '--save', ''],
      ...(this.options.persistence === 'aof-always'
        ? ['--appendonly', 'yes', '--appendfsync', 'always']
        : ['--appendonly', 'no']),
      ...(this.options.debugCommands ? ['--enable-debug-command', 'local'] : []),
    ];
    // `ip netns exec` enters the namespace and execs redis-server: the pid is the server's.
    const proc = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    h.proc = proc;
    liveProcs.add(proc);
    proc.once('exit', () => liveProcs.delete(proc));
    return new Promise((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => {
        void endProcess(proc);
        reject(new Error(`redis-server in ${h.ns} did not start within 10 s:\n${output.slice(-2000)}`));
      }, 10_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          proc.off('exit', onExit);
          proc.stdout?.off('data', onData);
          proc.stdout?.resume(); // keep draining: a full pipe would block the server
          proc.stderr?.resume();
          resolve();
        }
      };
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`redis-server in ${h.ns} exited (${code}) while starting:\n${output.slice(-2000)}`));
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      proc.once('exit', onExit);
    });
  }
}

function endProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    try {
      process.kill(proc.pid!, 'SIGCONT');
      process.kill(proc.pid!, 'SIGKILL');
    } catch {
      resolve();
    }
  });
}

/** For tests of this module: the names this process has created and not removed yet. */
export function liveNetworkResources(): { namespaces: string[]; links: string[]; processes: number[] } {
  return {
    namespaces: [...liveNamespaces],
    links: [...liveLinks],
    processes: [...liveProcs].map((p) => p.pid!).filter(Boolean),
  };
}

/** Whether namespace `name` exists (for tests of the cleanup). */
export function namespaceExists(name: string): boolean {
  return run('ip', ['netns', 'list'])
    .split('\n')
    .some((line) => line.split(' ')[0] === name);
}

/** Whether a link named `name` exists in the root namespace (for tests of the cleanup). */
export function linkExists(name: string): boolean {
  return spawnSync('ip', ['link', 'show', name], { stdio: 'ignore' }).status === 0;
}
