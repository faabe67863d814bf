#!/usr/bin/env node
/* global setTimeout, clearTimeout, performance */
/**
 * Consumer-app suite: proves that the package a user downloads installs, type-checks, loads and
 * works in the kinds of apps teams run. `npm run test:consumers` (CI runs it after `npm test`).
 *
 *  1. `npm pack` once (prepack builds dist/), and checks what the tarball holds; each app runs its
 *     bin (`npx nest-quorum-lock functions` prints the FUNCTION library).
 *  2. For every supported combination (module system x NestJS major x Redis client and major:
 *     ioredis 5 / 6, node-redis 5 / 6 only -- no ioredis installed, `skipLibCheck: false` --, Valkey
 *     GLIDE only) it writes a
 *     fresh app in a temp dir and runs ONE `npm install <tarball>` there, as a user adding the
 *     package to an app that already lists its own NestJS/ioredis versions -- without
 *     --legacy-peer-deps, so a peer range that excludes the combination fails the install.
 *     Versions are the registry's latest of each major, resolved at run time.
 *  3. Compiles the app with its own TypeScript and a tsconfig like the one `nest new` writes; a
 *     CommonJS app is also type-checked under the other resolution mode (node10 <-> nodenext).
 *  4. Compiles the library's own sources (lib/) against that app's NestJS/ioredis typings.
 *  5. `require()` and `import()` of every entry point in `exports` from plain node (and their
 *     typings under each tsconfig), with any warning reported.
 *  6. Runs the apps' own unit tests, as `nest new` sets them up, against the tarball's
 *     `nest-quorum-lock/testing`: Jest + ts-jest in the CommonJS NestJS 11 app (app/lock.jest.ts,
 *     real nodes), and in the ESM NestJS 12 app Vitest 4 (nest new's config) and Jest in ESM mode
 *     (app/lock.esm-spec.ts: RedlockTestingModule and a @DistributedLock service, no Redis;
 *     app/fenced.esm-spec.ts: a service injecting FencedWriter and a FencedTable, given in-memory
 *     ones by RedlockTestingModule, no Redis and no database).
 *     A CommonJS app also runs app/fenced-sql.cjs: `nest-quorum-lock/sql` required from plain node,
 *     fenced writes and reads on a real PostgreSQL (app/fenced-sql.ts, compiled in every app, uses
 *     its typings with no ORM installed).
 *  7. Boots the app (test/consumers/app/main.ts) against 3 real redis-server nodes that it starts
 *     through the tarball's `nest-quorum-lock/testing`, the restart guard on (the nodes are recorded
 *     fresh): 200 at once with strictly increasing fencing tokens,
 *     409 on a busy lock, a waiting request served on the holder's release, releases sent one-way
 *     (one CLIENT REPLY SKIP per release) with every reply still in step; the package's bin as npm
 *     installed it (`nest-quorum-lock fresh-node`, with the app's own client package) records an
 *     empty node and refuses one with data; the process must then exit by itself (no open handle).
 *  8. In the node-redis apps, boots docs/clients.md's node-redis module (a client passed in
 *     unconnected: docs/examples/node-redis-module.ts) with that client's node down, then with it
 *     refusing the password (app/node-redis-boot.ts): the app must listen within 10 s, serve a
 *     locked route on the other two nodes, and exit by itself after closing.
 *  9. In the node-redis 6 app (no ioredis), which installs iovalkey besides, app/iovalkey-boot.ts:
 *     iovalkey clients as the nodes take, refuse (busy) and hand over a lock, and the process exits
 *     by itself after closing.
 *
 * NEW ENTRY POINTS (e.g. `./terminus` -> dist/terminus/index.js): add them to package.json `exports`
 * (`types` first, then `default`) AND to `typesVersions` (for node10 resolution); this suite then
 * loads and type-checks them in every app without a change here.
 *
 * Options: --only <id,...> (combination ids below), --keep (keep the temp dir). Environment:
 * CONSUMERS_NPM_CACHE (default: <tmpdir>/nest-quorum-lock-npm-cache, shared by every app and run).
 * Exit code 0 only when every combination passed.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(here, '../..');
const args = process.argv.slice(2);
const KEEP = args.includes('--keep');
const onlyArg = args.indexOf('--only');
const ONLY = onlyArg >= 0 ? new Set(args[onlyArg + 1].split(',')) : undefined;
const CACHE = process.env.CONSUMERS_NPM_CACHE ?? join(tmpdir(), 'nest-quorum-lock-npm-cache');
/** Installs at once: the machines have 2 cores, and an install is mostly waiting on the network. */
const PARALLEL = 2;
/** After printing its result the app must exit by itself within this time. */
const EXIT_GRACE_MS = 10_000;

