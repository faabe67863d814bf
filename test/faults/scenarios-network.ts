/**
 * Network faults (TESTING.md S16-S19): the lock nodes run in network namespaces of their own
 * (netns.ts) and the workers reach them over veth links, which the driver cuts, flaps, or makes
 * asymmetric with nftables. The histories go through the same checker as every other scenario.
 *
 * What decides recovery here: the engine keeps its connections through a partition (a cut link
 * resets nothing, and a command that timed out after nodeTimeout leaves the socket alone), so
 * ioredis never sees an error and never reconnects. Once a link is back, what was queued in the
 * socket leaves at the next TCP retransmission of the connection, whose back-off doubles from
 * ~200 ms during the cut: a node is heard again within about as long as it was cut off, at most.
 */
import {
  between,
  FaultEnv,
  firstMessage,
  GUARD_MARKER,
  lockKey,
  now,
  nsToMs,
  sleep,
  type WorkerProcess,
} from './harness.js';
import { attemptsWithin, type Report } from './checker.js';
import { NetworkNodes } from './netns.js';
import {
  pct,
  pick,
  randomNodes,
  runWhile,
  scenario,
  spawnReady,
  windowsMs,
  type ScenarioResult,
  type WorkerOptions,
} from './scenarios.js';

type NetEnv = FaultEnv<NetworkNodes>;

/** Every scenario here: 5 namespaced nodes whose guard markers look old (nothing restarts). */
const envOptions = {
  launch: (count: number, options: { debugCommands?: boolean }) => NetworkNodes.start(count, options),
  seedGuardMarker: true,
};

const common = { lock: true, ttl: 1000, nodeTimeout: 100 } as const;

/** Worker 0 alone on its resource (its availability is the point), the others contending on `id`. */
function soloAndContenders(id: string): (k: number) => WorkerOptions {
  return (k) =>
    k === 0
      ? { ...common, resource: `${id}-solo`, wait: 0, gapMs: [1, 3], holdMs: [0, 1] }
      : { ...common, resource: id, wait: 2000, holdMs: [5, 40], gapMs: [0, 10] };
}

/** Latency percentiles (ms) of the decided attempts of `resource` requested inside `windows`. */
function latencyInside(r: Report, windows: ReadonlyArray<{ start: number; end: number }>, resource: string) {
  const ms = r.acquires
    .filter((a) => a.resource === resource && a.outcome !== 'indeterminate')
    .filter((a) => windows.some((w) => a.request >= w.start && a.request < w.end))
    .map((a) => a.end! - a.request)
    .sort((x, y) => x - y);
  return { p99: ms[Math.floor(ms.length * 0.99)] ?? 0, max: ms[ms.length - 1] ?? 0 };
}

/** Cuts `nodes` off for `ms`, records the window, heals. */
async function cut(env: NetEnv, nodes: number[], ms: number, label: string): Promise<bigint> {
  env.redis.partition(nodes);
  const start = now();
  // A cut link must keep its route: otherwise test traffic would go to the default gateway.
  env.redis.assertRoutedLocally();
  await sleep(ms);
  // The window ends as the first link comes back (healing three links one by one took 200-400 ms
  // on a loaded machine, and the first healed node made a majority again meanwhile).
  const end = now();
  env.redis.heal(nodes);
  env.mark(`${label} ${nodes.join(',')}`, start, end);
  return end;
}

// ---- S16 ----------------------------------------------------------------------------------------

/** S16: 1 or 2 of 5 nodes cut off for seconds, again and again. */
export function s16MinorityPartition(): Promise<ScenarioResult> {
  const phases = pick(2, 8);
  const phaseMs = pick(1000, 2500);
  return scenario('S16', '1-2 of 5 nodes partitioned (links down), repeatedly', envOptions, async (env) => {
    const ws = await spawnReady(env, pick(3, 4), soloAndContenders('s16'));
    await runWhile(env, ws, async () => {
      await sleep(300);
      for (let p = 0; p < phases; p++) {
        await cut(env, randomNodes(1 + (p % 2)), phaseMs, 'partition');
        // Until the healed connections retransmit (at most about the cut's length), one more cut
        // would take out more than a minority: that is S17's case, not this one.
        await sleep(phaseMs + 300);
      }
    });
    return {
      resources: ['s16', 's16-solo'],
      summarise: (r) => {
        const windows = windowsMs(env);
        const solo = attemptsWithin(r.acquires, windows, 's16-solo');
        const { p99, max } = latencyInside(r, windows, 's16-solo');
        const contended = r.acquires.filter((a) => a.resource === 's16' && a.outcome === 'granted').length;
        return {
          figures: {
            partitions: windows.length,
            soloAttempts: solo.attempts,
            soloAvailability: solo.attempts ? solo.grants / solo.attempts : 0,
            soloP99Ms: p99,
          },
          note:
            `${windows.length} partitions of ${phaseMs} ms; uncontended during them: ${solo.grants}/${solo.attempts} ` +
            `(${pct(solo.attempts ? solo.grants / solo.attempts : 0)}), p99 ${p99.toFixed(1)} ms, max ` +
            `${max.toFixed(0)} ms; ${contended} contended grants`,
        };
      },
    };
  });
}

