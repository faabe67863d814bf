#!/usr/bin/env node
/**
 * Builds the servers of the compatibility matrix (`npm run test:servers`) from the source archives in
 * `../shared/servers` (a folder beside the clone, as CI has it; NQL_SERVERS_SRC overrides), once:
 * each build lands in a cache outside the repository, keyed by the archive's sha256, and later runs
 * reuse it. Plain Node, no dependencies; needs tar, make and a C compiler (gcc).
 *
 *   node scripts/build-servers.mjs [--json]
 *
 * The cache is `$NQL_SERVERS_CACHE`, else `$XDG_CACHE_HOME/nest-quorum-lock/servers`, else
 * `~/.cache/nest-quorum-lock/servers`; one folder per archive, `<archive name>-<sha256's first 16>/`,
 * holding the server binary and its cli (`bin/valkey-server` and `bin/valkey-cli`, or the `redis-`
 * ones) and `build.json`. A build
 * happens in a temporary folder beside it and is renamed into place when complete, so an interrupted
 * build is never reused and two concurrent runs do not see each other's half-built tree.
 *
 * Logs one line per archive on stderr ("built ... in 97 s" or "reused ..."); with --json, prints
 * the list of servers on stdout: [{ name, version, archive, sha256, binary, cli }].
 * Exits 0 with an empty list (and a line saying why) when the source folder does not exist.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Where the archives are: NQL_SERVERS_SRC, else `../shared/servers` beside the clone. */
export function sourceDir(env = process.env) {
  return env.NQL_SERVERS_SRC ? resolve(env.NQL_SERVERS_SRC) : resolve(root, '..', 'shared', 'servers');
}

/** Where the builds are kept (outside the repository). */
export function cacheDir(env = process.env) {
  if (env.NQL_SERVERS_CACHE) return resolve(env.NQL_SERVERS_CACHE);
  const base = env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), '.cache');
  return join(base, 'nest-quorum-lock', 'servers');
}

/**
 * `valkey-8.0.1.tar.gz` -> { name: 'valkey', version: '8.0.1', folder: 'valkey-8.0.1', server:
 * 'valkey-server' }; undefined for an archive that is not a server's source.
 */
export function parseArchiveName(file) {
  const m = /^(valkey|redis)-(\d+\.\d+\.\d+)\.tar\.gz$/.exec(file);
  if (!m) return undefined;
  return {
    name: m[1],
    version: m[2],
    folder: `${m[1]}-${m[2]}`,
    server: `${m[1]}-server`,
    cli: `${m[1]}-cli`,
  };
}

function sha256(path) {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${cmd} could not be run: ${r.error.message}`);
  if (r.status !== 0) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}) in ${cwd}:\n${out.slice(-4000)}`);
  }
  return r.stdout;
}

/** Builds one archive into the cache, or reuses the build there. Returns its entry. */
export function buildOne(archive, cache, log = (line) => process.stderr.write(`${line}\n`)) {
  const meta = parseArchiveName(basename(archive));
  if (!meta) throw new Error(`${archive} is not named <valkey|redis>-<x.y.z>.tar.gz`);
  const hash = sha256(archive);
  const dir = join(cache, `${meta.folder}-${hash.slice(0, 16)}`);
  const binary = join(dir, 'bin', meta.server);
  const cli = join(dir, 'bin', meta.cli);
  const entry = { name: meta.name, version: meta.version, archive, sha256: hash, binary, cli };
  if (existsSync(join(dir, 'build.json')) && existsSync(binary) && existsSync(cli)) {
    log(`build-servers: reused ${meta.folder} (sha256 ${hash.slice(0, 16)}) from ${dir}`);
    return entry;
  }
  mkdirSync(cache, { recursive: true });
  const work = mkdtempSync(join(cache, `.building-${meta.folder}-`));
  const started = Date.now();
  log(`build-servers: building ${meta.folder} (sha256 ${hash.slice(0, 16)}) in ${work} ...`);
  try {
    run('tar', ['-xzf', archive, '-C', work], work);
    const srcTree = join(work, meta.folder);
    // BUILD_TLS=no: no OpenSSL headers needed, and the tests use no TLS on these servers.
    run('make', ['-j2', 'BUILD_TLS=no'], srcTree);
    const staged = join(work, 'out');
    mkdirSync(join(staged, 'bin'), { recursive: true });
    // The server, and its cli beside it (RedisClusterNodes joins a cluster with the cli it finds there).
    for (const file of [meta.server, meta.cli]) cpSync(join(srcTree, 'src', file), join(staged, 'bin', file));
    const seconds = Math.round((Date.now() - started) / 1000);
    writeFileSync(
      join(staged, 'build.json'),
      `${JSON.stringify({ ...entry, builtAt: new Date().toISOString(), seconds }, null, 2)}\n`,
    );
    rmSync(dir, { recursive: true, force: true }); // an older layout of the same build
    try {
      renameSync(staged, dir);
    } catch (err) {
      // Another run finished the same build first: use it.
      if (!existsSync(join(dir, 'build.json'))) throw err;
    }
    log(`build-servers: built ${meta.folder} in ${seconds} s -> ${binary}`);
    return entry;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every server archive of the source folder, built or reused; [] when the folder does not exist. */
export function buildAll(env = process.env, log = (line) => process.stderr.write(`${line}\n`)) {
  const src = sourceDir(env);
  if (!existsSync(src)) {
    log(`build-servers: no server sources at ${src}: nothing to build`);
    return [];
  }
  const archives = readdirSync(src)
    .filter((f) => parseArchiveName(f))
    .sort();
  const cache = cacheDir(env);
  return archives.map((file) => buildOne(join(src, file), cache, log));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const servers = buildAll();
    if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(servers, null, 2)}\n`);
  } catch (err) {
    process.stderr.write(`build-servers: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
