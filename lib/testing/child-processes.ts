import { spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { redisServerVersion, type RedisServerVersion } from './redis-server-binary.js';

/** Server processes started by this process and still running, each with the signal that ends it. */
const live = new Map<ChildProcess, NodeJS.Signals>();
/** Server directories not removed yet (their server's close() removes them). */
const liveDirs = new Set<string>();
let exitHookInstalled = false;

/**
 * Ends `proc` by its pid with `signal` if this process exits first: a last resort for a test
 * process that exits without calling close() (the normal path ends every process in close()).
 */
export function endOnExit(proc: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  live.set(proc, signal);
  proc.once('exit', () => live.delete(proc));
  installExitHook();
}

/**
 * Removes `dir` if this process exits before the returned function is called; that function
 * removes it now (a server's close()).
 */
export function removeOnExit(dir: string): () => void {
  liveDirs.add(dir);
  installExitHook();
  return () => {
    liveDirs.delete(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [child, signal] of live) {
      try {
        if (child.pid) process.kill(child.pid, signal);
      } catch {
        // already gone
      }
    }
    for (const dir of liveDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // the server may still be writing its last files; a temp dir left behind is harmless
      }
    }
  });
}

/**
 * The uid and gid of system user `user` when this process runs as root, for a server (`server`)
 * that refuses to run as root; undefined otherwise. Throws, naming the package that creates the
 * user, when there is none.
 */
export function serverUser(
  user: string,
  server: string,
  aptPackage: string,
): { uid: number; gid: number } | undefined {
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

/**
 * Sends `signal` to `proc` (resuming it first if stopped) and resolves when it has exited; a
 * process still running `killAfterMs` later (a clean shutdown that hangs) gets SIGKILL.
 */
export function endProcess(proc: ChildProcess, signal: NodeJS.Signals, killAfterMs?: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill =
      killAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            try {
              if (proc.pid) process.kill(proc.pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }, killAfterMs);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    try {
      if (proc.pid) {
        process.kill(proc.pid, 'SIGCONT'); // a stopped process must run to die cleanly
        process.kill(proc.pid, signal);
      }
    } catch {
      resolve();
    }
  });
}

/**
 * Resolves once `proc`, the server `name` (`postgres on port 5433`), printed `ready` on stdout or
 * stderr; rejects with the end of its output when it exits first or has not printed it within
 * `timeoutMs` (`onTimeout` runs first: ending it, where the caller wants that). The pipes are drained
 * from then on, so a chatty server never blocks on a full pipe.
 */
export function untilPrinted(
  proc: ChildProcess,
  ready: string,
  name: string,
  timeoutMs: number,
  onTimeout?: () => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(ready)) finish();
    };
    const finish = (problem?: string) => {
      clearTimeout(timer);
      proc.off('close', onExit);
      proc.stdout?.off('data', onData);
      proc.stderr?.off('data', onData);
      proc.stdout?.resume();
      proc.stderr?.resume();
      if (problem === undefined) resolve();
      else reject(new Error(`${name} ${problem}:\n${output.slice(-2000)}`));
    };
    const onExit = (code: number | null) => finish(`exited (${code}) while starting`);
    const timer = setTimeout(() => {
      onTimeout?.();
      finish(`did not start within ${timeoutMs} ms`);
    }, timeoutMs);
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    // 'close', not 'exit': the output that says why (a port taken) may be read after 'exit'.
    proc.once('close', onExit);
  });
}

/**
 * Checks that the server binary (default: `$REDIS_SERVER_BIN`, else `redis-server`) can be run and
 * is a Redis or Valkey server; otherwise says how to install one. Returns what it is.
 */
export function assertRedisServerInstalled(binary?: string): RedisServerVersion {
  return redisServerVersion(binary);
}
