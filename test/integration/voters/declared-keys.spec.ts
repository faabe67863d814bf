import { Redis } from 'ioredis';
import { Redlock } from '../../../lib/core/engine/redlock.js';
import { CLOCK_MARK, IDENTITY_CHECK, RUN_ID, SEED_SLOT_MARKERS } from '../../../lib/core/scripts/guards.js';
import type { LuaScript } from '../../../lib/core/scripts/lua.js';
import { ACL_PROBE } from '../../../lib/core/voter/acl-probe.js';
import { LOCK_SCRIPTS } from '../../../lib/core/scripts/library.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';

/*
 * Every key a lock script touches is declared in KEYS (issue 35, item 4): proxies, Redis Enterprise,
 * Dragonfly and cluster-mode services route or refuse scripts by their declared keys. MONITOR shows
 * each command a script runs; COMMAND GETKEYS names the keys of each; a key not among the call's
 * KEYS is undeclared. The guards' maintenance scripts (identity check, clock marking, seeding a
 * Cluster's slot markers) find counters by SCAN and are listed apart: docs/deploying.md names them.
 */

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const MAINTENANCE: readonly LuaScript[] = [IDENTITY_CHECK, CLOCK_MARK, SEED_SLOT_MARKERS, RUN_ID, ACL_PROBE];
const names = new Map([...LOCK_SCRIPTS, ...MAINTENANCE].map((s) => [s.sha, s.name]));
/** A script's source as a MONITOR line shows it through ioredis (Redis escapes it; ioredis unescapes `\"`). */
const monitored = (source: string) =>
  source.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
const bySource = new Map([...LOCK_SCRIPTS, ...MAINTENANCE].map((s) => [monitored(s.source), s.name]));

interface Seen {
  /** Script name → key accesses that were not declared. */
  readonly undeclared: Map<string, string[]>;
  /** Script name → commands it ran. */
  readonly ran: Map<string, number>;
}

/** Watches `ports` with MONITOR while `work` runs; then reads each scripted command's keys. */
async function watch(ports: readonly number[], work: () => Promise<void>): Promise<Seen> {
  const lines: Array<{ port: number; args: string[]; lua: boolean }> = [];
  const monitors = await Promise.all(
    ports.map(async (port) => {
      // monitor() opens a connection of its own: the client it is called on never connects (it
      // used to, and its ready check could reach the new MONITOR in one read with its OK, which
      // ioredis took for a reply: "Command queue state error"), and is closed at once (left open,
      // it reconnected for ever once the servers stopped, and Jest never exited).
      const client = new Redis(port, '127.0.0.1', { lazyConnect: true });
      const monitor = await client.monitor().finally(() => client.disconnect());
      monitor.on('monitor', (_time: string, args: string[], source: string) =>
        lines.push({ port, args, lua: source.includes('lua') }),
      );
      return monitor;
    }),
  );
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    for (const monitor of monitors) monitor.disconnect();
  }
  const seen: Seen = { undeclared: new Map(), ran: new Map() };
  const admins = new Map(ports.map((port) => [port, new Redis(port, '127.0.0.1')]));
  try {
    const current = new Map<number, { name: string; declared: Set<string> } | undefined>();
    for (const { port, args, lua } of lines) {
      const command = args[0]!.toUpperCase();
      if (!lua) {
        const scripted = command === 'EVALSHA' || command === 'EVAL';
        const name = scripted ? (names.get(args[1]!) ?? bySource.get(args[1]!) ?? 'unknown') : '';
        current.set(
          port,
          scripted ? { name, declared: new Set(args.slice(3, 3 + Number(args[2]))) } : undefined,
        );
        continue;
      }
      const call = current.get(port);
      if (!call) continue;
      seen.ran.set(call.name, (seen.ran.get(call.name) ?? 0) + 1);
      const keys = (await admins
        .get(port)!
        .call('COMMAND', 'GETKEYS', ...args)
        .catch(() => [])) as string[];
      for (const key of keys) {
        if (call.declared.has(key)) continue;
        seen.undeclared.set(call.name, [...(seen.undeclared.get(call.name) ?? []), `${command} ${key}`]);
      }
    }
  } finally {
    for (const admin of admins.values()) admin.disconnect();
  }
  return seen;
}

