import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LET_GO } from '../../../lib/core/scripts/let-go.js';
import type { RedisNodes } from '../../../lib/testing/index.js';
import { commandStats } from '../../support/commandstats.js';
import { TestCluster } from '../../support/cluster.js';
import { until } from '../deployments/support.js';

/*
 * A release is sent to every node and resolves without waiting for their replies (unless
 * `confirmRelease`): the command is on its way, on each node's connection behind the lock's own
 * commands, before it resolves. These tests count what the servers ran (INFO commandstats) and check
 * that the releases land, in order, also where a node is paused or lost its script cache.
 */

const PREFIX = 'redlock:';
const lockKey = (r: string) => `${PREFIX}{${r}}`;

const releaseThenExit = fileURLToPath(new URL('../../support/release-then-exit.mjs', import.meta.url));

/** Runs a Node script to its exit (killed after 20 s): its exit code and standard output. */
function runNode(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...env } });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.pipe(process.stderr);
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

async function resetStats(nodes: RedisNodes): Promise<void> {
  await Promise.all(nodes.urls.map((_, i) => nodes.client(i).call('CONFIG', 'RESETSTAT')));
}

describe('releases (real nodes)', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
  });
  afterAll(() => cluster?.close());

  test('each release is one script per node; keys are gone, and every later reply answers its own command', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 500 });
    await resetStats(nodes);

    // UTF-8 names (byte lengths differ from string lengths) and a multi-resource lock.
    const resources = ['résumé-🔒', 'plain'];
    let lastToken = 0;
    const cycles = 40;
    for (let i = 0; i < cycles; i++) {
      const lock = await engine.acquire(resources, { ttl: 5000 });
      expect(lock.fencingToken).toBeGreaterThan(lastToken);
      lastToken = lock.fencingToken;
      await lock.extend(5000); // a reply read after one-way calls on the same connection
      expect((await engine.inspect(resources[0]!)).held).toBe(true);
      await lock.release();
      expect((await engine.inspect(resources[0]!)).held).toBe(false);
    }

    for (let i = 0; i < 5; i++) {
      // Per cycle and node: the acquire, the extension, two inspections, the release.
      expect((await commandStats(nodes.client(i), 'evalsha')).calls).toBeLessThanOrEqual(cycles * 5);
      for (const resource of resources) expect(await nodes.client(i).exists(lockKey(resource))).toBe(0);
    }
  });

  test('released in one tick, then process.exit() at once: every node runs every release (their bytes had left)', async () => {
    const nodes = cluster.redis;
    for (let round = 0; round < 3; round++) {
      const names = Array.from({ length: 8 }, (_, i) => `exited-${round}-${i}`);
      const { code, stdout } = await runNode(releaseThenExit, {
        NODE_URLS: nodes.urls.join(','),
        NAMES: names.join(','),
      });
      expect({ code, stdout }).toEqual({ code: 0, stdout: `${JSON.stringify({ released: names })}\n` });
      // Released: gone within a moment. Lost with the process: held for their 30 s lease.
      await until(async () => {
        const left = await Promise.all(
          nodes.urls.map((_, i) => nodes.client(i).exists(...names.map((name) => lockKey(name)))),
        );
        return left.every((n) => n === 0);
      }, 5000);
    }
  });

  test('release resolves without waiting for replies: with 3 of 5 nodes stopped it returns at once, and they apply it when resumed', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 1000 });
    const lock = await engine.acquire('stopped', { ttl: 10_000 });
    for (const i of [0, 1, 2]) nodes.stop(i);
    try {
      const started = performance.now();
      await lock.release();
      // Waiting for replies, this would take nodeTimeout (1000 ms): no majority can answer.
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      for (const i of [0, 1, 2]) nodes.resume(i);
    }
    await until(async () => {
      const left = await Promise.all(nodes.urls.map((_, i) => nodes.client(i).exists(lockKey('stopped'))));
      return left.every((n) => n === 0);
    });
    // The keys are gone well before their 10 s lease: another engine takes the lock at once.
    const other = await cluster.engine();
    const next = await other.tryAcquire('stopped');
    expect(next).not.toBeNull();
    await next?.release();
  });

  test('confirmRelease: true: releases wait for a majority of replies (3 of 5 nodes stopped: nodeTimeout)', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 1000, confirmRelease: true });
    for (let i = 0; i < 10; i++) await (await engine.acquire('confirmed', { ttl: 5000 })).release();
    for (let i = 0; i < 5; i++) expect(await nodes.client(i).exists(lockKey('confirmed'))).toBe(0);

    const lock = await engine.acquire('confirmed-stopped', { ttl: 10_000 });
    for (const i of [0, 1, 2]) nodes.stop(i);
    let tookMs: number;
    try {
      const started = performance.now();
      await lock.release();
      tookMs = performance.now() - started;
    } finally {
      for (const i of [0, 1, 2]) nodes.resume(i);
    }
    // No majority can answer: the release waits for the nodes' time-out (unconfirmed: < 200 ms above).
    expect(tookMs).toBeGreaterThanOrEqual(900);
    await until(async () => {
      const left = await Promise.all(
        nodes.urls.map((_, i) => nodes.client(i).exists(lockKey('confirmed-stopped'))),
      );
      return left.every((n) => n === 0);
    });
  });

  test('a flushed script cache: a release that met it is sent again once NOSCRIPT comes back; no key is left', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 200 });
    await engine.probe(); // a PING behind the scripts each connection loads once checked: all loaded
    await Promise.all(nodes.urls.map((_, i) => nodes.client(i).call('SCRIPT', 'FLUSH')));
    // Node 4 is paused: the acquire is decided by the other four (NOSCRIPT, then the source), and
    // the release goes to node 4 behind the acquire, before its NOSCRIPT can come back.
    nodes.stop(4);
    try {
      const lock = await engine.acquire('flushed', { ttl: 10_000 });
      await lock.release();
    } finally {
      nodes.resume(4);
    }
    // Node 4 then runs the acquire (NOSCRIPT: not sent again, its release went out since) and the
    // release (NOSCRIPT too): the release's source is sent again, and finds nothing. On nodes 0-3
    // the release met NOSCRIPT too and is sent again once that reply is read: this process's checks
    // on its own connections may come before it. A key missed stays for its 10 s lease.
    await until(async () => {
      const left = await Promise.all(nodes.urls.map((_, i) => nodes.client(i).exists(lockKey('flushed'))));
      return left.every((n) => n === 0);
    }, 2000);
  });

  test('a script cache that holds the release script but not the acquire one: the acquire met by NOSCRIPT after its release is not sent again, no key is left', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 200 });
    await engine.probe(); // behind the scripts each connection loads once checked
    // Node 3's cache loses every script but LET_GO (a flush between two of a new connection's
    // SCRIPT LOADs), and node 3 holds writes back: the acquire's EVALSHA and then the release's wait
    // there. Resumed, the acquire meets NOSCRIPT and the release runs (nothing to free yet); an
    // acquire sent again with its source would then take the key for its lease.
    const admin = nodes.client(3);
    await admin.call('SCRIPT', 'FLUSH');
    await admin.call('SCRIPT', 'LOAD', LET_GO.source);
    await admin.call('CLIENT', 'PAUSE', '3000', 'WRITE');
    try {
      const lock = await engine.acquire('half-flushed', { ttl: 10_000 });
      await lock.release();
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
    // Node 3 runs both within a round trip of resuming; a key sent again would stay for 10 s.
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 5; i++) expect(await nodes.client(i).exists(lockKey('half-flushed'))).toBe(0);
    // The engine keeps working there: the next lock loads the acquire script and is granted.
    const next = await engine.acquire('half-flushed', { ttl: 10_000 });
    // A quorum may answer before node 3 (its acquire meets NOSCRIPT first).
    await until(async () => (await admin.exists(lockKey('half-flushed'))) === 1, 2000);
    await next.release();
  });

  test('a node still being checked when the lock is asked for: its release is sent after its vote, no key is left', async () => {
    const nodes = cluster.redis;
    const engine = await cluster.engine({ nodeTimeout: 200 });
    // Node 3 holds writes back (CLIENT PAUSE WRITE) and drops the engine's connections: the engine
    // connects again and checks the server (its identity script is a write: held back), and node
    // 3's votes wait for that check. The acquire is decided by the other four and released at once.
    const admin = nodes.client(3);
    await admin.call('CLIENT', 'PAUSE', '3000', 'WRITE');
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
      await until(async () => /checking the server/.test(engine.status()[3]!.error ?? ''), 2000);
      const lock = await engine.acquire('checked-late', { ttl: 10_000 });
      await lock.release();
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
    // Node 3 then ends its check and runs the vote (a grant): its release must run after it.
    await until(async () => engine.status()[3]!.reachable, 2000);
    await until(async () => (await nodes.client(3).exists(lockKey('checked-late'))) === 0, 2000); // lease: 10 s
    for (let i = 0; i < 5; i++) expect(await nodes.client(i).exists(lockKey('checked-late'))).toBe(0);
    // Node 3 did grant (its fence counter was created): the release ran after the vote.
    expect(await nodes.client(3).exists(`${lockKey('checked-late')}:fence`)).toBe(1);
  });
});
