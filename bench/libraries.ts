import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis, type RedisOptions } from 'ioredis';
import { Redlock as OurRedlock, type RedlockNode } from 'nest-quorum-lock';
import Redlock from 'redlock';
import { RedlockMutex } from 'redis-semaphore';
import { GlideClient } from '@valkey/valkey-glide';
import { createClient } from 'redis';
import { createRedlock, IoredisAdapter, NodeRedisAdapter } from 'redlock-universal';
import { benchTelemetry } from './otel.js';
import { within, STALLED } from './stats.js';

/** Identifies a library (a column of the result table). */
export type LibraryId =
  | 'ours'
  | 'ours-baseline'
  | 'ours-autopipe'
  | 'ours-otel'
  | 'ours-noclock'
  | 'ours-node-redis'
  | 'ours-glide'
  | 'redlock5'
  | 'semaphore'
  | 'universal'
  | 'universal-node-redis';

/** What every benchmark needs from a held lock. */
export interface HeldHandle {
  release(): Promise<unknown>;
}

/** One instance of a lock library with its own connections to every node. */
export interface LockClient {
  /** Acquires `resource`, waiting (with the library's own retry strategy) up to the configured budget. */
  acquire(resource: string): Promise<HeldHandle>;
  /** Closes the connections this client opened. */
  close(): Promise<void>;
}

/** Settings given to every library alike. */
export interface ClientSettings {
  /** Lease, ms. */
  readonly ttl: number;
  /** Wait budget for a busy lock, ms; each library keeps its own retry strategy within it. */
  readonly wait: number;
  /** Our per-node timeout, ms (peers have no equivalent, or keep their default). */
  readonly nodeTimeout: number;
}

/** A lock library under test. */
export interface Library {
  readonly id: LibraryId;
  /** Column title. */
  readonly label: string;
  /** The npm package. */
  readonly packageName: string;
  /** npm package and the version installed here, for the report. */
  readonly pkg: string;
  /** How the library is configured to wait for a busy lock (printed with the results). */
  describeWaiting(settings: ClientSettings): string;
  open(urls: readonly string[], settings: ClientSettings): Promise<LockClient>;
}

/** Connects plain ioredis clients (default options, as a user of the peer would) and waits until ready. */
async function connectAll(urls: readonly string[], extra: RedisOptions = {}): Promise<Redis[]> {
  const clients = urls.map((url) => new Redis(url, extra));
  for (const c of clients) c.on('error', () => undefined); // a stopped node must not crash the bench
  await Promise.all(clients.map((c) => c.ping()));
  return clients;
}

function disconnectAll(clients: readonly Redis[]): Promise<void> {
  // disconnect(), not quit(): QUIT waits for a reply that a SIGSTOPped node never sends.
  for (const c of clients) c.disconnect();
  return Promise.resolve();
}

/**
 * The part of our engine's API the benchmarks use, typed structurally so that another build (the
 * baseline, loaded from its own dist/) fits as well as this repository's.
 */
interface Engine {
  connect(): Promise<unknown>;
  acquire(resource: string): Promise<HeldHandle>;
  close(): Promise<unknown>;
}

/** The constructor options every build of our engine accepts. */
interface EngineOptions {
  nodes: RedlockNode[];
  ttl: number;
  wait: number;
  nodeTimeout: number;
  telemetry?: ReturnType<typeof benchTelemetry>;
}

type EngineClass = new (options: EngineOptions) => Engine;

const WAITING_OURS = (s: ClientSettings) =>
  `wait ${s.wait} ms: FIFO queue on every node; a release hands the lock itself to the first waiter (pub/sub to it alone), who holds it once a majority has, without a round of its own; otherwise the holder's PTTL, re-checked every 1 s`;

