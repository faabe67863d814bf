#!/usr/bin/env node
/**
 * Finds the system tools that the repository's own scripts need, and installs what is missing when
 * it can (root or passwordless sudo with apt-get; Homebrew on macOS). Run by the npm scripts'
 * pre-steps (`prestart:sample`, `pretest`, ...), never by the published package's install scripts.
 * Plain Node, no dependencies: it runs before anything is built.
 *
 *   node scripts/ensure-system-deps.mjs --for=sample|test|faults|soak|bench|servers [--dry-run]
 *
 * --dry-run prints what it would install and run. NQL_SETUP_PRETEND_MISSING=gcc,chromium (tool ids
 * of TOOLS) plans as if those were missing, to try the install path on a machine that has them.
 *
 * Prints nothing when everything is there; one line per thing it installs (and why); one line per
 * optional thing it leaves out (and which test skips). Exits 1, before the build, with the exact
 * command to run when something required is missing and it cannot install it.
 *
 * {@link probe} looks at the machine; {@link plan} is the pure decision (tested in
 * test/unit/ensure-system-deps.spec.ts with made-up probe results).
 */
import { Buffer } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  openSync,
  readSync,
  closeSync,
  readdirSync,
  readFileSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** What the pre-step is for: each mode needs some of the tools below. */
export const MODES = ['sample', 'test', 'faults', 'soak', 'bench', 'servers'];

/**
 * The tools. `need` maps a mode to why that mode needs the tool. `optional` (a function of the
 * probe) says when a missing tool only makes a test skip instead of stopping the run.
 */
export const TOOLS = [
  {
    id: 'redis-server',
    apt: 'redis-server',
    brew: 'redis',
    need: {
      sample: 'the sample app starts 5 local lock nodes',
      test: 'the tests start their own lock nodes',
      faults: 'the fault suite starts its own lock nodes',
      soak: 'the soak test starts its own lock nodes',
      bench: 'the benchmarks start their own lock nodes',
    },
  },
  {
    id: 'postgresql',
    apt: 'postgresql',
    brew: 'postgresql@17',
    need: {
      sample: 'the sample app keeps its accounts in a local PostgreSQL',
      test: 'the PostgreSQL fencing tests start their own server',
      faults: 'the PostgreSQL fault scenarios start their own server',
    },
  },
  {
    id: 'mariadb',
    apt: 'mariadb-server',
    brew: 'mariadb',
    need: {
      test: 'the MariaDB fencing tests start their own server (mariadbd on a temp dir and a free port)',
      faults: 'the MariaDB fault scenario starts its own server',
    },
  },
  {
    id: 'openssl',
    apt: 'openssl',
    brew: 'openssl@3',
    need: { test: 'the TLS test makes its certificates with it' },
  },
  {
    id: 'faketime',
    apt: 'faketime',
    need: { test: "the cron test shifts one instance's clock with libfaketime" },
    optional: (m) => (m.platform !== 'linux' ? 'libfaketime is preloaded on Linux only' : undefined),
  },
  {
    id: 'gcc',
    apt: 'gcc',
    need: {
      test: "the tests' clock shim is compiled with it",
      servers: 'Valkey and Redis are built from their sources with it (and the clock shim of S20)',
    },
    optional: (m) =>
      m.platform === 'darwin' ? 'on macOS the compiler comes with `xcode-select --install`' : undefined,
  },
  {
    id: 'chromium',
    apt: 'chromium',
    need: { test: 'the dashboard test loads the page in headless Chromium' },
    // Optional everywhere: without it only the dashboard test skips (and says why).
    optional: (m) =>
      m.platform !== 'linux'
        ? 'the dashboard test drives Debian-style /usr/bin/chromium (set CHROMIUM_BIN to a Chromium); it will be skipped'
        : m.chromiumStub
          ? `${m.chromiumStub} is a snap stub, which does not run here; the dashboard test will be skipped (set CHROMIUM_BIN to a real Chromium)`
          : m.distro === 'ubuntu'
            ? "Ubuntu's chromium package is a snap stub, which does not run in containers; the dashboard test will be skipped (set CHROMIUM_BIN to a real Chromium)"
            : 'without it the dashboard test is skipped',
    // Not installable where the only package is a snap stub.
    installable: (m) => m.platform === 'linux' && m.distro !== 'ubuntu' && !m.chromiumStub,
  },
  {
    id: 'make',
    apt: 'make',
    brew: 'make',
    need: { servers: 'Valkey and Redis are built from their sources with make' },
  },
  {
    id: 'nft',
    apt: 'nftables',
    need: {
      test: 'the network-partition fault tests (S19) drop replies with nftables',
      faults: 'the network-partition scenario S19 drops replies with nftables',
    },
    optional: netnsOptional,
    installable: netnsUsable,
  },
  {
    id: 'ip',
    apt: 'iproute2',
    need: {
      test: 'the network-partition fault tests (S16-S19) put nodes in network namespaces',
      faults: 'the network-partition scenarios S16-S19 put nodes in network namespaces',
      servers: 'the network-partition scenario S16 puts nodes in network namespaces',
    },
    optional: netnsOptional,
    installable: netnsUsable,
  },
];