/**
 * The supported combinations. `ts` is the TypeScript the app installs: a CommonJS app on NestJS 11
 * is most likely on TypeScript 5 (`nest new` of that era: module commonjs, node10 resolution), a
 * newer app on 6 (which deprecates node10 resolution, so that check sets ignoreDeprecations).
 */
const COMBOS = [
  {
    id: 'cjs-nest11-ioredis6',
    esm: false,
    nest: '^11',
    ioredis: '^6',
    ts: '^5.8',
    emit: 'node10',
    jest: true,
  },
  { id: 'cjs-nest12-ioredis5', esm: false, nest: '^12', ioredis: '^5.4', ts: '^6', emit: 'nodenext' },
  {
    id: 'esm-nest12-ioredis6',
    esm: true,
    nest: '^12',
    ioredis: '^6',
    ts: '^6',
    emit: 'nodenext',
    vitest: true,
    jestEsm: true,
  },
  { id: 'esm-nest11-ioredis5', esm: true, nest: '^11', ioredis: '^5.4', ts: '^5.8', emit: 'nodenext' },
  // An app on node-redis only: no ioredis installed (nor --legacy-peer-deps), and its typings
  // checked with skipLibCheck: false, so the package's typings must not need ioredis'. It installs
  // iovalkey besides (`also`): iovalkey clients as the nodes, without ioredis (app/iovalkey-boot.ts).
  {
    id: 'esm-nest12-node-redis6',
    esm: true,
    nest: '^12',
    client: 'node-redis',
    redis: '^6',
    also: ['iovalkey'],
    ts: '^6',
    emit: 'nodenext',
    strictLibCheck: true,
  },
  // node-redis 5 (RESP2 only, still common) in the CommonJS NestJS 11 app `nest new` wrote then.
  {
    id: 'cjs-nest11-node-redis5',
    esm: false,
    nest: '^11',
    client: 'node-redis',
    redis: '^5',
    ts: '^5.8',
    emit: 'node10',
    strictLibCheck: true,
  },
  // An app on Valkey GLIDE only (neither ioredis nor node-redis installed).
  // (TypeScript 6 includes no @types by default: ioredis' and node-redis' typings pull in Node's,
  // GLIDE's do not, so this app lists them, as a TypeScript 6 app must.)
  {
    id: 'cjs-nest12-glide2',
    esm: false,
    nest: '^12',
    client: 'glide',
    glide: '^2',
    ts: '^6',
    emit: 'nodenext',
    types: ['node'],
  },
].filter((c) => !ONLY || ONLY.has(c.id));

/** Peers every app installs; a lib/ import of anything else is an optional peer. */
const REQUIRED_PEERS = ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs'];

/**
 * The Redis client packages: optional peers, one of which each app installs (its `client`), and
 * those it names in `also` besides.
 */
const CLIENT_PACKAGES = {
  ioredis: 'ioredis',
  iovalkey: 'iovalkey',
  'node-redis': 'redis',
  glide: '@valkey/valkey-glide',
};
const clientOf = (combo) => combo.client ?? 'ioredis';

/** The environment of every child: none of the npm_* settings `npm run` passes down. */
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'),
);

/** Runs a command; resolves with its output and exit code (never rejects on a non-zero exit). */
function run(cmd, argv, { cwd, timeoutMs = 300_000, env = cleanEnv, onLine } = {}) {
  return new Promise((resolvePromise) => {
    const started = performance.now();
    const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    let timedOut = false;
    // SIGTERM first: the app turns it into an exit, whose hook (RedisNodes') ends its redis-server
    // processes by pid; SIGKILL would orphan them.
    const timer = setTimeout(() => {
      timedOut = true;
      stop(child);
    }, timeoutMs);
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (!onLine) return;
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      for (const line of lines) if (line) onLine(line, child);
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({
        code,
        signal,
        stdout,
        stderr,
        timedOut,
        seconds: (performance.now() - started) / 1000,
      });
    });
  });
}

/** SIGTERM, then SIGKILL if the process is still there 5 s later. */
function stop(child) {
  child.kill('SIGTERM');
  setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }, 5000).unref();
}

/** Fails with the command's output. */
function must(result, what) {
  if (result.code !== 0) {
    const out = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`${what} failed (exit ${result.code}${result.timedOut ? ', timed out' : ''}):\n${out}`);
  }
  return result;
}

