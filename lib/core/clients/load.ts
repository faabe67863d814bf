import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { RedlockOptionsError } from '../errors.js';
import type { RedisClientPackage } from './types.js';

/*
 * The client packages are optional peers, loaded only when needed: ioredis when the engine opens
 * an ioredis connection itself (a URL or options with `client: 'ioredis'`), node-redis likewise.
 * A client passed in ready-made needs no load at all. `require` (CommonJS, synchronous: the
 * engine builds its voters in its constructor) resolves from the application's directory, so the
 * application's copy is found; all three packages are CommonJS.
 */

// Resolved from the application's directory (its working directory, then the entry script's):
// the client packages are the application's own peers. Not `import.meta.url`: a CommonJS app whose
// test runner compiles this package to CommonJS (ts-jest before Node 24.9) cannot compile it.
const requireFromApp = [process.cwd(), process.argv[1] ? dirname(process.argv[1]) : undefined]
  .filter((dir): dir is string => dir !== undefined)
  .map((dir) => createRequire(join(dir, 'noop.js')));

function requireFromHere(name: string): unknown {
  let failure: unknown;
  for (const load of requireFromApp) {
    try {
      return load(name);
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/** npm package name of each client. */
export const PACKAGE_NAME: Readonly<Record<RedisClientPackage | 'glide', string>> = {
  ioredis: 'ioredis',
  'node-redis': 'redis',
  glide: '@valkey/valkey-glide',
};

const loaded = new Map<string, unknown>();

/** Loads a client package by name; undefined when it is not installed (or fails to load). */
export function tryLoad(name: string): unknown {
  if (loaded.has(name)) return loaded.get(name);
  let module: unknown;
  try {
    module = requireFromHere(name);
  } catch {
    module = undefined;
  }
  loaded.set(name, module);
  return module;
}

/** Whether a client package can be loaded here. */
export type CanLoad = (pkg: RedisClientPackage) => boolean;

const canLoadInstalled: CanLoad = (pkg) => tryLoad(PACKAGE_NAME[pkg]) !== undefined;

const INSTALL: Readonly<Record<RedisClientPackage, string>> = {
  ioredis: 'npm install ioredis',
  'node-redis': 'npm install redis',
};

/**
 * The package that URL strings and option objects in `nodes` become connections of: `chosen`
 * (the `client` option) when it is installed, else ioredis when it can be loaded, else node-redis.
 * @throws RedlockOptionsError naming the missing package(s) and how to install them.
 */
export function chooseClientPackage(
  chosen: RedisClientPackage | undefined,
  canLoad: CanLoad = canLoadInstalled,
): RedisClientPackage {
  if (chosen !== undefined) {
    if (canLoad(chosen)) return chosen;
    throw new RedlockOptionsError(
      'client',
      `'${chosen}' is chosen, but the package "${PACKAGE_NAME[chosen]}" cannot be loaded`,
      `Install it (${INSTALL[chosen]}), or choose the client you have installed.`,
    );
  }
  if (canLoad('ioredis')) return 'ioredis';
  if (canLoad('node-redis')) return 'node-redis';
  throw new RedlockOptionsError(
    'nodes',
    'URLs and connection options need a Redis client package, and neither "ioredis" nor "redis" (node-redis) is installed',
    `Install one of them: ${INSTALL.ioredis}, or ${INSTALL['node-redis']} (or pass ready-made clients, e.g. iovalkey or Valkey GLIDE ones).`,
  );
}

/** Validates the `client` option's value. */
export function clientOption(value: unknown): RedisClientPackage | undefined {
  if (value === undefined || value === 'ioredis' || value === 'node-redis') return value;
  throw new RedlockOptionsError(
    'client',
    `got ${typeof value === 'string' ? `'${value}'` : typeof value}`,
    "Use 'ioredis' or 'node-redis' (or leave it out: ioredis when it is installed, else node-redis).",
  );
}

/**
 * The ioredis module (`Redis`, `Cluster`), loaded on first use.
 * @throws RedlockOptionsError when it is not installed.
 */
export function ioredisModule<T = unknown>(): T {
  const module = tryLoad(PACKAGE_NAME.ioredis);
  if (module === undefined) {
    throw new RedlockOptionsError(
      'client',
      'this needs ioredis, which is not installed',
      `Install it (${INSTALL.ioredis}), or use node-redis (client: 'node-redis').`,
    );
  }
  return module as T;
}

/**
 * The node-redis module (`createClient`, `createCluster`), loaded on first use.
 * @throws RedlockOptionsError when it is not installed.
 */
export function nodeRedisModule<T = unknown>(): T {
  const module = tryLoad(PACKAGE_NAME['node-redis']);
  if (module === undefined) {
    throw new RedlockOptionsError(
      'client',
      'this needs node-redis (the "redis" package), which is not installed',
      `Install it (${INSTALL['node-redis']}), or use ioredis (client: 'ioredis').`,
    );
  }
  return module as T;
}
