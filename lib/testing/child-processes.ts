import {
  spawn,
  spawnSync,
  type ChildProcess,
  type SpawnOptions,
  type SpawnSyncOptions,
} from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/*
 * What the server launchers (RedisNodes, SentinelGroup, PostgresServer, MariaDbServer) share: a
 * server process started and waited for, ended by its pid, and ended (its temporary directory
 * removed) when the test process exits without closing it.
 */

/** Server processes started by this process and still running, with the signal that ends each at exit. */
const live = new Map<ChildProcess, NodeJS.Signals>();
/** Temporary directories of servers not closed yet. */
const liveDirs = new Set<string>();
let exitHookInstalled = false;

/** Last resort: a test process that exits without close() still ends its servers, by pid. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [child, signal] of live) signalProcess(child, signal);
    for (const dir of liveDirs) removeDir(dir);
  });
}

/** A temporary directory, removed on exit if {@link removeDir} was never reached. */
export function tempDir(prefix: string): string {
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  liveDirs.add(dir);
  return dir;
}

export function removeDir(dir: string): void {
  liveDirs.delete(dir);
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // a server may still be writing its last files; a temp dir left behind is harmless
  }
}

/** Runs `start` in a new temporary directory, which is removed when it fails. */
export async function inTempDir<T>(prefix: string, start: (dir: string) => Promise<T>): Promise<T> {
  const dir = tempDir(prefix);
  try {
    return await start(dir);
  } catch (err) {
    removeDir(dir);
    throw err;
  }
}

/** Runs a server's one-off setup (initdb, mariadb-install-db); throws with its output when it fails. */
export function runSetup(command: string, args: readonly string[], options: SpawnSyncOptions): void {
  const run = spawnSync(command, args, { ...options, encoding: 'utf8' });
  if (run.status === 0) return;
  const output = `${run.stdout ?? ''}${run.stderr ?? ''}`;
  throw new Error(`${basename(command)} failed (${run.status ?? run.error?.message}):\n${output}`);
}

/**
 * A server process a launcher started, with its temporary directory (PostgresServer,
 * MariaDbServer): its address, its pid, and {@link close}, by pid.
 */
export class LaunchedServer {
  private closed = false;

  protected constructor(
    private readonly proc: ChildProcess,
    private readonly dir: string,
    /** Address the server listens on. */
    readonly host: string,
    /** TCP port the server listens on. */
    readonly port: number,
    /** How the server is asked to shut down. */
    private readonly stopSignal: NodeJS.Signals,
  ) {}

  /** pid of the server process (undefined once it has exited). */
  get pid(): number | undefined {
    return this.proc.exitCode === null && this.proc.signalCode === null ? this.proc.pid : undefined;
  }

  /** Asks the server to shut down, by pid (SIGKILL after 10 s), then removes its directory. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await endProcess(this.proc, this.stopSignal);
    removeDir(this.dir);
  }
}

/** What {@link startProcess} runs, and how it tells the server is ready. */
export interface ServerLaunch {
  /** Names the server in errors (`redis-server on port 6379`). */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** Text the server prints (stdout or stderr) once it accepts connections. */
  readonly ready: string;
  readonly timeoutMs: number;
  /** The signal that ends it when the test process exits without closing it (default SIGKILL). */
  readonly exitSignal?: NodeJS.Signals;
  readonly spawn?: SpawnOptions;
}

/** Starts a server process and resolves once it printed `ready`; rejects (the process ended) otherwise. */
export function startProcess(launch: ServerLaunch): Promise<ChildProcess> {
  installExitHook();
  const proc = spawn(launch.command, launch.args, { ...launch.spawn, stdio: ['ignore', 'pipe', 'pipe'] });
  live.set(proc, launch.exitSignal ?? 'SIGKILL');
  proc.once('exit', () => live.delete(proc));
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(launch.ready)) finish();
    };
    const finish = (problem?: string) => {
      clearTimeout(timer);
      proc.off('exit', onExit);
      proc.stdout?.off('data', onData);
      proc.stderr?.off('data', onData);
      // Keep draining the pipes so a chatty server never blocks on a full pipe.
      proc.stdout?.resume();
      proc.stderr?.resume();
      if (problem === undefined) return resolve(proc);
      void endProcess(proc, 'SIGKILL');
      reject(new Error(`${launch.name} ${problem}:\n${output.slice(-2000)}`));
    };
    const onExit = (code: number | null) => finish(`exited (${code}) while starting`);
    const timer = setTimeout(() => finish(`did not start within ${launch.timeoutMs} ms`), launch.timeoutMs);
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', onExit);
  });
}

function signalProcess(proc: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (proc.pid) process.kill(proc.pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Sends `signal` to `proc` by its pid (resuming it first: a stopped process must run to end) and
 * resolves once it has exited, sending SIGKILL after `killAfterMs`.
 */
export function endProcess(proc: ChildProcess, signal: NodeJS.Signals, killAfterMs = 10_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => signalProcess(proc, 'SIGKILL'), killAfterMs);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    signalProcess(proc, 'SIGCONT');
    signalProcess(proc, signal);
  });
}

/**
 * The system user `user` when running as root (`server` refuses root); undefined otherwise. Throws
 * with how to get one when there is none (`install` is the Debian package that creates it).
 */
export function serverUser(
  user: string,
  server: string,
  install: string,
): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, user], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0)
    throw new Error(
      `${server} refuses to run as root and there is no \`${user}\` system user to run it as. ` +
        `Run the tests as another user, or create one: \`sudo apt-get install -y ${install}\` does.`,
    );
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Polls `condition` (an error counts as false) every 50 ms until it holds, at most `ms`. */
export async function until(condition: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await condition().catch(() => false))) {
    if (performance.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Checks that redis-server can be run; otherwise says how to install it. */
export function assertRedisServerInstalled(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH. Install it: `sudo apt-get install -y redis-server` (Debian/Ubuntu) ' +
        'or `brew install redis` (macOS), then run again.',
    );
  }
}
