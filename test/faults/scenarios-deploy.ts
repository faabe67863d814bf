/**
 * Fault scenarios of real deployments (TESTING.md S5-aof, S5-flush, S15): a granting node that
 * comes back with some of its data (AOF everysec), loses it without a restart (FLUSHALL), or is
 * replaced by a lagging replica (a real Sentinel failover). Each runs with the restart/identity
 * guard, and as a control with the guard off, which must show what the guard prevents.
 */
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import type { FaultEnv } from './harness.js';
import { SentinelNodes } from './sentinel.js';
import { firstMessage, now, sleep } from './harness.js';
import {
  pick,
  randomNodes,
  runWhile,
  scenario,
  spawnReady,
  type ScenarioResult,
  type WorkerOptions,
} from './scenarios.js';

const TTL = 1000;

/** The polling workers of S5: a lock that became free (wrongly) is taken at once. */
function pollers(resource: string, guard: number | false): WorkerOptions {
  return {
    resource,
    lock: true,
    ttl: TTL,
    wait: 0,
    nodeTimeout: 100,
    restartGuard: guard,
    holdMs: [300, 500],
    gapMs: [0, 20],
    failBackoffMs: [5, 15],
    notify: true,
  };
}

/** The AOF file node `index` appends to (Redis 7: the newest `*.incr.aof` in appendonlydir). */
async function appendFile(env: FaultEnv, index: number): Promise<string> {
  const [, dir] = (await env.adminClient(index).config('GET', 'dir')) as [string, string];
  const aofDir = join(dir, 'appendonlydir');
  const seq = (f: string) => Number(/\.(\d+)\.incr\.aof$/.exec(f)?.[1] ?? -1);
  const newest = readdirSync(aofDir)
    .filter((f) => f.endsWith('.incr.aof'))
    .sort((a, b) => seq(b) - seq(a))[0];
  if (!newest) throw new Error(`no incr AOF file in ${aofDir}`);
  return join(aofDir, newest);
}

/**
 * S5-aof: while a worker holds the lock, 3 of the 5 nodes (appendonly yes, appendfsync everysec)
 * crash and come back from their AOF without its last writes.
 *
 * Why the AOF is cut: with everysec Redis write()s every command to the file before it replies
 * and fsyncs once a second, so a SIGKILLed process loses nothing (the kernel still has the page
 * cache; a stall by SIGSTOP or DEBUG SLEEP does not change that: measured, see RESULTS.md). What
 * everysec loses is what the kernel had not written to the disk when the machine went down: up to
 * the last second of writes. The driver emulates that machine crash: it notes the size of each
 * node's AOF, waits for the next grant (at most 900 ms), SIGKILLs the nodes, cuts their AOF back
 * to the noted size (the disk as of the last fsync), and starts them on the same directory. The
 * holder's lock key and its fencing-counter increment are then gone from those nodes, while the
 * guard marker (written long before) is back. Holds are long (1.5-2.5 s of a 3 s ttl), so that the
 * holder still holds when the nodes are back: without the guard another worker then wins the 3 of
 * them, with the token the holder already has (their counters lost its increment).
 */
function aofScenario(id: string, title: string, guard: number | false): Promise<ScenarioResult> {
  const cycles = pick(2, 8);
  return scenario(id, title, { persistence: 'aof-everysec', seedGuardMarker: true }, async (env) => {
    const ws = await spawnReady(env, pick(3, 4), () => ({
      ...pollers(id.toLowerCase(), guard),
      ttl: AOF_TTL,
      holdMs: [1500, 2500],
    }));
    let crashes = 0;
    let lostMs = 0;
    await runWhile(env, ws, async () => {
      for (let c = 0, tries = 0; c < cycles && tries < 10 * cycles; tries++) {
        const nodes = randomNodes(3);
        const files = await Promise.all(nodes.map((i) => appendFile(env, i)));
        const sizes = files.map((f) => statSync(f).size);
        const synced = performance.now();
        const hit = await firstMessage(ws, 'grant', 900);
        if (!hit) continue;
        const start = now();
        await Promise.all(nodes.map((i) => env.redis.kill(i)));
        lostMs = Math.max(lostMs, performance.now() - synced);
        files.forEach((f, k) => truncateSync(f, sizes[k]));
        await Promise.all(nodes.map((i) => env.redis.revive(i)));
        env.mark(`crash ${nodes.join(',')}, AOF cut to its last fsync`, start, now());
        crashes++;
        c++;
        await sleep(guard === false ? 1000 : guard + 1000);
      }
    });
    return {
      resources: [id.toLowerCase()],
      summarise: (r) => ({
        figures: { crashes },
        note:
          `${crashes} x 3-node crashes losing up to ${Math.round(lostMs)} ms of acknowledged writes; ` +
          `${r.failures.QuorumUnavailableError ?? 0} acquires refused while nodes abstained or were down; ` +
          `largest token step ${r.maxTokenStep}`,
      }),
    };
  });
}

