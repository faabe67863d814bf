/**
 * Process plumbing of the fault-injection suite: real redis-server lock nodes and a separate fenced
 * store (via the public RedisNodes launcher), worker processes (worker.mjs, which imports the BUILT
 * library from dist/), and the faults the driver applies to them. Every process is ended by its
 * pid: by {@link FaultEnv.close}, and by an exit hook if a test process dies before that.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisNodes, type Persistence } from '../../lib/testing/index.js';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '../..');
export const WORKER = join(here, 'worker.mjs');
const DIST_ENTRY = join(ROOT, 'dist/index.js');

/** The lock key and restart-guard marker the engine uses with its default `redlock:` prefix. */
export const lockKey = (resource: string) => `redlock:{${resource}}`;
export const GUARD_MARKER = 'redlock:__restart_guard__';

export const now = (): bigint => process.hrtime.bigint();
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const between = (min: number, max: number) => min + Math.random() * (max - min);
export const nsToMs = (ns: bigint) => Number(ns) / 1e6;

/** Fails with the fix when the workers have no built library to import. */
export function assertBuilt(): void {
  if (!existsSync(DIST_ENTRY)) {
    throw new Error(
      `${DIST_ENTRY} does not exist: run npm run build first (the fault-injection workers are separate ` +
        'Node processes that import the built library, as a user would).',
    );
  }
}

/** A warning when some lib/ source is newer than the build the workers will run. */
export function staleBuildWarning(): string | undefined {
  const built = statSync(DIST_ENTRY).mtimeMs;
  let newest = 0;
  let newestFile = '';
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const m = statSync(path).mtimeMs;
        if (m > newest) [newest, newestFile] = [m, path];
      }
    }
  };
  walk(join(ROOT, 'lib'));
  return newest > built
    ? `dist/ is older than ${newestFile.slice(ROOT.length + 1)}: the fault workers run the old build; run npm run build first`
    : undefined;
}

/** What a worker process does; see worker.mjs. */
export interface WorkerConfig {
  id: string;
  history: string;
  /** URLs, or ioredis options (e.g. a Sentinel-managed primary: `{ sentinels, name }`). */
  nodes: Array<string | object>;
  store: string;
  resource: string;
  /** false: the control run, unlocked and unfenced read-modify-write. */
  lock: boolean;
  /**
   * How the store fences: 'register' (default; reads and writes carry the token) or 'writer' (the
   * library's FencedWriter after an unfenced read: write-only fencing).
   */
  fencing?: 'register' | 'writer';
  /** S1-pg: keep the counter in this PostgreSQL instead, fenced by FencedTable or not (pg-store.mjs). */
  pg?: { url: string; fenced: boolean };
  /** S1 through an ORM: the counter in PostgreSQL (TypeORM) or MariaDB (Knex), see sql-store.mjs. */
  sql?: { kind: 'typeorm-pg' | 'knex-mariadb'; url: string; fenced: boolean };
  ttl: number;
  wait: number;
  nodeTimeout: number;
  /** Omitted: the library default (max(60 s, ttl)), with the marker seeded by the harness. */
  restartGuard?: number | false;
  retryDelay?: number;
  retryJitter?: number;
  iterations?: number;
  /** Standalone runs only (`node worker.mjs '<json>'`): how long to loop. */
  durationMs?: number;
  holdMs?: [number, number];
  gapMs?: [number, number];
  /** Pause after a failed acquire before the next one. */
  failBackoffMs?: [number, number];
  watchdog?: boolean;
  pauseAt?: 'acquire' | 'hold';
  pauseEvery?: number;
  overstayMs?: number;
  /** Block the event loop this long right after sending each acquire and extension. */
  stallMs?: number;
  overstayEvery?: number;
  extendBeforeRelease?: boolean;
  skipWriteIfLost?: boolean;
  notify?: boolean;
  rounds?: boolean;
  /** S23's control: waiting tickets from the worker's own wall clock, as before issue 26. */
  clientClockTickets?: boolean;
  /** The engine's clockGuard / healHolds options (omitted: the library defaults). */
  clockGuard?: number | false;
  healHolds?: boolean;
  /** A semaphore of this many permits instead of a plain lock (S25, S26). */
  permits?: number;
  /**
   * S25's control: lock with redis-semaphore's `RedlockSemaphore` (`permits` of them) instead of
   * our engine; no tokens, so nothing is written to the fenced store.
   */
  peer?: 'redlock-semaphore';
  /**
   * S27: this share (0..1) of the acquires take `mode: 'read'`, the rest the plain (write) lock;
   * each grant logs its mode. Readers read the fenced counter and write nothing.
   */
  readShare?: number;
  /**
   * S27-control: the writes take `mode: 'read'` as well (the lock shares them with the readers),
   * log themselves as writes and read-modify-write the counter: a writer outside the lock's rules.
   */
  writeUnderReadLock?: boolean;
}