/** Plain, contended (hand-over), extended (watchdog batches), read, semaphore and multi-key locks. */
async function everyKindOfLock(engine: Redlock, other: Redlock): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const lock = await engine.acquire(`dk:plain${i}`);
    await lock.extend(500);
    await lock.release();
  }
  const held = await engine.acquire('dk:contended', { ttl: 500 });
  const waiter = other.acquire('dk:contended', { wait: 3000 });
  await new Promise((resolve) => setTimeout(resolve, 150));
  await held.release();
  await (await waiter).release();
  // Two locks held under the watchdog at once: their extensions go out as one batch.
  const watched = await Promise.all([
    engine.acquire('{dk:w}a', { ttl: 300, watchdog: true }),
    engine.acquire('{dk:w}b', { ttl: 300, watchdog: true }),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 450));
  await Promise.all(watched.map((lock) => lock.release()));
  const readers = await Promise.all([
    engine.acquire('dk:rw', { mode: 'read' }),
    other.acquire('dk:rw', { mode: 'read' }),
  ]);
  const writer = engine.acquire('dk:rw', { wait: 3000 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  await Promise.all(readers.map((lock) => lock.extend(500).then(() => lock.release())));
  await (await writer).release();
  const permit = await engine.acquire('dk:sem', { permits: 3 });
  await permit.extend(500);
  await permit.release();
  const multi = await engine.acquire(['{dk:m}1', '{dk:m}2']);
  await multi.release();
  await engine.inspect('dk:contended');
}

function expectEveryLockKeyDeclared(seen: Seen): void {
  const lockScripts = new Set(LOCK_SCRIPTS.map((s) => s.name));
  const undeclared = Object.fromEntries([...seen.undeclared].filter(([name]) => lockScripts.has(name)));
  expect(undeclared).toEqual({});
  // The check saw the scripts it is about (it cannot pass by seeing nothing).
  const ran = ['acquire', 'let-go', 'extend', 'extend-many', 'read-acquire', 'semaphore-acquire'];
  expect(ran.filter((name) => !seen.ran.has(name))).toEqual([]);
  expect(seen.ran.get('unknown')).toBeUndefined();
}

describe('every key a lock script touches is declared', () => {
  test('on single servers (the restart-guard marker included), for every kind of lock', async () => {
    const nodes = await RedisNodes.start(3);
    const options = { nodes: nodes.urls, ttl: 500, restartGuard: 600, logger: quiet };
    const [engine, other] = [new Redlock(options), new Redlock(options)];
    try {
      await Promise.all([engine.connect(), other.connect()]);
      await new Promise((resolve) => setTimeout(resolve, 650)); // new servers: their guard passes
      const seen = await watch(nodes.ports, () => everyKindOfLock(engine, other));
      expectEveryLockKeyDeclared(seen);
      // What is left undeclared is the guards' maintenance (docs/deploying.md names it).
      expect(
        [...seen.undeclared.keys()].every((name) => !new Set(LOCK_SCRIPTS.map((s) => s.name)).has(name)),
      ).toBe(true);
    } finally {
      await Promise.all([engine.close(), other.close()]);
      await nodes.close();
    }
  }, 30_000);

  test('on a Redis Cluster: the slot markers declared beside the lock keys, one slot per call', async () => {
    const shards = await RedisClusterNodes.start(3);
    // The guard off: a Cluster voter seeds its slots' markers after connect() resolved, so a fixed
    // wait cannot know when every slot's guard has passed (one seeded late still abstained 53 ms
    // after 650 ms in a loaded run). The scripts read and write the same declared marker either way.
    const options = {
      nodes: [{ cluster: shards.startupNodes }],
      ttl: 500,
      restartGuard: false as const,
      logger: quiet,
    };
    const engines: Redlock[] = [];
    try {
      // MONITOR starts before the engines are built: ioredis' monitor() fails ("Command queue state
      // error") when monitored lines come in the same read as MONITOR's OK, and an engine's Cluster
      // client connects (CLUSTER SLOTS) as soon as it is built.
      const connectAndLock = async () => {
        const [engine, other] = [new Redlock(options), new Redlock(options)];
        engines.push(engine, other);
        await Promise.all([engine.connect(), other.connect()]);
        await everyKindOfLock(engine, other);
      };
      expectEveryLockKeyDeclared(await watch(shards.nodes.ports, connectAndLock));
    } finally {
      await Promise.all(engines.map((engine) => engine.close()));
      await shards.nodes.close();
    }
  }, 40_000);
});
