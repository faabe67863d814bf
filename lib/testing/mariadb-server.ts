import { accessSync, chownSync, constants, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { inTempDir, LaunchedServer, runSetup, serverUser, startProcess } from './child-processes.js';
import { freePort } from './free-port.js';

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
 * is a child process ended by its pid (SIGTERM: a clean shutdown) in `close()`, or on process
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
export class MariaDbServer extends LaunchedServer {
  /** Initialises a data directory and starts the server; throws with install instructions when MariaDB is missing. */
  static async start(options: MariaDbServerOptions = {}): Promise<MariaDbServer> {
    const binaries = findBinaries();
    const owner = serverUser('mysql', 'mariadbd', 'mariadb-server');
    const host = options.host ?? '127.0.0.1';
    const timeout = options.startTimeout ?? 60_000;
    return inTempDir('mariadb-server-', async (dir) => {
      const initFile = join(dir, 'init.sql');
      writeFileSync(initFile, `CREATE DATABASE IF NOT EXISTS ${DATABASE};\n`);
      if (owner) chownSync(dir, owner.uid, owner.gid);
      const settings: Record<string, string> = {
        innodb_buffer_pool_size: '64M',
        innodb_log_file_size: '8M',
        innodb_flush_log_at_trx_commit: '0',
        innodb_doublewrite: '0',
        ...options.settings,
      };
      const serverArgs = [`--datadir=${join(dir, 'data')}`, '--skip-log-bin', '--skip-name-resolve'];
      serverArgs.push(...Object.entries(settings).map(([name, value]) => `--${name}=${value}`));
      const setup = [
        '--no-defaults',
        ...serverArgs,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ];
      runSetup(binaries.installDb, owner ? [...setup, '--user=mysql'] : setup, { cwd: dir, timeout });
      const port = await freePort(host);
      const files = [`--socket=${join(dir, 'mariadb.sock')}`, `--pid-file=${join(dir, 'mariadb.pid')}`];
      const proc = await startProcess({
        name: `mariadbd on port ${port}`,
        command: binaries.server,
        args: [
          '--no-defaults',
          ...serverArgs,
          `--port=${port}`,
          `--bind-address=${host}`,
          ...files,
          `--init-file=${initFile}`,
        ],
        ready: 'ready for connections',
        timeoutMs: timeout,
        spawn: { cwd: dir, ...owner },
      });
      return new MariaDbServer(proc, dir, host, port, 'SIGTERM');
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

/** mariadbd and mariadb-install-db (Debian keeps mariadbd in /usr/sbin, off a user's PATH). */
function findBinaries(): { server: string; installDb: string } {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/bin'];
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const find = (name: string) => dirs.map((d) => join(d, name)).find(executable);
  const [server, installDb] = [find('mariadbd'), find('mariadb-install-db')];
  if (server && installDb) return { server, installDb };
  throw new Error(
    'MariaDB server binaries (mariadbd, mariadb-install-db) were not found on PATH or in /usr/sbin. ' +
      'Install them: `sudo apt-get install -y mariadb-server` (Debian/Ubuntu) or `brew install mariadb` (macOS).',
  );
}