/** npm's own warnings about this machine's user config, which no package can avoid. */
const noise = (line) => /Unknown (user|env) config/.test(line) || line.trim() === '';
const warnings = (text) =>
  text
    .split('\n')
    .filter((l) => !noise(l))
    .map((l) => l.trim());

const semverKey = (v) =>
  v.split(/[.-]/).map((p) => (/^\d+$/.test(p) ? Number(p).toString().padStart(8, '0') : p));
const semverMax = (versions) =>
  [...versions].sort((a, b) => (semverKey(a).join('.') < semverKey(b).join('.') ? -1 : 1)).at(-1);

/** The registry's newest version of `name` within `range`. */
async function latest(name, range) {
  const r = must(
    await run('npm', ['view', `${name}@${range}`, 'version', '--json', '--cache', CACHE]),
    `npm view ${name}@${range}`,
  );
  const parsed = JSON.parse(r.stdout);
  return Array.isArray(parsed) ? semverMax(parsed) : parsed;
}

/** Packs the repository once and checks the tarball holds what users need and nothing else. */
async function pack(dir) {
  const r = must(await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT }), 'npm pack');
  const info = JSON.parse(r.stdout.slice(r.stdout.indexOf('[')))[0];
  const files = info.files.map((f) => f.path);
  const problems = [];
  for (const needed of [
    'package.json',
    'README.md',
    'LICENSE',
    'CHANGELOG.md',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/testing/index.js',
    'dist/cli/main.js',
  ]) {
    if (!files.includes(needed)) problems.push(`missing ${needed}`);
  }
  for (const f of files) {
    if (f.endsWith('.map')) problems.push(`source map ${f} (its sources are not shipped)`);
    else if (!/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|dist\/.+\.(js|d\.ts))$/.test(f))
      problems.push(`unexpected ${f}`);
    const source = /^dist\/(.+)\.(js|d\.ts)$/.exec(f);
    if (source) {
      try {
        readFileSync(join(ROOT, 'lib', `${source[1]}.ts`));
      } catch {
        problems.push(`${f} has no source in lib/ (a stale build output)`);
      }
    }
  }
  if (problems.length) throw new Error(`the tarball is wrong:\n  ${problems.join('\n  ')}`);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const optionalPeers = Object.keys(manifest.peerDependenciesMeta ?? {})
    .filter((name) => manifest.peerDependenciesMeta[name].optional)
    .map((name) => ({ name, range: manifest.peerDependencies?.[name] ?? '*' }));
  return {
    optionalPeers,
    path: join(dir, info.filename),
    size: info.size,
    unpackedSize: info.unpackedSize,
    entries: files.length,
  };
}

/** The compiler options `nest new` writes (module commonjs, node10 resolution by default). */
const NEST_NEW_CJS = {
  module: 'commonjs',
  declaration: true,
  removeComments: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  target: 'ES2023',
  sourceMap: true,
  outDir: './dist',
  // TypeScript 6 wants rootDir spelled out when outDir is set; nest new's tsconfig predates that.
  rootDir: './src',
  incremental: true,
  skipLibCheck: true,
  strictNullChecks: true,
  forceConsistentCasingInFileNames: true,
  noImplicitAny: false,
  strictBindCallApply: false,
  noFallthroughCasesInSwitch: false,
};
const NODENEXT = {
  module: 'nodenext',
  moduleResolution: 'nodenext',
  target: 'ES2023',
  outDir: './dist',
  rootDir: './src',
  strict: true,
  esModuleInterop: true,
  isolatedModules: true,
  skipLibCheck: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
};

function tsconfig(mode, tsMajor, extra = {}) {
  const compilerOptions = mode === 'node10' ? { ...NEST_NEW_CJS } : { ...NODENEXT };
  if (extra.strictLibCheck) compilerOptions.skipLibCheck = false;
  if (extra.types) compilerOptions.types = extra.types;
  delete extra.strictLibCheck;
  delete extra.types;
  // TypeScript 6 deprecates node10 resolution; an app that still uses it silences the error so.
  if (mode === 'node10' && tsMajor >= 6) compilerOptions.ignoreDeprecations = '6.0';
  return JSON.stringify({ compilerOptions: { ...compilerOptions, ...extra }, include: ['src'] }, null, 2);
}

