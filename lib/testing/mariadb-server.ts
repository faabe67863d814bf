import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { endOnExit, endProcess, removeOnExit, serverUser, untilPrinted } from './child-processes.js';
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
export class MariaDbServer {
  private closed = false;

  private constructor(
    private readonly proc: ChildProcess,
    private readonly removeDir: () => void,
    /** Address the server listens on. */
    readonly host: string,
    /** TCP port the server listens on. */
    readonly port: number,
  ) {}

  /** Initialises a data directory and starts the server; throws with install instructions when MariaDB is missing. */
  static async start(options: MariaDbServerOptions = {}): Promise<MariaDbServer> {
    const binaries = findBinaries();
    const owner = serverUser('mysql', 'mariadbd', 'mariadb-server');
    const host = options.host ?? '127.0.0.1';
    const timeout = options.startTimeout ?? 60_000;
    const dir = mkdtempSync(join(tmpdir(), 'mariadb-server-'));
    const removeDir = removeOnExit(dir);
    try {
      const data = join(dir, 'data');
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
      const serverArgs = [
        `--datadir=${data}`,
        '--skip-log-bin',
        '--skip-name-resolve',
        ...Object.entries(settings).map(([name, value]) => `--${name}=${value}`),
      ];
      const init = spawnSync(
        binaries.installDb,
        [
          '--no-defaults',
          ...serverArgs,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          ...(owner ? ['--user=mysql'] : []),
        ],
        { cwd: dir, encoding: 'utf8', timeout },
      );
      if (init.status !== 0)
        throw new Error(
          `mariadb-install-db failed (${init.status ?? init.error?.message}):\n${(init.stdout ?? '') + (init.stderr ?? '')}`,
        );
      return await onFreePort(host, async (port) => {
        const proc = spawn(
          binaries.server,
          [
            '--no-defaults',
            ...serverArgs,
            `--port=${port}`,
            `--bind-address=${host}`,
            `--socket=${join(dir, 'mariadb.sock')}`,
            `--pid-file=${join(dir, 'mariadb.pid')}`,
            `--init-file=${initFile}`,
          ],
          { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...(owner ?? {}) },
        );
        endOnExit(proc, 'SIGKILL');
        try {
          await untilPrinted(proc, 'ready for connections', `mariadbd on port ${port}`, timeout);
        } catch (err) {
          await endProcess(proc, 'SIGTERM', 10_000);
          throw err;
        }
        return new MariaDbServer(proc, removeDir, host, port);
      });
    } catch (err) {
      removeDir();
      throw err;
    }
  }

  /** `mysql://root@host:port/test`, for mysql2's `createPool(url)` and the ORMs' `url` options. */
  get url(): string {
    return `mysql://root@${this.host}:${this.port}/${DATABASE}`;
  }

  /** The database the server was started with: `test`. */
  get database(): string {
    return DATABASE;
  }

  /** pid of mariadbd (undefined once it has exited). */
  get pid(): number | undefined {
    return this.proc.exitCode === null && this.proc.signalCode === null ? this.proc.pid : undefined;
  }

  /** Shutdown (SIGTERM) by pid, SIGKILL after 10 s, then removes the directory. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await endProcess(this.proc, 'SIGTERM', 10_000); // clean shutdown
    this.removeDir();
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