/**
 * nft and ip only matter where the netns scenarios can run: Linux, as root. Elsewhere they are
 * neither required nor installed (a sudo install would not make the tests, run as a user, use them).
 */
function netnsUsable(m) {
  return m.platform === 'linux' && m.isRoot;
}
function netnsOptional(m) {
  if (m.platform !== 'linux')
    return 'the network-partition fault tests (S16-S19) need Linux; they will be skipped';
  if (!m.isRoot) return 'the network-partition fault tests (S16-S19) need root; they will be skipped';
  return undefined;
}

/**
 * The pure decision. `machine`: { platform, isRoot, distro ('debian' | 'ubuntu' | other),
 * present: { [toolId]: boolean }, chromiumStub?: string, hasApt, hasBrew, sudo: boolean | undefined }
 * (`sudo` is only probed when something is to be installed; pass it for tests).
 *
 * Returns { install: [{ id, pkg, why }], skip: [{ id, why }], manager: 'apt' | 'brew' | null,
 * commands: string[][] (argv to run, in order), fail: null | { missing: [ids], command: string } }.
 */
export function plan(mode, machine) {
  if (!MODES.includes(mode)) throw new Error(`unknown mode "${mode}" (one of ${MODES.join(', ')})`);
  const missing = TOOLS.filter((t) => t.need[mode] && !machine.present[t.id]);
  const manager =
    machine.platform === 'linux' && machine.hasApt
      ? 'apt'
      : machine.platform === 'darwin' && machine.hasBrew
        ? 'brew'
        : null;
  const pkgOf = (t) => (manager === 'brew' ? t.brew : t.apt);
  const installable = (t) =>
    manager !== null && Boolean(pkgOf(t)) && (t.installable ? t.installable(machine) : true);
  // apt needs root or passwordless sudo; Homebrew runs as the user (and refuses root).
  const privileged = manager === 'brew' ? !machine.isRoot : machine.isRoot || machine.sudo === true;
  const sudo = manager === 'apt' && !machine.isRoot ? ['sudo', '-n'] : [];

  const install = [];
  const skip = [];
  const unmet = [];
  for (const t of missing) {
    const optional = t.optional ? t.optional(machine) : undefined;
    if (installable(t) && privileged) install.push({ id: t.id, pkg: pkgOf(t), why: t.need[mode] });
    else if (optional !== undefined) skip.push({ id: t.id, why: optional });
    else unmet.push(t);
  }

  let fail = null;
  if (unmet.length > 0) {
    // The command to run by hand: every missing package this manager has, optional ones included.
    const pkgs = [...new Set(missing.filter((t) => installable(t)).map(pkgOf))];
    const wanted = unmet.filter((t) => installable(t));
    let command;
    if (manager === 'apt' && wanted.length === unmet.length) {
      const s = machine.isRoot ? '' : 'sudo ';
      command = `${s}apt-get update && ${s}apt-get install -y ${pkgs.join(' ')}`;
    } else if (manager === 'brew' && wanted.length === unmet.length) {
      command = `brew install ${pkgs.join(' ')}`;
    } else if (machine.platform === 'darwin') {
      command = `install Homebrew (https://brew.sh), then: brew install ${unmet
        .map((t) => t.brew ?? t.id)
        .join(' ')}`;
    } else {
      command = `install with your package manager: ${unmet.map((t) => t.id).join(', ')} (Debian/Ubuntu: sudo apt-get install -y ${unmet
        .map((t) => t.apt)
        .join(' ')})`;
    }
    fail = { missing: unmet.map((t) => t.id), command };
  }

  const commands = [];
  if (!fail && install.length > 0) {
    const pkgs = [...new Set(install.map((i) => i.pkg))];
    if (manager === 'apt') {
      const env = ['env', 'DEBIAN_FRONTEND=noninteractive'];
      const lock = ['-o', 'DPkg::Lock::Timeout=300'];
      commands.push([...sudo, ...env, 'apt-get', ...lock, 'update', '-qq']);
      commands.push([...sudo, ...env, 'apt-get', ...lock, 'install', '-y', '-qq', ...pkgs]);
    } else {
      commands.push(['brew', 'install', ...pkgs]);
    }
  }
  return { install: fail ? [] : install, skip, manager, commands, fail };
}