/** Writes the app: package.json with its own NestJS/ioredis versions, tsconfigs, the source. */
function writeApp(dir, combo, versions) {
  mkdirSync(join(dir, 'src'), { recursive: true });
  const pkg = {
    name: `consumer-${combo.id}`,
    version: '0.0.0',
    private: true,
    ...(combo.esm ? { type: 'module' } : {}),
    dependencies: {
      '@nestjs/common': versions.nest,
      '@nestjs/core': versions.nest,
      '@nestjs/platform-express': versions.nest,
      [CLIENT_PACKAGES[clientOf(combo)]]: versions.client,
      ...Object.fromEntries((combo.also ?? []).map((c) => [CLIENT_PACKAGES[c], versions.also[c]])),
      'reflect-metadata': versions.reflectMetadata,
      rxjs: versions.rxjs,
      ...versions.optionalPeers,
    },
    devDependencies: {
      typescript: versions.ts,
      '@types/node': versions.typesNode,
      ...(combo.jest || combo.jestEsm
        ? { jest: versions.jest, 'ts-jest': versions.tsJest, '@types/jest': versions.typesJest }
        : {}),
      ...(combo.vitest ? { vitest: versions.vitest } : {}),
      ...(combo.jest || combo.jestEsm || combo.vitest ? { '@nestjs/testing': versions.nestTesting } : {}),
    },
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  const tsMajor = Number(versions.ts.split('.')[0]);
  const strictLibCheck = Boolean(combo.strictLibCheck);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    tsconfig(combo.emit, tsMajor, { strictLibCheck, types: combo.types }),
  );
  if (!combo.esm) {
    // The other CommonJS flavour, type-check only: node10 (nest new) <-> nodenext (require(esm)).
    const other = combo.emit === 'node10' ? 'nodenext' : 'node10';
    writeFileSync(
      join(dir, `tsconfig.${other}.json`),
      tsconfig(other, tsMajor, { noEmit: true, incremental: false, strictLibCheck, types: combo.types }),
    );
  }
  copyFileSync(join(here, 'app/main.ts'), join(dir, 'src/main.ts'));
  copyFileSync(join(here, 'app/fenced-sql.ts'), join(dir, 'src/fenced-sql.ts'));
  if (!combo.esm) copyFileSync(join(here, 'app/fenced-sql.cjs'), join(dir, 'fenced-sql.cjs'));
  copyFileSync(join(here, `app/clients-${clientOf(combo)}.ts`), join(dir, 'src/clients.ts'));
  if (clientOf(combo) === 'node-redis') {
    // docs/clients.md's module, as the page shows it, and the app that boots it (step 8).
    copyFileSync(join(ROOT, 'docs/examples/node-redis-module.ts'), join(dir, 'src/locks.module.ts'));
    copyFileSync(join(here, 'app/node-redis-boot.ts'), join(dir, 'src/node-redis-boot.ts'));
  }
  if (combo.also?.includes('iovalkey')) {
    copyFileSync(join(here, 'app/iovalkey-boot.ts'), join(dir, 'src/iovalkey-boot.ts'));
  }
  if (combo.jest) {
    mkdirSync(join(dir, 'test'));
    copyFileSync(join(here, 'app/lock.jest.ts'), join(dir, 'test/lock.spec.ts'));
    writeFileSync(join(dir, 'jest.config.js'), JEST_CONFIG);
  }
  if (combo.vitest || combo.jestEsm) {
    mkdirSync(join(dir, 'test'));
    copyFileSync(join(here, 'app/lock.esm-spec.ts'), join(dir, 'test/lock.spec.ts'));
    copyFileSync(join(here, 'app/fenced.esm-spec.ts'), join(dir, 'test/fenced.spec.ts'));
    // The spec's own tsconfig (the app's covers src/ only), which Vitest's transform also reads:
    // legacy decorators and their metadata, as Nest needs them.
    writeFileSync(
      join(dir, 'test/tsconfig.json'),
      JSON.stringify(
        { extends: '../tsconfig.json', compilerOptions: { rootDir: '..', noEmit: true }, include: ['.'] },
        null,
        2,
      ),
    );
    if (combo.vitest) writeFileSync(join(dir, 'vitest.config.ts'), VITEST_CONFIG);
    if (combo.jestEsm) writeFileSync(join(dir, 'jest.config.js'), JEST_ESM_CONFIG);
  }
}

/** The Vitest config `nest new` writes on NestJS 12 (without its tsconfig-paths plugin: no paths here). */
const VITEST_CONFIG = `import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globals: true,
    root: './',
    include: ['**/*.spec.ts'],
  },
});
`;

