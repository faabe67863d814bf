import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseServer, inTempDir, serverUser, spawnServer } from './child-processes.js';
import { onFreePort } from './free-port.js';

/** Options for {@link PostgresServer.start}. */
export interface PostgresServerOptions {
  /** Address to listen on (default 127.0.0.1; trust authentication, so keep it on loopback). */
  host?: string;
  /**
   * Directory holding `initdb` and `postgres`. Default: the one on PATH, else the newest
   * `/usr/lib/postgresql/<version>/bin` (Debian keeps the server binaries off PATH).
   */
  binDir?: string;
  /**
   * Server settings (`-c name=value`). The defaults trade durability for speed, as a test server
   * may: `fsync=off`, `synchronous_commit=off`, `full_page_writes=off`.
   */
  settings?: Record<string, string>;
  /** How long initdb + start may take, ms (default 60000). */
  startTimeout?: number;
}

/**
 * A throw-away PostgreSQL server for integration tests: `initdb` on a temp directory, `postgres`
 * on a free loopback port with trust authentication, superuser `postgres`, database `postgres`.
 * The server is a child process ended by its pid (fast shutdown) in {@link close}, or on process
 * exit if close was never reached; its directory is removed.
 *
 * PostgreSQL refuses to run as root: when the tests run as root, the server runs as the
 * `postgres` system user (which Debian's `postgresql` package creates).
 *
 * ```ts
 * const pg = await PostgresServer.start();
 * try { const pool = new Pool({ connectionString: pg.url }); ... } finally { await pg.close(); }
 * ```
 */
export class PostgresServer extends DatabaseServer {
  /** Initialises a cluster and starts it; throws with install instructions when PostgreSQL is missing. */
  static async start(options: PostgresServerOptions = {}): Promise<PostgresServer> {
    const binDir = options.binDir ?? findBinDir();
    const owner = serverUser('postgres', 'PostgreSQL', 'postgresql');
    const host = options.host ?? '127.0.0.1';
    const timeoutMs = options.startTimeout ?? 60_000;
    return inTempDir('pg-server-', owner, async (dir) => {
      const data = join(dir.path, 'data');
      const init = spawnSync(
        join(binDir, 'initdb'),
        ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
        { cwd: dir.path, encoding: 'utf8', timeout: timeoutMs, ...owner },
      );
      if (init.status !== 0)
        throw new Error(`initdb failed (${init.status ?? init.error?.message}):\n${init.stderr ?? ''}`);
      const settings = {
        fsync: 'off',
        synchronous_commit: 'off',
        full_page_writes: 'off',
        ...options.settings,
      };
      return onFreePort(host, async (port) => {
        const args = ['-D', data, '-p', String(port), '-h', host, '-k', dir.path];
        for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
        const { ready } = spawnServer(join(binDir, 'postgres'), args, {
          cwd: dir.path,
          ...owner,
          ready: 'database system is ready to accept connections',
          name: `postgres on port ${port}`,
          timeoutMs,
          exitSignal: 'SIGQUIT',
          stopSignal: 'SIGINT', // fast shutdown: ends sessions, checkpoints, exits
        });
        return new PostgresServer(await ready, dir, host, port, 'SIGINT');
      });
    });
  }

  /** `postgres://postgres@host:port/postgres`, for `new Pool({ connectionString })`. */
  get url(): string {
    return `postgres://postgres@${this.host}:${this.port}/postgres`;
  }
}

/** The directory holding initdb, or an error that says how to install PostgreSQL. */
function findBinDir(): string {
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return join(root, versions[0], 'bin');
  throw new Error(
    'PostgreSQL server binaries (initdb, postgres) were not found on PATH or under /usr/lib/postgresql. ' +
      'Install them: `sudo apt-get install -y postgresql` (Debian/Ubuntu) or `brew install postgresql` (macOS).',
  );
}