// ---- S17 ----------------------------------------------------------------------------------------

/**
 * Worker connections on node `index` opened after `sinceMs` ago (CLIENT LIST `age`, read inside
 * the namespace): a reconnect would show up as a young connection.
 */
function youngConnections(env: NetEnv, index: number, sinceMs: number): number {
  return env.redis
    .readInside(index, 'CLIENT', 'LIST')
    .split('\n')
    .filter((line) => line.includes('addr=10.') && !line.includes('name=harness'))
    .filter((line) => Number(/ age=(\d+)/.exec(line)?.[1] ?? 0) * 1000 < sinceMs - 1000).length;
}

/** S17: 3 of 5 nodes cut off: no grant while they are; how soon grants resume after healing. */
export function s17MajorityPartition(): Promise<ScenarioResult> {
  const wait = 500;
  const cycles = pick(1, 4);
  const phaseMs = pick(1500, 3000);
  return scenario('S17', '3 of 5 nodes partitioned (a majority)', envOptions, async (env) => {
    const ws = await spawnReady(env, 3, () => ({
      ...common,
      resource: 's17',
      wait,
      holdMs: [5, 20],
      failBackoffMs: [20, 50],
      notify: true,
    }));
    const recoveries: number[] = [];
    let reconnected = 0;
    const started = performance.now();
    await runWhile(env, ws, async () => {
      await sleep(300);
      for (let c = 0; c < cycles; c++) {
        const nodes = randomNodes(3);
        const healedAt = await cut(env, nodes, phaseMs, 'partition');
        const hit = await firstMessage(ws, 'grant', 20_000);
        recoveries.push(hit ? nsToMs(now() - healedAt) : Infinity);
        for (const i of nodes) reconnected += youngConnections(env, i, performance.now() - started);
        await sleep(phaseMs + 500); // every healed connection is back before the next cut
      }
    });
    return {
      resources: ['s17'],
      summarise: (r) => {
        const windows = windowsMs(env);
        // Attempts that began and ended inside a window: the majority was away all along.
        const inside = r.acquires.filter(
          (a) =>
            a.outcome !== 'indeterminate' && windows.some((w) => a.request >= w.start && a.end! <= w.end),
        );
        const grantsInside = inside.filter((a) => a.outcome === 'granted').length;
        const finite = recoveries.filter(Number.isFinite);
        return {
          figures: {
            partitions: windows.length,
            attemptsInside: inside.length,
            grantsInside,
            recovered: finite.length,
            minRecoveryMs: Math.min(...recoveries),
            maxRecoveryMs: Math.max(...recoveries),
            reconnected,
            maxAttemptMs: r.maxAttemptMs,
            phaseMs,
            wait,
          },
          note:
            `${windows.length} partitions of ${phaseMs} ms: ${inside.length} attempts during them, ${grantsInside} ` +
            `granted; slowest attempt ${r.maxAttemptMs.toFixed(0)} ms (wait ${wait}); first grant ` +
            `${Math.min(...recoveries).toFixed(0)}-${Math.max(...recoveries).toFixed(0)} ms after healing ` +
            `(TCP retransmission back-off; ${reconnected} reconnects)`,
        };
      },
    };
  });
}

// ---- S18 ----------------------------------------------------------------------------------------