// ---- probing the machine (fast: file checks only; sudo is asked only when needed) ----------------

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `name` on PATH, or in the sbin folders that a non-root PATH may lack. */
function onPath(name, extra = []) {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extra];
  return dirs.some((dir) => executable(join(dir, name)));
}

function postgresPresent() {
  if (onPath('initdb') && onPath('pg_ctl')) return true;
  const root = '/usr/lib/postgresql';
  try {
    return readdirSync(root).some(
      (v) => executable(join(root, v, 'bin', 'initdb')) && executable(join(root, v, 'bin', 'pg_ctl')),
    );
  } catch {
    return false;
  }
}

/** mariadbd (in /usr/sbin on Debian, off a user's PATH) and mariadb-install-db, which the launcher runs. */
function mariadbPresent() {
  return onPath('mariadbd', ['/usr/sbin']) && onPath('mariadb-install-db', ['/usr/bin']);
}

function faketimePresent() {
  return ['x86_64-linux-gnu', 'aarch64-linux-gnu', ''].some((arch) =>
    existsSync(join('/usr/lib', arch, 'faketime/libfaketimeMT.so.1')),
  );
}

/** The Chromium the dashboard test would run: the path, and whether it is a snap stub. */
export function chromiumStatus(bin = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium') {
  if (!executable(bin)) return { present: false };
  let head;
  try {
    const fd = openSync(bin, 'r');
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    head = buf.subarray(0, n).toString('latin1');
  } catch {
    return { present: true };
  }
  // Ubuntu's transitional package: a script that runs (or asks for) the snap.
  if (head.startsWith('#!') && /\bsnap\b/.test(head)) return { present: false, stub: bin };
  return { present: true };
}

function distro() {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    const field = (k) => (text.match(new RegExp(`^${k}="?([^"\\n]*)"?$`, 'm'))?.[1] ?? '').toLowerCase();
    const id = field('ID');
    if (id === 'ubuntu' || field('ID_LIKE').split(/\s+/).includes('ubuntu')) return 'ubuntu';
    return id || 'unknown';
  } catch {
    return 'unknown';
  }
}

