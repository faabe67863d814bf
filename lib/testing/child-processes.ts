import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * The one way the launchers run a server: spawned with its output piped (spawnServer), ready once
 * it prints its readiness line, ended by pid (endProcess) in close() or, as a last resort for a test
 * process that exits without calling close(), by the exit hook below, which also removes the
 * temporary directories (tempDir) that no close() removed.
 */

/** Server processes started by this process and still running, each with the signal that ends it. */
const live = new Map<ChildProcess, NodeJS.Signals>();
/** Server directories not removed yet (their server's close() removes them). */
const liveDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [child, signal] of live) sendSignal(child, signal);
    for (const dir of liveDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // the server may still be writing its last files; a temp dir left behind is harmless
      }
    }
  });
}

/** Sends `signal` to `proc`; false when it is already gone. */
function sendSignal(proc: ChildProcess, signal: NodeJS.Signals): boolean {
  try {
    if (proc.pid) process.kill(proc.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The system user a server runs as when this process runs as root (see {@link serverUser}). */
export type Owner = { uid: number; gid: number };

/** A server's temporary directory: `path`, and `remove()` (a server's close()). */
export interface TempDir {
  readonly path: string;
  remove(): void;
}

/** A new directory under the OS's temp directory, removed on process exit if remove() was not called. */
export function tempDir(prefix: string): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  liveDirs.add(path);
  installExitHook();
  return {
    path,
    remove: () => {
      liveDirs.delete(path);
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `start` in a new {@link tempDir} (owned by `owner` when given), which is removed when
 * `start` fails.
 */
export async function inTempDir<T>(
  prefix: string,
  owner: Owner | undefined,
  start: (dir: TempDir) => Promise<T>,
): Promise<T> {
  const dir = tempDir(prefix);
  try {
    if (owner) chownSync(dir.path, owner.uid, owner.gid);
    return await start(dir);
  } catch (err) {
    dir.remove();
    throw err;
  }
}

/**
 * The uid and gid of system user `user` when this process runs as root, for a server (`server`)
 * that refuses to run as root; undefined otherwise. Throws, naming the package that creates the
 * user, when there is none.
 */
export function serverUser(user: string, server: string, aptPackage: string): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, user], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0)
    throw new Error(
      `${server} refuses to run as root and there is no \`${user}\` system user to run it as. ` +
        `Run the tests as another user, or create one: \`sudo apt-get install -y ${aptPackage}\` does.`,
    );
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** The pid of `proc` while it runs; undefined once it has exited. */
export function livePid(proc: ChildProcess): number | undefined {
  return proc.exitCode === null && proc.signalCode === null ? proc.pid : undefined;
}

/**
 * Sends `signal` to `proc` (resuming it first if stopped) and resolves when it has exited; a
 * process still running `killAfterMs` later (a clean shutdown that hangs) gets SIGKILL.
 */
export function endProcess(proc: ChildProcess, signal: NodeJS.Signals, killAfterMs?: number): Promise<void> {
  if (!livePid(proc)) return Promise.resolve();
  return new Promise((resolve) => {
    const kill =
      killAfterMs === undefined ? undefined : setTimeout(() => sendSignal(proc, 'SIGKILL'), killAfterMs);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    // A stopped process must run to die cleanly.
    if (!sendSignal(proc, 'SIGCONT') || !sendSignal(proc, signal)) resolve();
  });
}

/** How {@link spawnServer} runs a server (and the spawn options: cwd, env, uid, gid). */
export interface ServerSpawn extends Omit<SpawnOptions, 'stdio'> {
  /** What the server prints (stdout or stderr) once it accepts connections. */
  ready: string;
  /** The server in error messages (`postgres on port 5433`). */
  name: string;
  /** How long it may take to print `ready`, ms. */
  timeoutMs: number;
  /** The signal that ends it if this process exits while it runs (default SIGKILL). */
  exitSignal?: NodeJS.Signals;
  /** The signal that ends it when it did not start (default SIGKILL; SIGKILL 10 s later if that hangs). */
  stopSignal?: NodeJS.Signals;
}

/**
 * Spawns a server and returns its process at once; `ready` resolves with it once it printed
 * `o.ready`. It rejects with the end of the server's output when the server exits first or has not
 * printed it within `o.timeoutMs`, the server ended by then. The pipes are drained from then on, so
 * a chatty server never blocks on a full pipe.
 */
export function spawnServer(
  command: string,
  args: string[],
  o: ServerSpawn,
): { proc: ChildProcess; ready: Promise<ChildProcess> } {
  const { ready, name, timeoutMs, exitSignal = 'SIGKILL', stopSignal = 'SIGKILL', ...spawnOptions } = o;
  const proc = spawn(command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
  live.set(proc, exitSignal);
  proc.once('exit', () => live.delete(proc));
  installExitHook();
  const printed = new Promise<ChildProcess>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(ready)) finish();
    };
    const finish = (problem?: string) => {
      clearTimeout(timer);
      proc.off('close', onExit);
      for (const pipe of [proc.stdout, proc.stderr]) pipe?.off('data', onData).resume();
      if (problem === undefined) resolve(proc);
      else reject(new Error(`${name} ${problem}:\n${output.slice(-2000)}`));
    };
    const onExit = (code: number | null) => finish(`exited (${code}) while starting`);
    const timer = setTimeout(() => finish(`did not start within ${timeoutMs} ms`), timeoutMs);
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    // 'close', not 'exit': the output that says why (a port taken) may be read after 'exit'.
    proc.once('close', onExit);
  });
  const started = printed.catch(async (err: unknown) => {
    await endProcess(proc, stopSignal, 10_000);
    throw err;
  });
  return { proc, ready: started };
}

/**
 * What `PostgresServer` and `MariaDbServer` share: one server process on `host`:`port`
 * with a temporary directory of its own, both ended by close().
 */
export abstract class DatabaseServer {
  private closed = false;

  protected constructor(
    private readonly proc: ChildProcess,
    private readonly dir: TempDir,
    /** Address the server listens on. */
    readonly host: string,
    /** TCP port the server listens on. */
    readonly port: number,
    /** The signal of a clean shutdown. */
    private readonly stopSignal: NodeJS.Signals,
  ) {}

  /** pid of the server (undefined once it has exited). */
  get pid(): number | undefined {
    return livePid(this.proc);
  }

  /** Clean shutdown by pid, SIGKILL after 10 s, then removes the directory. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await endProcess(this.proc, this.stopSignal, 10_000);
    this.dir.remove();
  }
}

/** Polls `condition` (errors count as false) until it holds; throws `<what> within <ms> ms` after `ms`. */
export async function until(
  condition: () => Promise<boolean>,
  ms = 10_000,
  what = 'condition not met',
): Promise<void> {
  const end = performance.now() + ms;
  while (!(await condition().catch(() => false))) {
    if (performance.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
