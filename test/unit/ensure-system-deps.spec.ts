/**
 * The decision of scripts/ensure-system-deps.mjs (issue 29, item 1): given which tools a machine
 * has, whether it is root, has passwordless sudo, apt-get or Homebrew, what the pre-step installs,
 * what it leaves out (and which test then skips), and the command it prints when it cannot install.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumStatus, plan, type Machine, type ToolId } from '../../scripts/ensure-system-deps.mjs';

const ALL: ToolId[] = [
  'redis-server',
  'postgresql',
  'mariadb',
  'openssl',
  'faketime',
  'gcc',
  'make',
  'chromium',
  'nft',
  'ip',
];

function machine(missing: ToolId[], over: Partial<Machine> = {}): Machine {
  const present = Object.fromEntries(ALL.map((id) => [id, !missing.includes(id)])) as Record<ToolId, boolean>;
  return {
    platform: 'linux',
    isRoot: true,
    distro: 'debian',
    hasApt: true,
    hasBrew: false,
    present,
    ...over,
  };
}

const pkgs = (p: ReturnType<typeof plan>) => p.install.map((i) => i.pkg);
const APT = ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', '-o', 'DPkg::Lock::Timeout=300'];

describe('ensure-system-deps plan', () => {
  test('everything present: nothing to install, nothing to run, no failure', () => {
    for (const mode of ['sample', 'test', 'faults', 'soak', 'bench', 'servers']) {
      expect(plan(mode, machine([]))).toEqual({
        install: [],
        skip: [],
        manager: 'apt',
        commands: [],
        fail: null,
      });
    }
  });

  test('sample as root on Debian: redis-server and postgresql only, one update then one install', () => {
    const p = plan('sample', machine(ALL));
    expect(pkgs(p)).toEqual(['redis-server', 'postgresql']);
    expect(p.install[0].why).toBe('the sample app starts 5 local lock nodes');
    expect(p.commands).toEqual([
      [...APT, 'update', '-qq'],
      [...APT, 'install', '-y', '-qq', 'redis-server', 'postgresql'],
    ]);
    expect(p.fail).toBeNull();
  });

  test('test as root on Debian: every missing tool in a single apt-get install', () => {
    const p = plan('test', machine(ALL));
    expect(pkgs(p)).toEqual([
      'redis-server',
      'postgresql',
      'mariadb-server',
      'openssl',
      'faketime',
      'gcc',
      'chromium',
      'nftables',
      'iproute2',
    ]);
    expect(p.commands).toHaveLength(2);
    expect(p.commands[1].slice(-9)).toEqual(pkgs(p));
    expect(p.skip).toEqual([]);
  });

  test('only what is missing is installed', () => {
    const p = plan('test', machine(['faketime', 'gcc']));
    expect(pkgs(p)).toEqual(['faketime', 'gcc']);
    expect(p.commands[1]).toEqual([...APT, 'install', '-y', '-qq', 'faketime', 'gcc']);
  });

  test('soak and bench need redis-server alone', () => {
    expect(pkgs(plan('soak', machine(ALL)))).toEqual(['redis-server']);
    expect(pkgs(plan('bench', machine(ALL)))).toEqual(['redis-server']);
    expect(pkgs(plan('faults', machine(ALL)))).toEqual([
      'redis-server',
      'postgresql',
      'mariadb-server',
      'nftables',
      'iproute2',
    ]);
  });

  test('the server matrix needs a compiler and make (it builds Valkey and Redis), not redis-server', () => {
    const p = plan('servers', machine(ALL));
    expect(pkgs(p)).toEqual(['gcc', 'make', 'iproute2']);
    expect(p.install[1].why).toBe('Valkey and Redis are built from their sources with make');
    // Without root the partition scenario S16 is skipped, the build still needs its tools.
    const user = plan('servers', machine(['make', 'ip'], { isRoot: false, sudo: false }));
    expect(user.fail).toEqual({
      missing: ['make'],
      command: 'sudo apt-get update && sudo apt-get install -y make',
    });
    expect(user.skip.map((s) => s.id)).toEqual(['ip']);
  });

  test('not root, passwordless sudo: sudo -n apt-get; nft and ip are left out (the netns tests need root)', () => {
    const p = plan('test', machine(['redis-server', 'nft', 'ip'], { isRoot: false, sudo: true }));
    expect(pkgs(p)).toEqual(['redis-server']);
    expect(p.commands[1]).toEqual(['sudo', '-n', ...APT, 'install', '-y', '-qq', 'redis-server']);
    expect(p.skip.map((s) => s.id)).toEqual(['nft', 'ip']);
    expect(p.skip[0].why).toMatch(/need root; they will be skipped/);
    expect(p.fail).toBeNull();
  });

  test('not root without sudo: stops with the exact command, optional Chromium included, nft not', () => {
    const p = plan(
      'test',
      machine(['redis-server', 'postgresql', 'chromium', 'nft'], { isRoot: false, sudo: false }),
    );
    expect(p.install).toEqual([]);
    expect(p.commands).toEqual([]);
    expect(p.fail).toEqual({
      missing: ['redis-server', 'postgresql'],
      command: 'sudo apt-get update && sudo apt-get install -y redis-server postgresql chromium',
    });
  });

  test('the sample command without sudo asks for the sample tools only', () => {
    const p = plan('sample', machine(ALL, { isRoot: false, sudo: false }));
    expect(p.fail?.command).toBe('sudo apt-get update && sudo apt-get install -y redis-server postgresql');
  });

  test('only Chromium missing and no way to install it: no failure, the dashboard test skips', () => {
    const p = plan('test', machine(['chromium'], { isRoot: false, sudo: false }));
    expect(p.fail).toBeNull();
    expect(p.install).toEqual([]);
    expect(p.skip).toEqual([{ id: 'chromium', why: 'without it the dashboard test is skipped' }]);
  });

  test('Ubuntu: Chromium is a snap stub there, so it is skipped even as root; the rest installs', () => {
    const p = plan('test', machine(['redis-server', 'chromium'], { distro: 'ubuntu' }));
    expect(pkgs(p)).toEqual(['redis-server']);
    expect(p.skip).toHaveLength(1);
    expect(p.skip[0].why).toMatch(/snap stub.*dashboard test will be skipped/);
  });

  test('a snap stub found at the Chromium path is not installed over', () => {
    const p = plan('test', machine(['chromium'], { chromiumStub: '/usr/bin/chromium' }));
    expect(p.install).toEqual([]);
    expect(p.skip[0].why).toMatch(/^\/usr\/bin\/chromium is a snap stub/);
  });

  test('macOS with Homebrew: brew install as the user; Linux-only tools skip', () => {
    const p = plan(
      'test',
      machine(ALL, { platform: 'darwin', distro: 'darwin', hasApt: false, hasBrew: true, isRoot: false }),
    );
    expect(pkgs(p)).toEqual(['redis', 'postgresql@17', 'mariadb', 'openssl@3']);
    expect(p.commands).toEqual([['brew', 'install', 'redis', 'postgresql@17', 'mariadb', 'openssl@3']]);
    expect(p.skip.map((s) => s.id)).toEqual(['faketime', 'gcc', 'chromium', 'nft', 'ip']);
  });

  test('macOS without Homebrew: the command says to install it first', () => {
    const p = plan(
      'sample',
      machine(ALL, { platform: 'darwin', distro: 'darwin', hasApt: false, isRoot: false }),
    );
    expect(p.fail?.command).toBe(
      'install Homebrew (https://brew.sh), then: brew install redis postgresql@17',
    );
  });

  test('Linux without apt-get: names the tools and the Debian command', () => {
    const p = plan('sample', machine(['redis-server'], { hasApt: false, distro: 'fedora' }));
    expect(p.fail).toEqual({
      missing: ['redis-server'],
      command:
        'install with your package manager: redis-server (Debian/Ubuntu: sudo apt-get install -y redis-server)',
    });
  });

  test('an unknown mode is an error', () => {
    expect(() => plan('deploy', machine([]))).toThrow(/unknown mode "deploy"/);
  });
});

describe('chromiumStatus', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ensure-deps-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const script = (name: string, body: string) => {
    const path = join(dir, name);
    writeFileSync(path, body);
    chmodSync(path, 0o755);
    return path;
  };

  test('a missing file is not present', () => {
    expect(chromiumStatus(join(dir, 'none'))).toEqual({ present: false });
  });
  test("Ubuntu's transitional script is a snap stub", () => {
    const stub = script(
      'stub',
      '#!/bin/sh\necho "Command requires the chromium snap to be installed."\nsnap run chromium "$@"\n',
    );
    expect(chromiumStatus(stub)).toEqual({ present: false, stub });
  });
  test("Debian's launcher script is a Chromium", () => {
    const real = script('real', '#!/bin/sh\nAPPNAME=chromium\nexec /usr/lib/chromium/chromium "$@"\n');
    expect(chromiumStatus(real)).toEqual({ present: true });
  });
});
