import type { ChildProcess } from 'node:child_process';
import { redisServerVersion, type RedisServerVersion } from './redis-server-binary.js';

/** Server processes started by this process and still running. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Ends `proc` by its pid if this process exits first: a last resort for a test process that exits
 * without calling close() (the normal path ends every process in close()).
 */
export function endOnExit(proc: ChildProcess): void {
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        if (child.pid) process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/** Sends `signal` to `proc` (resuming it first if stopped) and resolves when it has exited. */
export function endProcess(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
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
 * Checks that the server binary (default: `$REDIS_SERVER_BIN`, else `redis-server`) can be run and
 * is a Redis or Valkey server; otherwise says how to install one. Returns what it is.
 */
export function assertRedisServerInstalled(binary?: string): RedisServerVersion {
  return redisServerVersion(binary);
}