/**
 * Jest in an ESM app (as the README gives it): native ES modules (`node --experimental-vm-modules`),
 * ts-jest emitting ES modules for the specs, `.js` stripped from relative imports. This package
 * and NestJS load as they are.
 */
const JEST_ESM_CONFIG = `export default {
  testEnvironment: 'node',
  testRegex: 'test/.*\\.spec\\.ts$',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'test/tsconfig.json' }],
  },
};
`;

/**
 * The Jest config of a CommonJS app (as the README gives it): ts-jest also compiles this package's
 * ES modules to CommonJS, since Jest's own require() cannot load ES modules before Node 24.9.
 */
const JEST_CONFIG = `module.exports = {
  testEnvironment: 'node',
  testRegex: '.*\\\\.spec\\\\.ts$',
  transform: {
    '^.+\\\\.(t|j)s$': ['ts-jest', { tsconfig: { module: 'commonjs', allowJs: true, experimentalDecorators: true, emitDecoratorMetadata: true, isolatedModules: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!nest-quorum-lock/)'],
};
`;

/**
 * Copies lib/ into the app and compiles it with the repository's own TypeScript against the app's
 * node_modules (module resolution walks up from lib/ to the app), so the library's sources are
 * checked against that app's NestJS and ioredis typings. Only what the entry points reach.
 */
async function checkLibSources(dir) {
  const check = join(dir, 'libcheck');
  cpSync(join(ROOT, 'lib'), join(check, 'lib'), {
    recursive: true,
    filter: (src) => !src.endsWith('.spec.ts'),
  });
  writeFileSync(join(check, 'package.json'), '{ "type": "module" }\n');
  const repo = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')).compilerOptions;
  const { paths: _paths, rootDir: _rootDir, outDir: _outDir, ...options } = repo;
  writeFileSync(
    join(check, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { ...options, types: ['node'], noEmit: true, skipLibCheck: true },
      files: ['lib/index.ts', 'lib/testing/index.ts'],
    }),
  );
  return run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    cwd: check,
  });
}

/** The package's entry points as installed: every `exports` key but ./package.json. */
function entryPoints(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'node_modules/nest-quorum-lock/package.json'), 'utf8'));
  const subpaths = Object.keys(pkg.exports).filter((k) => k !== './package.json');
  return subpaths.map((k) => `nest-quorum-lock${k.slice(1)}`);
}

/**
 * A source file importing every entry point, compiled with the app: every subpath's typings must
 * resolve under the app's tsconfig (node10 needs `typesVersions`, nodenext reads `exports`).
 */
function writeEntryPointImports(dir, specifiers) {
  const lines = specifiers.map((s, i) => `import * as entry${i} from '${s}';`);
  lines.push(`export const entryPoints = [${specifiers.map((_, i) => `entry${i}`).join(', ')}];`);
  writeFileSync(join(dir, 'src/entry-points.ts'), `${lines.join('\n')}\n`);
}

/**
 * require() and import() of every entry point from plain node, in the app's directory: each must
 * load and export something, and the root and ./testing what an app uses (the app has the optional
 * peers installed, so an entry point that needs one loads too).
 */
async function loadFromPlainNode(dir, specifiers) {
  const results = [];
  for (const [kind, load] of [
    ['require()', (m) => `require('${m}')`],
    ['import()', (m) => `await import('${m}')`],
  ]) {
    for (const specifier of specifiers) {
      const code =
        `const m = ${load(specifier)};` +
        `const want = { 'nest-quorum-lock': ['LockService', 'RedlockModule', 'DistributedLock'], 'nest-quorum-lock/testing': ['RedisNodes'] }['${specifier}'] ?? [];` +
        `const missing = want.filter((k) => typeof m[k] !== 'function');` +
        `if (Object.keys(m).length === 0 || missing.length) { console.error('exports missing: ' + (missing.join(', ') || 'all')); process.exit(1); }`;
      const r = await run(
        process.execPath,
        [`--input-type=${kind === 'import()' ? 'module' : 'commonjs'}`, '-e', code],
        { cwd: dir },
      );
      results.push({ kind, specifier, r });
    }
  }
  return results;
}

