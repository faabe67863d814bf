import { spawnSync } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { DatabaseServer, inTempDir, serverUser, spawnServer } from './child-processes.js';
import { onFreePort } from './free-port.js';

/** Options for {@link MariaDbServer.start}. */
export interface MariaDbServerOptions {
  /** Address to listen on (default 127.0.0.1; `root` has no password, so keep it on loopback). */
  host?: string;
  /**
   * Server settings (`--name=value`). The defaults trade durability for speed, as a test server
   * may: `innodb_flush_log_at_trx_commit=0`, `innodb_doublewrite=0`, no binary log, a small buffer
   * pool and redo log.
   */
  settings?: Record<string, string>;
  /** How long mariadb-install-db + start may take, ms (default 60000). */
  startTimeout?: number;
}

/** The database {@link MariaDbServer} creates at start (and its URL names). */
const DATABASE = 'test';

/**
 * A throw-away MariaDB server for integration tests: `mariadb-install-db` on a temp directory,
 * `mariadbd` on a free loopback port, user `root` without a password, database `test`. The server
 * is a child process ended by its pid (SIGTERM: a clean shutdown) in {@link close}, or on process
 * exit if close was never reached; its directory is removed.
 *
 * mariadbd refuses to run as root unless told `--user=root`: when the tests run as root, the
 * server runs as the `mysql` system user instead (which Debian's `mariadb-server` package creates).
 *
 * ```ts
 * const db = await MariaDbServer.start();
 * try { const pool = mysql.createPool(db.url); ... } finally { await db.close(); }
 * ```
 */
export class MariaDbServer extends DatabaseServer {
  /** Initialises a data directory and starts the server; throws with install instructions when MariaDB is missing. */
  static async start(options: MariaDbServerOptions = {}): Promise<MariaDbServer> {
    const binaries = findBinaries();
    const owner = serverUser('mysql', 'mariadbd', 'mariadb-server');
    const host = options.host ?? '127.0.0.1';
    const timeoutMs = options.startTimeout ?? 60_000;
    return inTempDir('mariadb-server-', owner, async (dir) => {
      const initFile = join(dir.path, 'init.sql');
      writeFileSync(initFile, `CREATE DATABASE IF NOT EXISTS ${DATABASE};\n`);
      const settings: Record<string, string> = {
        innodb_buffer_pool_size: '64M',
        innodb_log_file_size: '8M',
        innodb_flush_log_at_trx_commit: '0',
        innodb_doublewrite: '0',
        ...options.settings,
      };
      const serverArgs = [
        '--no-defaults',
        `--datadir=${join(dir.path, 'data')}`,
        '--skip-log-bin',
        '--skip-name-resolve',
        ...Object.entries(settings).map(([name, value]) => `--${name}=${value}`),
      ];
      const initArgs = [...serverArgs, '--auth-root-authentication-method=normal', '--skip-test-db'];
      if (owner) initArgs.push('--user=mysql');
      const init = spawnSync(binaries.installDb, initArgs, {
        cwd: dir.path,
        encoding: 'utf8',
        timeout: timeoutMs,
      });
      if (init.status !== 0)
        throw new Error(
          `mariadb-install-db failed (${init.status ?? init.error?.message}):\n${(init.stdout ?? '') + (init.stderr ?? '')}`,
        );
      return onFreePort(host, async (port) => {
        const file = (name: string) => join(dir.path, name);
        const args = [`--port=${port}`, `--bind-address=${host}`, `--socket=${file('mariadb.sock')}`];
        args.push(`--pid-file=${file('mariadb.pid')}`, `--init-file=${initFile}`);
        const { ready } = spawnServer(binaries.server, [...serverArgs, ...args], {
          cwd: dir.path,
          ...owner,
          ready: 'ready for connections',
          name: `mariadbd on port ${port}`,
          timeoutMs,
          stopSignal: 'SIGTERM', // a clean shutdown
        });
        return new MariaDbServer(await ready, dir, host, port, 'SIGTERM');
      });
    });
  }

  /** `mysql://root@host:port/test`, for mysql2's `createPool(url)` and the ORMs' `url` options. */
  get url(): string {
    return `mysql://root@${this.host}:${this.port}/${DATABASE}`;
  }

  /** The database the server was started with: `test`. */
  get database(): string {
    return DATABASE;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** mariadbd and mariadb-install-db (Debian keeps mariadbd in /usr/sbin, off a user's PATH). */
function findBinaries(): { server: string; installDb: string } {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/bin'];
  const find = (name: string) => dirs.map((d) => join(d, name)).find(executable);
  const server = find('mariadbd');
  const installDb = find('mariadb-install-db');
  if (server && installDb) return { server, installDb };
  throw new Error(
    'MariaDB server binaries (mariadbd, mariadb-install-db) were not found on PATH or in /usr/sbin. ' +
      'Install them: `sudo apt-get install -y mariadb-server` (Debian/Ubuntu) or `brew install mariadb` (macOS).',
  );
}