export function probe() {
  const sbin = ['/usr/sbin', '/sbin'];
  const chromium = chromiumStatus();
  return {
    platform: process.platform,
    isRoot: process.getuid?.() === 0,
    distro: process.platform === 'linux' ? distro() : process.platform,
    hasApt: onPath('apt-get', sbin),
    hasBrew: onPath('brew', ['/opt/homebrew/bin', '/usr/local/bin']),
    chromiumStub: chromium.stub,
    sudo: undefined,
    present: {
      'redis-server': onPath('redis-server'),
      postgresql: postgresPresent(),
      mariadb: mariadbPresent(),
      openssl: onPath('openssl'),
      faketime: faketimePresent(),
      gcc: onPath('gcc'),
      make: onPath('make'),
      chromium: chromium.present,
      nft: onPath('nft', sbin),
      ip: onPath('ip', sbin),
    },
  };
}

function sudoWorks() {
  if (!onPath('sudo')) return false;
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

// ---- the command ---------------------------------------------------------------------------------

function main(argv) {
  const forArg = argv.find((a) => a.startsWith('--for='));
  const mode = forArg ? forArg.slice('--for='.length) : 'test';
  const dryRun = argv.includes('--dry-run');
  const say = (line) => process.stderr.write(`setup: ${line}\n`);

  const machine = probe();
  // For proving the install path on a machine that has everything: NQL_SETUP_PRETEND_MISSING=gcc,ip
  // plans as if those were missing (apt-get then reinstalls nothing; the check after it passes).
  for (const id of (process.env.NQL_SETUP_PRETEND_MISSING ?? '').split(',').filter(Boolean)) {
    if (id in machine.present) machine.present[id] = false;
  }
  let p = plan(mode, machine);
  // Only now, with something to install, is it worth asking sudo (it can take a moment).
  if (p.manager === 'apt' && !machine.isRoot && (p.fail || p.install.length > 0)) {
    machine.sudo = sudoWorks();
    p = plan(mode, machine);
  }

  for (const s of p.skip) say(`no ${s.id}: ${s.why}`);
  if (p.fail) {
    const who =
      p.manager === 'apt' && !machine.isRoot
        ? ' (not root, and no passwordless sudo)'
        : p.manager === null
          ? ' (no apt-get or Homebrew here)'
          : '';
    say(`missing ${p.fail.missing.join(', ')}${who}; cannot install it from here. Run:`);
    process.stderr.write(`\n    ${p.fail.command}\n\nthen run this again.\n`);
    return 1;
  }
  if (p.install.length === 0) return 0;

  const via = p.manager === 'apt' ? (machine.isRoot ? 'apt-get' : 'sudo apt-get') : 'brew';
  for (const i of p.install) say(`installing ${i.pkg} (${via}): ${i.why}`);
  if (dryRun) {
    for (const c of p.commands) say(`would run: ${c.join(' ')}`);
    return 0;
  }
  const started = Date.now();
  for (const argvOf of p.commands) {
    const r = spawnSync(argvOf[0], argvOf.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (r.status !== 0) {
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
      say(`\`${argvOf.join(' ')}\` failed (${r.status ?? r.error?.message}):\n${out}`);
      return 1;
    }
  }
  // Check again: a package that installed without the tool we look for is still a failure.
  const after = probe();
  const still = p.install.filter((i) => !after.present[i.id]);
  const optionalIds = new Set(
    TOOLS.filter((t) => t.optional && t.optional(after) !== undefined).map((t) => t.id),
  );
  for (const i of still) {
    if (optionalIds.has(i.id))
      say(`${i.pkg} installed but ${i.id} is still not usable; its test will be skipped`);
  }
  const failed = still.filter((i) => !optionalIds.has(i.id));
  if (failed.length > 0) {
    say(
      `installed ${failed.map((i) => i.pkg).join(', ')} but still cannot find ${failed.map((i) => i.id).join(', ')}`,
    );
    return 1;
  }
  say(`installed ${p.install.length} package(s) in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main(process.argv.slice(2));
}