/** Boots a compiled app (`dist/main.js` unless told); it must print RESULT and then exit by itself. */
async function boot(dir, script = 'dist/main.js', argv = []) {
  let resultAt;
  let lingered = false;
  const r = await run(process.execPath, [script, ...argv], {
    cwd: dir,
    timeoutMs: 120_000,
    onLine: (line, child) => {
      if (line.startsWith('RESULT ') && resultAt === undefined) {
        resultAt = performance.now();
        setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) {
            lingered = true;
            stop(child);
          }
        }, EXIT_GRACE_MS).unref();
      }
    },
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  const result = line ? JSON.parse(line.slice(7)) : { ok: false, checks: [], error: `no RESULT line` };
  if (lingered) {
    result.ok = false;
    result.error = `the app did not exit within ${EXIT_GRACE_MS / 1000} s after closing (an open handle)`;
  } else if (r.code !== 0 && result.ok) {
    result.ok = false;
    result.error = `exit code ${r.code}`;
  }
  result.stderr = warnings(r.stderr).slice(0, 20);
  return { ...result, seconds: r.seconds };
}

const installed = (dir, name) =>
  JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;

async function runCombo(base, combo, tarball, versions) {
  const dir = join(base, combo.id);
  const row = {
    id: combo.id,
    versions: '',
    ok: false,
    install: 0,
    build: 0,
    boot: 0,
    notes: [],
    failure: '',
  };
  try {
    writeApp(dir, combo, versions);
    const install = await run(
      'npm',
      [
        'install',
        tarball,
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--cache',
        CACHE,
        '--loglevel',
        'warn',
      ],
      { cwd: dir },
    );
    row.install = install.seconds;
    must(install, 'npm install of the tarball');
    for (const w of warnings(install.stderr)) row.notes.push(`npm: ${w}`);
    const clientPackage = CLIENT_PACKAGES[clientOf(combo)];
    row.versions =
      `nest ${installed(dir, '@nestjs/core')}, ${clientPackage} ${installed(dir, clientPackage)}, ` +
      `ts ${installed(dir, 'typescript')}${combo.strictLibCheck ? ', skipLibCheck false' : ''}`;
    const also = (combo.also ?? []).map((c) => CLIENT_PACKAGES[c]);
    for (const name of also) row.versions += `, ${name} ${installed(dir, name)}`;
    for (const other of Object.values(CLIENT_PACKAGES)) {
      if (other !== clientPackage && !also.includes(other) && existsSync(join(dir, 'node_modules', other))) {
        throw new Error(`${other} was installed in an app on ${clientPackage} only`);
      }
    }
    const peers = Object.keys(versions.optionalPeers).map((name) => `${name} ${installed(dir, name)}`);
    if (peers.length) row.notes.push(`optional peers installed: ${peers.join(', ')}`);

    // The package's bin, as docs/deploying.md has an administrator run it ("Servers that refuse EVAL").
    const printed = must(
      await run('npx', ['--no', 'nest-quorum-lock', 'functions'], { cwd: dir }),
      'npx nest-quorum-lock functions',
    );
    if (!/^#!lua name=nest_quorum_lock_[0-9a-f]{12}\n/.test(printed.stdout))
      throw new Error(
        `npx nest-quorum-lock functions printed ${JSON.stringify(printed.stdout.slice(0, 80))}`,
      );

    const entries = entryPoints(dir);
    writeEntryPointImports(dir, entries);
    const tsc = join(dir, 'node_modules/typescript/bin/tsc');
    const build = must(
      await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir }),
      `tsc (${combo.emit})`,
    );
    row.build += build.seconds;
    if (!combo.esm) {
      const other = combo.emit === 'node10' ? 'nodenext' : 'node10';
      const typeCheck = must(
        await run(process.execPath, [tsc, '-p', `tsconfig.${other}.json`], { cwd: dir }),
        `tsc (${other})`,
      );
      row.build += typeCheck.seconds;
    }
    // lib/ holds the ioredis voters, typed with ioredis' typings: checked in the ioredis apps. An
    // app without ioredis checks what users compile: the package's typings (above, and with
    // skipLibCheck: false where the combination says so).
    const lib =
      clientOf(combo) === 'ioredis'
        ? await checkLibSources(dir)
        : { code: 0, stdout: '', seconds: 0, skipped: true };
    if (lib.skipped) row.notes.push(`lib/ sources not compiled here (no ioredis typings in this app)`);
    row.build += lib.seconds;
    const errors = lib.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
    // An optional peer (GraphQL, microservices, ...) is not installed in these apps: its typings
    // cannot be checked here, which is reported, not failed. Anything else fails the combination.
    // The other Redis clients' typings are absent too: lib/ compiles its voters against each.
    const optional = errors.filter((l) => {
      const m = /error TS2307: Cannot find module '([^']+)'/.exec(l);
      return m && !REQUIRED_PEERS.includes(m[1]);
    });
    for (const l of optional) row.notes.push(`lib/ check, optional peer absent: ${l.trim()}`);
    if (lib.code !== 0 && errors.length !== optional.length) must(lib, 'lib/ sources against these typings');

    for (const load of await loadFromPlainNode(dir, entries)) {
      const what = `${load.kind} of ${load.specifier} from plain node`;
      must(load.r, what);
      for (const w of warnings(load.r.stderr)) row.notes.push(`${what}: ${w}`);
    }
    row.notes.push(`loaded with require() and import(): ${entries.join(', ')}`);
    if (!combo.esm) {
      // A CommonJS app's fenced write through nest-quorum-lock/sql, on a real PostgreSQL.
      const sql = must(
        await run(process.execPath, ['fenced-sql.cjs'], { cwd: dir, timeoutMs: 120_000 }),
        'require() of nest-quorum-lock/sql and a fenced write on PostgreSQL (app/fenced-sql.cjs)',
      );
      row.boot += sql.seconds;
      row.notes.push(sql.stdout.trim());
    }

    if (combo.vitest) {
      const vitest = await run(process.execPath, [join(dir, 'node_modules/vitest/vitest.mjs'), 'run'], {
        cwd: dir,
        timeoutMs: 90_000,
      });
      row.boot += vitest.seconds;
      must(vitest, 'vitest run (RedlockTestingModule: a @DistributedLock service, fenced stores in memory)');
      row.notes.push(
        `ok   vitest ${installed(dir, 'vitest')}: RedlockTestingModule + a @DistributedLock service, fenced stores in memory, ${vitest.seconds.toFixed(1)} s`,
      );
    }
    if (combo.jestEsm) {
      const jest = await run(
        process.execPath,
        ['--experimental-vm-modules', join(dir, 'node_modules/jest/bin/jest.js'), '--ci'],
        { cwd: dir, timeoutMs: 90_000 },
      );
      row.boot += jest.seconds;
      must(
        jest,
        'jest in ESM mode (RedlockTestingModule: a @DistributedLock service, fenced stores in memory)',
      );
      row.notes.push(
        `ok   jest ${installed(dir, 'jest')} (ESM mode) + ts-jest: RedlockTestingModule + a @DistributedLock service, fenced stores in memory, ${jest.seconds.toFixed(1)} s`,
      );
    }
    if (combo.jest) {
      const jest = await run(process.execPath, [join(dir, 'node_modules/jest/bin/jest.js'), '--ci'], {
        cwd: dir,
        timeoutMs: 90_000,
      });
      row.boot += jest.seconds;
      must(jest, 'jest (a unit test with Test.createTestingModule)');
      row.notes.push(
        `ok   jest ${installed(dir, 'jest')} + ts-jest: a locked provider under Test.createTestingModule, exited by itself`,
      );
    }
    const result = await boot(dir);
    row.boot += result.seconds;
    for (const c of result.checks) row.notes.push(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
    if (result.protocol) row.notes.push(`protocol: ${result.protocol}`);
    for (const w of result.stderr) row.notes.push(`app stderr: ${w}`);
    if (!result.ok) throw new Error(result.error ?? 'a check failed');
    if (clientOf(combo) === 'node-redis') {
      for (const scenario of ['down', 'wrong-password']) {
        const docs = await boot(dir, 'dist/node-redis-boot.js', [scenario]);
        row.boot += docs.seconds;
        for (const c of docs.checks) {
          row.notes.push(`${c.ok ? 'ok  ' : 'FAIL'} docs/clients.md module, ${c.name}: ${c.detail}`);
        }
        for (const w of docs.stderr) row.notes.push(`node-redis-boot ${scenario} stderr: ${w}`);
        if (!docs.ok)
          throw new Error(`docs/clients.md module, ${scenario}: ${docs.error ?? 'a check failed'}`);
        row.notes.push(
          `ok   docs/clients.md module, ${scenario}: exited by itself, ${docs.seconds.toFixed(1)} s`,
        );
      }
    }
    if (combo.also?.includes('iovalkey')) {
      const valkey = await boot(dir, 'dist/iovalkey-boot.js');
      row.boot += valkey.seconds;
      for (const c of valkey.checks)
        row.notes.push(`${c.ok ? 'ok  ' : 'FAIL'} iovalkey, ${c.name}: ${c.detail}`);
      for (const w of valkey.stderr) row.notes.push(`iovalkey-boot stderr: ${w}`);
      if (!valkey.ok) throw new Error(`iovalkey clients: ${valkey.error ?? 'a check failed'}`);
      row.notes.push(`ok   iovalkey clients as nodes: exited by itself, ${valkey.seconds.toFixed(1)} s`);
    }
    row.ok = true;
  } catch (err) {
    row.failure = String(err.message ?? err);
  }
  return row;
}