/** Our engine. Nodes are given as URLs (connections owned by the engine), like most users will. */
function ours(
  id: 'ours' | 'ours-baseline' | 'ours-autopipe' | 'ours-otel' | 'ours-noclock',
  label: string,
  pkg: string,
  Engine: EngineClass,
  nodeOptions: RedisOptions | undefined,
  withTelemetry = false,
  engineOptions: { clockGuard?: false } = {},
): Library {
  return {
    id,
    label,
    packageName: 'nest-quorum-lock',
    pkg,
    describeWaiting: WAITING_OURS,
    async open(urls, s) {
      const nodes: RedlockNode[] = urls.map((url) =>
        nodeOptions ? { ...redisOptionsFromUrl(url), ...nodeOptions } : url,
      );
      const telemetry = withTelemetry ? benchTelemetry() : undefined;
      const engine = new Engine({
        nodes,
        ttl: s.ttl,
        wait: s.wait,
        nodeTimeout: s.nodeTimeout,
        telemetry,
        ...engineOptions,
      });
      await engine.connect();
      return {
        acquire: (resource) => engine.acquire(resource),
        close: async () => {
          await within(engine.close(), 5_000);
          await telemetry?.shutdown();
        },
      };
    },
  };
}

/**
 * Another build of our engine, from the dist/ directory of another commit (`--baseline <dir>`):
 * measured in the same run as this build, in the same interleaved rounds, so that "no slower than
 * before" is a ratio of one run instead of a comparison of two runs on a machine that drifts.
 * The build resolves its own imports (ioredis) from where it sits; give it this repository's
 * node_modules (a symlink) so that both builds run the same ioredis.
 */
export async function baselineLibrary(dir: string): Promise<Library> {
  const root = resolve(dir);
  const entry = join(root, 'index.js');
  if (!existsSync(entry))
    throw new Error(`--baseline ${dir}: no index.js there (give a built dist/ directory)`);
  const loaded = (await import(pathToFileURL(entry).href)) as { Redlock?: EngineClass };
  if (typeof loaded.Redlock !== 'function')
    throw new Error(`--baseline ${dir}: index.js exports no Redlock class`);
  return ours(
    'ours-baseline',
    'ours@baseline',
    `nest-quorum-lock ${describeBuild(root)}`,
    loaded.Redlock,
    undefined,
  );
}

/** "(commit abc1234, /tmp/baseline/dist)" when the build sits in a git work tree, else its path. */
function describeBuild(root: string): string {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `(commit ${commit}, ${root})`;
  } catch {
    return `(${root})`;
  }
}

