import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * The environment variable that names the server binary the launchers run when their options do
 * not: a path (`/opt/valkey/bin/valkey-server`) or a name on PATH (`valkey-server`). Unset or
 * empty: `redis-server`. Set it to run a whole test suite on another server without touching the
 * tests (this repository's `npm run test:servers` does, once per server).
 */
export const REDIS_SERVER_BIN = 'REDIS_SERVER_BIN';

/** What a server binary says it is (`--version`). */
export interface RedisServerVersion {
  /** The binary as given (a path, or a name looked up on PATH). */
  readonly binary: string;
  /** `redis` or `valkey`. */
  readonly name: 'redis' | 'valkey';
  /** Its own version, e.g. `7.0.15` or `8.0.1` (Valkey's own, not the Redis version it is compatible with). */
  readonly version: string;
}

/** The server binary the launchers run by default: `$REDIS_SERVER_BIN`, else `redis-server`. */
export function defaultRedisServer(): string {
  return process.env[REDIS_SERVER_BIN] || 'redis-server';
}

/** Versions already read, by binary: `--version` costs a process start. */
const probed = new Map<string, RedisServerVersion>();

/**
 * Runs `<binary> --version` and says which server and version it is (`Redis server v=7.0.15 ...`,
 * `Valkey server v=8.0.1 ...`). Throws with how to install one when it cannot be run, and a
 * TypeError when it is not a Redis or Valkey server.
 */
export function redisServerVersion(binary: string = defaultRedisServer()): RedisServerVersion {
  const known = probed.get(binary);
  if (known) return known;
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error || probe.status !== 0) {
    const given =
      binary === 'redis-server' ? 'redis-server was not found on PATH' : `${binary} could not be run`;
    throw new Error(
      `${given}. Install it: \`sudo apt-get install -y redis-server\` (Debian/Ubuntu) or \`brew install redis\` ` +
        `(macOS), or name another server binary in ${REDIS_SERVER_BIN} (or the launcher's serverBinary option), then run again.`,
    );
  }
  const m = /^(Redis|Valkey) server v=(\S+)/m.exec(probe.stdout);
  if (!m)
    throw new TypeError(
      `${binary} --version printed "${probe.stdout.trim().slice(0, 120)}": not a Redis or Valkey server`,
    );
  const version = { binary, name: m[1]!.toLowerCase() as RedisServerVersion['name'], version: m[2]! };
  probed.set(binary, version);
  return version;
}

/**
 * Checks that the server binary (default: `$REDIS_SERVER_BIN`, else `redis-server`) can be run and
 * is a Redis or Valkey server; otherwise says how to install one. Returns what it is.
 */
export function assertRedisServerInstalled(binary?: string): RedisServerVersion {
  return redisServerVersion(binary);
}

/**
 * The cli that goes with a server binary (RedisClusterNodes joins a cluster with it): the
 * `redis-cli` or `valkey-cli` beside it (same directory, or on PATH for a bare name) when there is
 * one, else `redis-cli` on PATH (its `--cluster create` works against Valkey too).
 */
export function cliBeside(binary: string): string {
  const name = basename(binary).replace(/-server$/, '-cli');
  if (name === 'redis-cli' || !name.endsWith('-cli')) return 'redis-cli';
  if (binary.includes('/')) {
    const beside = join(dirname(binary), name);
    return existsSync(beside) ? beside : 'redis-cli';
  }
  return spawnSync(name, ['--version'], { timeout: 10_000 }).status === 0 ? name : 'redis-cli';
}