async function pool(items, size, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

async function main() {
  const started = performance.now();
  const base = mkdtempSync(join(tmpdir(), 'nql-consumers-'));
  try {
    const [
      tarball,
      nest11,
      nest12,
      ioredis5,
      ioredis6,
      redis5,
      redis6,
      iovalkey04,
      glide2,
      ts5,
      ts6,
      typesNode,
      reflectMetadata,
      rxjs,
      jest,
      tsJest,
      typesJest,
      nestTesting11,
      nestTesting12,
      vitest,
    ] = await Promise.all([
      pack(base),
      latest('@nestjs/core', '^11'),
      latest('@nestjs/core', '^12'),
      latest('ioredis', '^5.4'),
      latest('ioredis', '^6'),
      latest('redis', '^5'),
      latest('redis', '^6'),
      latest('iovalkey', '^0.4'),
      latest('@valkey/valkey-glide', '^2'),
      latest('typescript', '^5.8'),
      latest('typescript', '^6'),
      latest('@types/node', '^20'),
      latest('reflect-metadata', '^0.2'),
      latest('rxjs', '^7.8'),
      latest('jest', '^30'),
      latest('ts-jest', '^29'),
      latest('@types/jest', '^30'),
      latest('@nestjs/testing', '^11'),
      latest('@nestjs/testing', '^12'),
      latest('vitest', '^4'),
    ]);
    console.log(
      `packed ${tarball.path.split('/').at(-1)}: ${(tarball.size / 1024).toFixed(1)} kB, ` +
        `${(tarball.unpackedSize / 1024).toFixed(1)} kB unpacked, ${tarball.entries} files`,
    );
    const pick = { '^11': nest11, '^12': nest12, '^5.4': ioredis5, '^6': ioredis6 };
    const clientVersion = (combo) =>
      ({
        ioredis: pick[combo.ioredis],
        'node-redis': combo.redis === '^5' ? redis5 : redis6,
        glide: glide2,
      })[clientOf(combo)];
    // Every app also installs the optional peers (a user of ./postgres or ./terminus has them), so
    // that every entry point must load. A @nestjs/* peer follows the app's NestJS major.
    const optionalFor = {};
    for (const major of new Set(COMBOS.map((c) => c.nest))) {
      // The Redis clients are chosen per app (its `client`), not installed as optional peers.
      const clientPeers = new Set(Object.values(CLIENT_PACKAGES));
      const entries = await Promise.all(
        tarball.optionalPeers
          .filter(({ name }) => !clientPeers.has(name))
          .map(async ({ name, range }) => [
            name,
            await latest(name, name.startsWith('@nestjs/') ? major : range),
          ]),
      );
      optionalFor[major] = Object.fromEntries(entries);
    }
    const rows = await pool(COMBOS, PARALLEL, (combo) =>
      runCombo(base, combo, tarball.path, {
        nest: pick[combo.nest],
        client: clientVersion(combo),
        ts: combo.ts === '^6' ? ts6 : ts5,
        typesNode,
        reflectMetadata,
        rxjs,
        jest,
        tsJest,
        typesJest,
        vitest,
        nestTesting: combo.nest === '^11' ? nestTesting11 : nestTesting12,
        optionalPeers: optionalFor[combo.nest],
        also: { iovalkey: iovalkey04 },
      }),
    );

    const header = ['combination', 'installed', 'result', 'install s', 'tsc s', 'boot s'];
    const table = rows.map((r) => [
      r.id,
      r.versions || '-',
      r.ok ? 'pass' : 'FAIL',
      r.install.toFixed(1),
      r.build.toFixed(1),
      r.boot.toFixed(1),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((t) => t[i].length)));
    const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
    console.log(`\n${line(header)}\n| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
    for (const t of table) console.log(line(t));
    for (const r of rows) {
      console.log(`\n${r.id}:`);
      for (const n of r.notes) console.log(`  ${n}`);
      if (r.failure) console.log(`  FAILED: ${r.failure.split('\n').join('\n    ')}`);
    }
    console.log(
      `\n${rows.filter((r) => r.ok).length}/${rows.length} combinations passed in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    if (!rows.every((r) => r.ok) || rows.length === 0) process.exitCode = 1;
  } finally {
    if (KEEP) console.log(`kept ${base}`);
    else rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