/** S18: every 200-400 ms a new random minority (1 or 2 nodes) is the one cut off. */
export function s18Flapping(): Promise<ScenarioResult> {
  const durationMs = pick(4000, 15_000);
  return scenario(
    'S18',
    'flapping: a random 1-2 nodes cut off, a new set every 200-400 ms',
    envOptions,
    async (env) => {
      const ws = await spawnReady(env, pick(3, 4), soloAndContenders('s18'));
      let toggles = 0;
      await runWhile(env, ws, async () => {
        await sleep(300);
        const downSince = new Map<number, bigint>();
        const until = performance.now() + durationMs;
        try {
          while (performance.now() < until) {
            const next = new Set(randomNodes(Math.random() < 0.5 ? 1 : 2));
            const up = [...downSince.keys()].filter((i) => !next.has(i));
            const down = [...next].filter((i) => !downSince.has(i));
            env.redis.heal(up);
            env.redis.partition(down);
            const t = now();
            for (const i of up) env.mark(`flap ${i}`, downSince.get(i)!, t);
            for (const i of up) downSince.delete(i);
            for (const i of down) downSince.set(i, t);
            toggles += up.length + down.length;
            await sleep(between(200, 400));
          }
          env.redis.assertRoutedLocally();
        } finally {
          const t = now();
          env.redis.heal([...downSince.keys()]);
          for (const [i, since] of downSince) env.mark(`flap ${i}`, since, t);
        }
        await sleep(1000); // the last healed connections retransmit
      });
      return {
        resources: ['s18', 's18-solo'],
        summarise: (r) => {
          const solo = r.acquires.filter((a) => a.resource === 's18-solo' && a.outcome !== 'indeterminate');
          const soloGrants = solo.filter((a) => a.outcome === 'granted').length;
          return {
            figures: { toggles, soloAttempts: solo.length, soloGrants },
            note:
              `${toggles} link toggles in ${(durationMs / 1000).toFixed(0)} s; uncontended: ${soloGrants}/` +
              `${solo.length} (${pct(solo.length ? soloGrants / solo.length : 0)}) granted (a healed link is ` +
              `heard again only at its next TCP retransmission, so at times 3 nodes are silent)`,
          };
        },
      };
    },
  );
}

// ---- S19 ----------------------------------------------------------------------------------------

/**
 * S19: a node's replies are dropped (nftables in its namespace) while its commands still arrive
 * and run. Each phase first proves the fault: a probe SET gets no reply yet lands on the node.
 */
export function s19Asymmetric(): Promise<ScenarioResult> {
  const phases = pick(1, 4);
  const phaseMs = pick(1500, 3000);
  const ttl = common.ttl;
  return scenario(
    'S19',
    "asymmetric: a node's replies dropped (nftables), its commands still run",
    envOptions,
    async (env) => {
      const ws: WorkerProcess[] = await spawnReady(env, pick(3, 4), soloAndContenders('s19'));
      const probes: Array<{ replied: boolean; landed: boolean }> = [];
      let dropped = 0;
      let commandsRanWhileSilent = 0;
      await runWhile(env, ws, async () => {
        await sleep(300);
        for (let p = 0; p < phases; p++) {
          const [node] = randomNodes(1) as [number];
          const before = commandsProcessed(env, node);
          const undo = env.redis.dropReplies(node);
          const start = now();
          try {
            probes.push(await env.redis.probeAsymmetric(node, 300));
            await sleep(phaseMs - 300);
            dropped += env.redis.droppedReplies(node);
            commandsRanWhileSilent += commandsProcessed(env, node) - before;
          } finally {
            undo();
          }
          env.mark(`replies dropped ${node}`, start, now());
          await sleep(phaseMs + 300);
        }
      });
      // Nothing left behind: every lock key is gone once the last ttl ran out.
      await sleep(ttl + 200);
      const keysLeft = [0, 1, 2, 3, 4].reduce(
        (n, i) => n + Number(env.redis.readInside(i, 'EXISTS', lockKey('s19'), lockKey('s19-solo'))),
        0,
      );
      const markers = [0, 1, 2, 3, 4].filter((i) => env.redis.readInside(i, 'EXISTS', GUARD_MARKER) === '1');
      return {
        resources: ['s19', 's19-solo'],
        summarise: (r) => {
          const windows = windowsMs(env);
          const solo = attemptsWithin(r.acquires, windows, 's19-solo');
          const { p99, max } = latencyInside(r, windows, 's19-solo');
          return {
            figures: {
              phases: windows.length,
              probes: probes.length,
              probesReplied: probes.filter((p) => p.replied).length,
              probesLanded: probes.filter((p) => p.landed).length,
              droppedSegments: dropped,
              commandsRanWhileSilent,
              keysLeft,
              markers: markers.length,
              soloAttempts: solo.attempts,
              soloAvailability: solo.attempts ? solo.grants / solo.attempts : 0,
            },
            note:
              `${windows.length} phases of ${phaseMs} ms; probe SETs: ${probes.filter((p) => p.landed).length}/` +
              `${probes.length} landed, ${probes.filter((p) => p.replied).length} answered; ${dropped} reply ` +
              `segments dropped while the node ran ${commandsRanWhileSilent} commands; uncontended during ` +
              `the fault ${solo.grants}/${solo.attempts} (${pct(solo.attempts ? solo.grants / solo.attempts : 0)}), ` +
              `p99 ${p99.toFixed(1)} ms, max ${max.toFixed(0)} ms; lock keys left after ttl: ${keysLeft}`,
          };
        },
      };
    },
  );
}

/** total_commands_processed of node `index`, read over its namespace's loopback. */
function commandsProcessed(env: NetEnv, index: number): number {
  const info = env.redis.readInside(index, 'INFO', 'stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}