export interface WorkerMessage {
  type: string;
  i?: number;
  token?: number;
  /** A grant's mode (S27-control waits for a write's). */
  mode?: 'read' | 'write';
  ok?: boolean;
  reason?: string;
  error?: string;
}

const liveWorkers = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveWorkers) {
      try {
        if (child.pid) {
          process.kill(child.pid, 'SIGCONT');
          process.kill(child.pid, 'SIGKILL');
        }
      } catch {
        // already gone
      }
    }
  });
}

/**
 * One worker process (plain Node running worker.mjs), with IPC and signals by pid. It runs one job
 * (one worker of one scenario) at a time and is reused by later scenarios: starting Node and
 * importing the library costs more CPU than a reduced scenario's workload.
 */
export class WorkerProcess {
  private readonly events = new EventEmitter();
  private stderr = '';
  private idle = false;
  private job: { config: WorkerConfig; ended: Promise<string | undefined>; over: boolean } | undefined;
  /** Taken by a FaultEnv (until it closes). */
  leased = false;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(private readonly proc: ChildProcess) {
    this.events.setMaxListeners(100);
    proc.on('message', (m: WorkerMessage) => {
      if (m.type === 'idle') this.idle = true;
      this.events.emit('message', m);
    });
    proc.stdout?.resume();
    proc.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.exited = new Promise((res) => proc.once('exit', (code, signal) => res({ code, signal })));
  }