const AOF_TTL = 3000;
export const s5Aof = () =>
  aofScenario(
    'S5-aof',
    'granting nodes crash with AOF everysec, last writes lost; identity guard = ttl',
    AOF_TTL,
  );
export const s5AofNoGuard = () =>
  aofScenario('S5-aof-noguard', 'same, guard OFF (must show overlaps or tokens going back)', false);

/** S5-flush: right after a grant, FLUSHALL on 3 of the 5 nodes (no restart: connections stay). */
function flushScenario(id: string, title: string, guard: number | false): Promise<ScenarioResult> {
  const cycles = pick(3, 10);
  return scenario(id, title, { seedGuardMarker: true }, async (env) => {
    const ws = await spawnReady(env, pick(3, 4), () => pollers(id.toLowerCase(), guard));
    let flushes = 0;
    await runWhile(env, ws, async () => {
      for (let c = 0; c < cycles; c++) {
        const hit = await firstMessage(ws, 'grant', 10_000);
        if (!hit) continue;
        const nodes = randomNodes(3);
        const start = now();
        await Promise.all(nodes.map((i) => env.adminClient(i).flushall()));
        env.mark(`FLUSHALL ${nodes.join(',')}`, start, now());
        flushes++;
        await sleep(guard === false ? 1000 : guard + 1000);
      }
    });
    return {
      resources: [id.toLowerCase()],
      summarise: (r) => ({
        figures: { flushes },
        note:
          `${flushes} x FLUSHALL on 3 nodes right after a grant; ${r.failures.QuorumUnavailableError ?? 0} ` +
          `acquires refused while nodes abstained; largest token step ${r.maxTokenStep}`,
      }),
    };
  });
}

export const s5Flush = () =>
  flushScenario('S5-flush', 'FLUSHALL on 3 granting nodes; restart guard = ttl', TTL);
export const s5FlushNoGuard = () =>
  flushScenario('S5-flush-noguard', 'same, guard OFF (must show overlaps)', false);

/**
 * S15: 5 voters, 3 of them Sentinel-managed primaries whose replicas lag 500 ms (sentinel.ts).
 * Right after a grant, the 3 primaries are SIGKILLed and a real Sentinel promotes the replicas,
 * which lack the holder's lock key and counter increment. Holds are long (3.5-4.5 s of a 5 s ttl)
 * so that the holder still holds when the promoted replicas serve: without the guard a second
 * client then wins the 3 of them.
 */
function failoverScenario(id: string, title: string, guard: number | false): Promise<ScenarioResult> {
  const ttl = 5000;
  const cycles = pick(1, 3);
  return scenario<SentinelNodes>(
    id,
    title,
    { launch: () => SentinelNodes.start(2, 3, 500), seedGuardMarker: true },
    async (env) => {
      const ws = await spawnReady(env, 3, () => ({
        ...pollers(id.toLowerCase(), guard),
        ttl,
        holdMs: [3500, 4500],
        failBackoffMs: [20, 40],
      }));
      const groups = [0, 1, 2].map((g) => env.redis.firstGroup + g);
      const promotions: number[] = [];
      await runWhile(env, ws, async () => {
        for (let c = 0; c < cycles; c++) {
          const hit = await firstMessage(ws, 'grant', 20_000);
          if (!hit) continue;
          const start = now();
          const took = await Promise.all(groups.map((i) => env.redis.failover(i)));
          promotions.push(...took);
          env.mark(`failover of ${groups.join(',')}`, start, now());
          await sleep((guard === false ? 0 : guard) + 1000);
        }
      });
      return {
        resources: [id.toLowerCase()],
        summarise: (r) => ({
          figures: { failovers: promotions.length },
          note:
            `${promotions.length} Sentinel failovers to replicas 500 ms behind (promoted ` +
            `${Math.round(Math.min(...promotions))}-${Math.round(Math.max(...promotions))} ms after the kill, ` +
            `next replica set up); ${r.failures.QuorumUnavailableError ?? 0} acquires refused while the promoted ` +
            `replicas abstained or were down; largest token step ${r.maxTokenStep}`,
        }),
      };
    },
  );
}

export const s15Failover = () =>
  failoverScenario('S15', 'Sentinel failover of 3 granting voters to lagging replicas; guard = ttl', 5000);
export const s15FailoverNoGuard = () =>
  failoverScenario('S15-noguard', 'same, guard OFF (must show overlaps or tokens going back)', false);