function redisOptionsFromUrl(url: string): RedisOptions {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/** node-redlock v5: retries every retryDelay +- retryJitter (200 +- 100 ms by default). */
const redlock5: Library = {
  id: 'redlock5',
  label: 'redlock@5',
  packageName: 'redlock',
  pkg: `redlock@${packageVersion('redlock')}`,
  describeWaiting: (s) =>
    `default 200 +- 100 ms polling, retryCount ${redlock5Retries(s.wait)} (>= ${s.wait} ms)`,
  async open(urls, s) {
    const clients = await connectAll(urls);
    const redlock = new Redlock(clients, { retryCount: redlock5Retries(s.wait) });
    // Every vote against (a busy key) is emitted as 'error'; without a listener EventEmitter throws.
    redlock.on('error', () => undefined);
    return {
      async acquire(resource) {
        const lock = await redlock.acquire([resource], s.ttl);
        return { release: () => lock.release() };
      },
      close: () => disconnectAll(clients),
    };
  },
};

/** Enough attempts that even the shortest delays (retryDelay - retryJitter) fill the wait budget. */
function redlock5Retries(wait: number): number {
  return Math.ceil(wait / (200 - 100));
}

/** redis-semaphore's RedlockMutex: polls every 10 ms until acquireTimeout (10 s by default). */
const semaphore: Library = {
  id: 'semaphore',
  label: 'redis-semaphore',
  packageName: 'redis-semaphore',
  pkg: `redis-semaphore@${packageVersion('redis-semaphore')} (RedlockMutex)`,
  describeWaiting: (s) => `default 10 ms polling, acquireTimeout ${s.wait} ms`,
  async open(urls, s) {
    const clients = await connectAll(urls);
    return {
      async acquire(resource) {
        // One mutex object per acquisition, as request handlers typically create them.
        const mutex = new RedlockMutex(clients, resource, { lockTimeout: s.ttl, acquireTimeout: s.wait });
        await mutex.acquire();
        return { release: () => mutex.release() };
      },
      close: () => disconnectAll(clients),
    };
  },
};

/** redlock-universal's RedLock: retries every 200 ms (distributed default); 5 s per-command timeout. */
const universal: Library = {
  id: 'universal',
  label: 'redlock-universal',
  packageName: 'redlock-universal',
  pkg: `redlock-universal@${packageVersion('redlock-universal')}`,
  describeWaiting: (s) => `default 200 ms polling, retryAttempts ${Math.ceil(s.wait / 200)} (${s.wait} ms)`,
  async open(urls, s) {
    const clients = await connectAll(urls);
    const adapters = clients.map((c) => new IoredisAdapter(c));
    const retryAttempts = Math.ceil(s.wait / 200);
    return {
      async acquire(resource) {
        const lock = createRedlock({ adapters, key: resource, ttl: s.ttl, retryAttempts });
        const handle = await lock.acquire();
        return { release: () => lock.release(handle) };
      },
      close: () => disconnectAll(clients),
    };
  },
};

/** node-redis 6 clients (default options, RESP3), connected. */
async function nodeRedisClients(urls: readonly string[]) {
  const clients = urls.map((url) => createClient({ url }));
  for (const c of clients) c.on('error', () => undefined); // a stopped node must not crash the bench
  await Promise.all(clients.map((c) => c.connect()));
  return clients;
}

/** Our engine on node-redis: URLs opened by the engine with node-redis (`client: 'node-redis'`). */
const oursNodeRedis: Library = {
  id: 'ours-node-redis',
  label: 'ours (node-redis)',
  packageName: 'nest-quorum-lock',
  pkg: `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/) on redis@${packageVersion('redis')}`,
  describeWaiting: WAITING_OURS,
  async open(urls, s) {
    const engine = new OurRedlock({
      nodes: [...urls],
      client: 'node-redis',
      ttl: s.ttl,
      wait: s.wait,
      nodeTimeout: s.nodeTimeout,
    });
    await engine.connect();
    return {
      acquire: (resource) => engine.acquire(resource),
      close: async () => {
        await within(engine.close(), 5_000);
      },
    };
  },
};

/** Our engine on Valkey GLIDE: a GlideClient per node, passed in (GLIDE's default request timeout). */
const oursGlide: Library = {
  id: 'ours-glide',
  label: 'ours (GLIDE)',
  packageName: 'nest-quorum-lock',
  pkg: `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/) on @valkey/valkey-glide@${packageVersion('@valkey/valkey-glide')}`,
  describeWaiting: WAITING_OURS,
  async open(urls, s) {
    const clients = await Promise.all(
      urls.map((url) => {
        const { hostname, port } = new URL(url);
        return GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
      }),
    );
    const engine = new OurRedlock({ nodes: clients, ttl: s.ttl, wait: s.wait, nodeTimeout: s.nodeTimeout });
    await engine.connect();
    return {
      acquire: (resource) => engine.acquire(resource),
      close: async () => {
        await within(engine.close(), 5_000);
        for (const c of clients) c.close();
      },
    };
  },
};

/** redlock-universal's RedLock on node-redis clients (its NodeRedisAdapter). */
const universalNodeRedis: Library = {
  id: 'universal-node-redis',
  label: 'redlock-universal (node-redis)',
  packageName: 'redlock-universal',
  pkg: `redlock-universal@${packageVersion('redlock-universal')} on redis@${packageVersion('redis')}`,
  describeWaiting: (s) => `default 200 ms polling, retryAttempts ${Math.ceil(s.wait / 200)} (${s.wait} ms)`,
  async open(urls, s) {
    const clients = await nodeRedisClients(urls);
    const adapters = clients.map((c) => new NodeRedisAdapter(c as never));
    const retryAttempts = Math.ceil(s.wait / 200);
    return {
      async acquire(resource) {
        const lock = createRedlock({ adapters, key: resource, ttl: s.ttl, retryAttempts });
        const handle = await lock.acquire();
        return { release: () => lock.release(handle) };
      },
      close: async () => {
        for (const c of clients) c.destroy();
      },
    };
  },
};

/** Every library, in column order. `ours-otel`, `ours-autopipe` and `ours-noclock` only run when BENCH_LIBS names them. */
export const ALL_LIBRARIES: readonly Library[] = [
  ours(
    'ours',
    'ours',
    `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/)`,
    OurRedlock,
    undefined,
  ),
  oursNodeRedis,
  oursGlide,
  redlock5,
  semaphore,
  universal,
  universalNodeRedis,
  ours(
    'ours-otel',
    'ours+otel',
    `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/) with OpenTelemetry SDK providers (metrics + spans)`,
    OurRedlock,
    undefined,
    true,
  ),
  ours(
    'ours-autopipe',
    'ours+autopipelining',
    `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/) with enableAutoPipelining`,
    OurRedlock,
    { enableAutoPipelining: true },
  ),
  // What the clock guard costs: the same engine with `clockGuard: false` (BENCH_LIBS=ours,ours-noclock).
  ours(
    'ours-noclock',
    'ours, clockGuard off',
    `nest-quorum-lock@${packageVersion('nest-quorum-lock')} (this repo, dist/) with clockGuard: false`,
    OurRedlock,
    undefined,
    false,
    { clockGuard: false },
  ),
];

const DEFAULT_LIBRARIES: readonly LibraryId[] = ['ours', 'redlock5', 'semaphore', 'universal'];

/**
 * The libraries selected by BENCH_LIBS (ids), or the default set, with the baseline build (if
 * any) right after ours so that the two builds sit side by side. Throws on an unknown id.
 */
export function selectLibraries(ids: readonly string[] | undefined, baseline?: Library): Library[] {
  const wanted = (ids ?? DEFAULT_LIBRARIES).filter((id) => id !== 'ours-baseline');
  for (const id of wanted) {
    if (!ALL_LIBRARIES.some((l) => l.id === id)) {
      throw new Error(
        `Unknown library "${id}" in BENCH_LIBS; known: ${ALL_LIBRARIES.map((l) => l.id).join(', ')}`,
      );
    }
  }
  if (!baseline && ids?.includes('ours-baseline')) {
    throw new Error(
      'BENCH_LIBS names ours-baseline: give the build with --baseline <dist dir> or BENCH_BASELINE',
    );
  }
  const selected = ALL_LIBRARIES.filter((l) => wanted.includes(l.id));
  if (baseline) selected.splice(selected.findIndex((l) => l.id === 'ours') + 1, 0, baseline);
  return selected;
}

/**
 * Checks that a library runs here (e.g. redlock-universal declares Node >= 22): one acquire and
 * release on a scratch key. Resolves undefined when it works, else the reason.
 */
export async function smokeTest(
  lib: Library,
  urls: readonly string[],
  settings: ClientSettings,
): Promise<string | undefined> {
  let client: LockClient | undefined;
  try {
    const opened = await within(lib.open(urls, settings), 10_000);
    if (opened === STALLED) return 'could not connect within 10 s';
    client = opened;
    const held = await within(client.acquire(`bench:smoke:${lib.id}`), 10_000);
    if (held === STALLED) return 'acquire did not settle within 10 s';
    await held.release();
    return undefined;
  } catch (err) {
    return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  } finally {
    await client?.close();
  }
}

/** `engines.node` of an installed package, or undefined. */
export function packageEngines(name: string): string | undefined {
  return readPackageJson(name)?.engines?.node;
}

function packageVersion(name: string): string {
  return readPackageJson(name)?.version?.replace(/^v/, '') ?? '?';
}

interface PackageJson {
  version?: string;
  engines?: { node?: string };
}

/** Reads an installed package's package.json, walking up from its resolved entry point. */
function readPackageJson(name: string): PackageJson | undefined {
  try {
    let dir = dirname(fileURLToPath(import.meta.resolve(name)));
    for (;;) {
      const file = join(dir, 'package.json');
      if (existsSync(file)) {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as PackageJson & { name?: string };
        if (pkg.name === name) return pkg;
      }
      const parent = dirname(dir);
      if (parent === dir) return undefined;
      dir = parent;
    }
  } catch {
    return undefined;
  }
}