  /** `env`: extra environment variables (e.g. the clock shim of test/support/clock-shim.ts). */
  static spawn(env: Record<string, string> = {}): WorkerProcess {
    installExitHook();
    const proc = spawn(process.execPath, [WORKER], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, NODE_OPTIONS: '', ...env }, // not Jest's --experimental-vm-modules
    });
    liveWorkers.add(proc);
    proc.once('exit', () => liveWorkers.delete(proc));
    return new WorkerProcess(proc);
  }

  /** Starts a job as soon as the process is idle (it may still be starting). */
  start(config: WorkerConfig): void {
    const ended = new Promise<string | undefined>((res) => {
      const off = this.onMessage((m) => {
        if (m.type !== 'job-done' && m.type !== 'job-failed') return;
        off();
        res(m.type === 'job-failed' ? m.error : undefined);
      });
      void this.exited.then(({ code, signal }) => {
        off();
        res(signal === 'SIGKILL' ? undefined : `exited with ${code ?? signal}:\n${this.stderr}`);
      });
    });
    const job = { config, ended, over: false };
    void ended.then(() => (job.over = true));
    this.job = job;
    const begin = () => {
      this.idle = false;
      this.send({ type: 'job', config });
    };
    if (this.idle) begin();
    else void this.next('idle', 60_000).then((m) => m && begin());
  }

  /** The current (or last) job's configuration. */
  get config(): WorkerConfig {
    if (!this.job) throw new Error(`worker process ${this.pid} has no job`);
    return this.job.config;
  }

  get id(): string {
    return this.config.id;
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** A job was started and has not ended. */
  get busy(): boolean {
    return this.job !== undefined && !this.job.over;
  }

  get stderrTail(): string {
    return this.stderr;
  }

  /** Resolves when the job ended: undefined when it completed (or we killed it), else the error. */
  jobEnded(): Promise<string | undefined> {
    return this.job?.ended ?? Promise.resolve(undefined);
  }

  send(message: object): void {
    if (this.proc.connected) this.proc.send(message);
  }

  /** Calls `listener` for every IPC message; returns the unsubscribe function. */
  onMessage(listener: (m: WorkerMessage) => void): () => void {
    this.events.on('message', listener);
    return () => this.events.off('message', listener);
  }

  /** The next message of `type` (matching `filter`), or undefined after `timeoutMs`. */
  next(type: string, timeoutMs: number, filter: (m: WorkerMessage) => boolean = () => true) {
    return firstMessage([this], type, timeoutMs, filter).then((hit) => hit?.message);
  }

  /** SIGSTOP / SIGCONT by pid. */
  stop(): void {
    if (this.alive) process.kill(this.pid, 'SIGSTOP');
  }

  resume(): void {
    if (this.alive) process.kill(this.pid, 'SIGCONT');
  }

  /** Whether the process is in the stopped state (from /proc/<pid>/stat). */
  isStopped(): boolean {
    if (!this.alive) return false;
    try {
      const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
    } catch {
      return false;
    }
  }

  /** SIGKILL by pid (after SIGCONT, so a stopped worker dies at once) and wait for the exit. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    try {
      process.kill(this.pid, 'SIGCONT');
      process.kill(this.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await this.exited;
  }
}

/** Idle worker processes kept between scenarios; see {@link closeWorkerPool}. */
const pool = new Set<WorkerProcess>();

function leaseWorker(): WorkerProcess {
  let worker = [...pool].find((w) => !w.leased && !w.busy && w.alive);
  if (!worker) {
    worker = WorkerProcess.spawn();
    pool.add(worker);
    void worker.exited.then(() => pool.delete(worker!));
  }
  worker.leased = true;
  return worker;
}

/** Ends every pooled worker process by pid. Call it in afterAll. */
export async function closeWorkerPool(): Promise<void> {
  await Promise.all([...pool].map((w) => w.kill()));
  pool.clear();
}

/** The first message of `type` from any of `workers`, or undefined after `timeoutMs`. */
export function firstMessage(
  workers: readonly WorkerProcess[],
  type: string,
  timeoutMs: number,
  filter: (m: WorkerMessage, w: WorkerProcess) => boolean = () => true,
): Promise<{ worker: WorkerProcess; message: WorkerMessage } | undefined> {
  return new Promise((res) => {
    const offs: Array<() => void> = [];
    const done = (hit?: { worker: WorkerProcess; message: WorkerMessage }) => {
      clearTimeout(timer);
      for (const off of offs) off();
      res(hit);
    };
    const timer = setTimeout(() => done(), timeoutMs);
    for (const worker of workers) {
      offs.push(
        worker.onMessage((message) => {
          if (message.type === type && filter(message, worker)) done({ worker, message });
        }),
      );
    }
  });
}

/** A fault the driver applied, with its monotonic time window (ns). */
export interface FaultWindow {
  label: string;
  start: bigint;
  end: bigint;
}

/** A self-stopped worker the supervisor resumed. */
export interface PauseRecord {
  worker: string;
  stoppedSeenAt: bigint;
  resumedAt: bigint;
}

/**
 * What a {@link FaultEnv} drives of its lock nodes: RedisNodes (loopback), or the nodes of netns.ts
 * (each in its own network namespace).
 */
export type LockNodes = Pick<
  RedisNodes,
  'urls' | 'url' | 'pid' | 'kill' | 'stop' | 'resume' | 'restart' | 'revive' | 'close'
> & {
  /** What the workers get as `nodes`, when not `urls` (S15: Sentinel-managed primaries). */
  workerNodes?(): Array<string | object>;
};

export interface FaultEnvOptions<N extends LockNodes = RedisNodes> {
  /** Starts the lock nodes; default: RedisNodes on loopback. */
  launch?: (count: number, options: { persistence?: Persistence; debugCommands?: boolean }) => Promise<N>;
  nodes?: number;
  persistence?: Persistence;
  debugCommands?: boolean;
  /**
   * SET the restart-guard marker to "0" on every node before the run: the nodes look as if they
   * were initialised long ago (a brand-new node would otherwise abstain for the guard period).
   */
  seedGuardMarker?: boolean;
}

/** Lock nodes, a fenced store, workers and their histories for one scenario run. */
export class FaultEnv<N extends LockNodes = RedisNodes> {
  readonly workers: WorkerProcess[] = [];
  /** Worker processes started for this run only (an environment of their own): ended by close. */
  private readonly dedicated: WorkerProcess[] = [];
  readonly windows: FaultWindow[] = [];
  private readonly histories: string[] = [];
  private readonly admin = new Map<number, Redis>();
  private workerCount = 0;
  private closed = false;

  private constructor(
    readonly redis: N,
    readonly store: RedisNodes,
    readonly dir: string,
  ) {}

  static async start<N extends LockNodes = RedisNodes>(
    options: FaultEnvOptions<N> = {},
  ): Promise<FaultEnv<N>> {
    assertBuilt();
    const store = await RedisNodes.start(1);
    const launch =
      options.launch ?? ((count, o) => RedisNodes.start(count, o) as Promise<LockNodes> as Promise<N>);
    let redis: N;
    try {
      redis = await launch(options.nodes ?? 5, {
        persistence: options.persistence,
        debugCommands: options.debugCommands,
      });
    } catch (err) {
      await store.close();
      throw err;
    }
    const env = new FaultEnv(redis, store, mkdtempSync(join(tmpdir(), 'redlock-faults-')));
    try {
      if (options.seedGuardMarker) {
        await Promise.all(redis.urls.map((_, i) => env.adminClient(i).set(GUARD_MARKER, '0')));
      }
    } catch (err) {
      await env.close();
      throw err;
    }
    return env;
  }

  /** A harness connection to node `index`, named so that connection counts can leave it out. */
  adminClient(index: number): Redis {
    let client = this.admin.get(index);
    if (!client) {
      client = new Redis(this.redis.url(index), { connectionName: 'harness', maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      this.admin.set(index, client);
    }
    return client;
  }

  /**
   * Starts a worker (a pooled process, or a new one) over all lock nodes; the caller sends it `go`
   * after {@link ready}.
   */
  spawn(
    config: Omit<WorkerConfig, 'id' | 'history' | 'nodes' | 'store'> & {
      id?: string;
      /** This worker's node URLs, when not every worker's (S26: each as its own ACL user). */
      nodes?: string[];
    },
    { env }: { env?: Record<string, string> } = {},
  ): WorkerProcess {
    const id = config.id ?? `w${this.workerCount}`;
    this.workerCount++;
    const history = join(this.dir, `${id}.jsonl`);
    // A worker with an environment of its own (a stepped wall clock) is a new process, not pooled.
    const worker = env ? WorkerProcess.spawn(env) : leaseWorker();
    if (env) this.dedicated.push(worker);
    const nodes = config.nodes ?? this.redis.workerNodes?.() ?? this.redis.urls;
    worker.start({ ...config, id, history, nodes, store: this.store.url(0) });
    this.workers.push(worker);
    this.histories.push(history);
    return worker;
  }

  /** Waits until every worker connected (or throws with its stderr when one exits first). */
  async ready(workers: readonly WorkerProcess[] = this.workers, timeoutMs = 30_000): Promise<void> {
    await Promise.all(
      workers.map(async (w) => {
        const outcome = await Promise.race([
          w.next('ready', timeoutMs).then((m) => (m ? 'ready' : 'timeout')),
          w.jobEnded().then((error) => `ended (${error ?? 'killed'})`),
        ]);
        if (outcome !== 'ready')
          throw new Error(`worker ${w.id} (pid ${w.pid}) ${outcome} before it was ready`);
      }),
    );
  }

  /** Starts the workers' loops at the same monotonic instant, for `durationMs`. */
  go(
    workers: readonly WorkerProcess[],
    durationMs: number,
    delayMs = 100,
  ): { startAt: bigint; endAt: bigint } {
    const startAt = now() + BigInt(delayMs) * 1_000_000n;
    const endAt = startAt + BigInt(Math.round(durationMs)) * 1_000_000n;
    for (const w of workers) w.send({ type: 'go', startAt: String(startAt), endAt: String(endAt) });
    return { startAt, endAt };
  }

  /**
   * Waits for the workers' jobs to end on their own (a loop ends at its `go` end time, or on stop),
   * at most `timeoutMs`; a job that failed fails the run.
   */
  async finish(workers: readonly WorkerProcess[] = this.workers, timeoutMs = 30_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), timeoutMs)));
    try {
      for (const w of workers) {
        const error = await Promise.race([w.jobEnded(), deadline]);
        if (error === 'timeout')
          throw new Error(`worker ${w.id} (pid ${w.pid}) did not finish:\n${w.stderrTail}`);
        if (error !== undefined) throw new Error(`worker ${w.id} (pid ${w.pid}) failed: ${error}`);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** History files of every worker this run started (killed ones included). */
  historyFiles(): string[] {
    return this.histories.filter((f) => existsSync(f));
  }

  /** The fenced counter's final value for `resource` (either store layout, see worker.mjs). */
  async counter(resource: string): Promise<number> {
    const client = this.store.client(0);
    const value =
      (await client.get(`fs:{${resource}}:value`)) ?? (await client.hget(`fw:{${resource}}`, 'value'));
    return Number(value ?? '0');
  }

  /** Lock key value of `resource` on every node ('down' for a killed node). */
  async lockValues(resource: string): Promise<Array<string | null>> {
    return Promise.all(
      this.redis.urls.map((_, i) =>
        this.redis.pid(i) === undefined ? 'down' : this.adminClient(i).get(lockKey(resource)),
      ),
    );
  }

  /** Records a fault window (monotonic ns). */
  mark(label: string, start: bigint, end: bigint): void {
    this.windows.push({ label, start, end });
  }

  /**
   * Applies a node fault: SIGKILL, SIGSTOP, or "slow" (back-to-back `DEBUG SLEEP`, so the node
   * answers rarely and late). Resolves, once applied, with the function that heals it.
   */
  async nodeFault(fault: {
    kill?: number[];
    stop?: number[];
    slow?: number[];
  }): Promise<() => Promise<void>> {
    const kill = fault.kill ?? [];
    const stop = fault.stop ?? [];
    const slow = fault.slow ?? [];
    const slowLoops = slow.map((i) => this.slowLoop(i));
    await Promise.all(kill.map((i) => this.redis.kill(i)));
    for (const i of stop) this.redis.stop(i);
    return async () => {
      for (const i of stop) this.redis.resume(i);
      await Promise.all(slowLoops.map((end) => end()));
      await Promise.all(kill.map((i) => this.redis.revive(i)));
    };
  }

  private slowLoop(index: number): () => Promise<void> {
    const client = new Redis(this.redis.url(index), { connectionName: 'harness', maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    let active = true;
    const loop = (async () => {
      while (active) {
        await client.call('DEBUG', 'SLEEP', '0.2').catch(() => sleep(20));
        await sleep(5);
      }
    })();
    return async () => {
      active = false;
      await loop;
      client.disconnect();
    };
  }

  /**
   * Waits until node `index` has at least `count` client connections besides the harness's own
   * (the workers reconnected after a kill: their reconnect back-off can take up to 2 s).
   */
  async waitForConnections(index: number, count: number, timeoutMs = 8000): Promise<boolean> {
    const until = performance.now() + timeoutMs;
    while (performance.now() < until) {
      const list = (await this.adminClient(index)
        .call('CLIENT', 'LIST', 'TYPE', 'normal')
        .catch(() => '')) as string;
      const others = list
        .split('\n')
        .filter((line) => line.includes('addr=') && !line.includes('name=harness'));
      if (others.length >= count) return true;
      await sleep(50);
    }
    return false;
  }

  /**
   * Watches `workers` for self-inflicted SIGSTOPs (worker.mjs `pauseAt`) and resumes each after
   * `pauseMs()` ms. Call the returned stop() only once their jobs ended: a worker may still stop
   * itself in its last iteration.
   */
  superviseSelfPauses(
    workers: readonly WorkerProcess[],
    pauseMs: () => number,
  ): { pauses: PauseRecord[]; stop: () => Promise<void> } {
    const pauses: PauseRecord[] = [];
    const scheduled = new Set<WorkerProcess>();
    const timers = new Set<NodeJS.Timeout>();
    const poll = setInterval(() => {
      for (const w of workers) {
        if (scheduled.has(w) || !w.isStopped()) continue;
        scheduled.add(w);
        const seen = now();
        const timer = setTimeout(() => {
          timers.delete(timer);
          w.resume();
          pauses.push({ worker: w.id, stoppedSeenAt: seen, resumedAt: now() });
          // Forget it once it runs again, so its next self-stop is seen.
          const check = setInterval(() => {
            if (!w.alive || !w.isStopped()) {
              clearInterval(check);
              scheduled.delete(w);
            }
          }, 2);
        }, pauseMs());
        timers.add(timer);
      }
    }, 5);
    return {
      pauses,
      stop: async () => {
        clearInterval(poll);
        // Let pending pauses run their course (the workers must resume to finish).
        while (timers.size > 0) await sleep(20);
        for (const w of workers) if (w.isStopped()) w.resume();
      },
    };
  }

  /**
   * Ends every node by pid, and every worker whose job has not ended (a failed run); workers whose
   * job ended go back to the pool. Removes the histories (unless keepHistories).
   */
  async close(keepHistories = process.env.FAULTS_KEEP === '1'): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.busy || w.isStopped() || this.dedicated.includes(w)) await w.kill();
        w.leased = false;
      }),
    );
    for (const client of this.admin.values()) client.disconnect();
    this.admin.clear();
    await Promise.all([this.redis.close(), this.store.close()]);
    if (!keepHistories) rmSync(this.dir, { recursive: true, force: true });
  }
}
