/**
 * Semaphore scenarios (TESTING.md S25, S26): worker processes contend for a 3-permit semaphore.
 * The checker counts the definite holders at every instant (never more than the permits), and runs
 * its exclusion, token-order and stale-write checks per permit (each permit is a lock of its own,
 * with its own tokens and its own fenced counter in the store). Grants must be first come, first
 * served: every worker's share within 1.5x of the median.
 *
 * - S25: ours under minority faults of every kind, one after another: nodes SIGKILLed and
 *   restarted empty (restart guard), nodes SIGSTOPped, nodes partitioned (network namespaces,
 *   netns.ts), and a worker SIGSTOPped past its ttl (its permit expires and is granted again; its
 *   late write meets the fenced store).
 * - S26 (fault-suite form of test/integration/engine/semaphore-counterexample.spec.ts): 3 nodes,
 *   6 workers, each cut off from one node by its ACL user being `off` there (two per node). Ours
 *   admits at most 3.
 * - S25-control: the same workload and cut with redis-semaphore's RedlockSemaphore, a count per
 *   node admitted on a majority: every node sees only 4 of the 6 workers, so up to 4 hold at once.
 *   It shows the holder count can fail.
 */
import type { Report } from './checker.js';
import { now, sleep, type FaultEnv, type LockNodes, type WorkerProcess } from './harness.js';
import { NetworkNodes } from './netns.js';
import {
  pick,
  randomNodes,
  range,
  runWhile,
  scenario,
  spawnReady,
  type ScenarioResult,
  type WorkerOptions,
} from './scenarios.js';
import { holdersAtOnce, shares } from './semaphore-checks.js';

const PERMITS = 3;
/** Restart guard of S25 (short, so that a killed node counts again within a phase's gap). */
const GUARD = 1000;

/**
 * The figures and note every semaphore row reports: holders at once, and the workers' shares. A
 * worker the driver SIGSTOPped (`paused`) lost that time to the fault, not to the queue: the
 * shares compared are those of the workers never stopped.
 */
function semaphoreSummary(
  r: Report,
  resource: string,
  workers: readonly WorkerProcess[],
  paused: ReadonlySet<string> = new Set(),
) {
  const holders = holdersAtOnce(r.acquires, resource, PERMITS);
  const compared = workers.map((w) => w.id).filter((id) => !paused.has(id));
  const share = shares(r.acquires, resource, compared);
  const pausedShares = [...paused].map((id) => `${id} ${shares(r.acquires, resource, [id]).grants[0]}`);
  return {
    figures: {
      maxHolders: holders.max,
      excessGrants: holders.excessGrants,
      excessMs: holders.excessMs,
      minGrants: Math.min(...share.grants),
      medianGrants: share.median,
      worstRatioToMedian: share.worstRatio,
    },
    note:
      `at most ${holders.max} holders at once (${PERMITS} permits; ${holders.excessGrants} grants over the ` +
      `limit, ${holders.excessMs.toFixed(0)} ms over it${holders.examples[0] ? `, e.g. ${holders.examples[0]}` : ''}); ` +
      `grants per worker ${share.grants.join(', ')}, worst ratio to the median ${share.worstRatio.toFixed(2)}x` +
      (pausedShares.length ? ` (paused, not compared: ${pausedShares.join(', ')})` : ''),
  };
}

// ---- S25 ----------------------------------------------------------------------------------------

type Phase = 'kill' | 'stop' | 'partition' | 'pause';
const PHASES: readonly Phase[] = ['kill', 'partition', 'stop', 'pause'];

/** S25: a 3-permit semaphore under minority kills, node pauses, partitions and worker pauses. */
export function s25Semaphore(): Promise<ScenarioResult> {
  const phases = pick(4, 12);
  const phaseMs = pick(1000, 2500);
  const ttl = 1000;
  const count = pick(5, 8);
  return scenario(
    'S25',
    `${PERMITS}-permit semaphore: minority kills, SIGSTOPs, partitions; a worker paused past its ttl`,
    {
      launch: (n: number, options: { debugCommands?: boolean }) => NetworkNodes.start(n, options),
      seedGuardMarker: true,
    },
    async (env) => {
      const ws = await spawnReady(env, count, () => ({
        resource: 's25',
        lock: true,
        permits: PERMITS,
        ttl,
        wait: 3000,
        nodeTimeout: 100,
        restartGuard: GUARD,
        holdMs: [5, 40],
        gapMs: [0, 10],
        failBackoffMs: [5, 15],
      }));
      const done: Record<Phase, number> = { kill: 0, stop: 0, partition: 0, pause: 0 };
      const paused = new Set<string>();
      await runWhile(env, ws, async () => {
        await sleep(300);
        for (let p = 0; p < phases; p++) {
          const kind = PHASES[p % PHASES.length]!;
          const stopped = await s25Phase(
            env,
            ws,
            kind,
            1 + (Math.floor(p / PHASES.length) % 2),
            phaseMs,
            ttl,
          );
          if (stopped) paused.add(stopped);
          done[kind]++;
        }
        await sleep(300);
      });
      return {
        resources: range(PERMITS).map((k) => `s25#${k}`),
        summarise: (r) => {
          const s = semaphoreSummary(r, 's25', ws, paused);
          return {
            figures: { ...s.figures, ...done },
            note:
              `${done.kill} kills, ${done.stop} SIGSTOPs, ${done.partition} partitions of 1-2 nodes ` +
              `(${phaseMs} ms), ${done.pause} workers paused 1.5 x ttl; ${s.note}`,
          };
        },
      };
    },
  );
}

/**
 * One fault phase of S25 on `nodes` random nodes (or one random worker), then its recovery.
 * Resolves with the id of the worker it paused, if any.
 */
async function s25Phase(
  env: FaultEnv<NetworkNodes>,
  ws: readonly WorkerProcess[],
  kind: Phase,
  nodes: number,
  phaseMs: number,
  ttl: number,
): Promise<string | undefined> {
  const targets = randomNodes(nodes);
  const start = now();
  if (kind === 'pause') {
    const w = ws[Math.floor(Math.random() * ws.length)]!;
    w.stop();
    await sleep(1.5 * ttl);
    w.resume();
    env.mark(`pause ${w.id}`, start, now());
    await sleep(300);
    return w.id;
  } else if (kind === 'partition') {
    env.redis.partition(targets);
    env.redis.assertRoutedLocally(); // a cut link keeps its route (netns.ts)
    await sleep(phaseMs);
    env.redis.heal(targets);
    env.mark(`partition ${targets.join(',')}`, start, now());
    // Healed connections are heard at their next retransmission (at most about the cut's length).
    await sleep(phaseMs + 300);
  } else {
    const heal = await env.nodeFault(kind === 'kill' ? { kill: targets } : { stop: targets });
    await sleep(phaseMs);
    env.mark(`${kind} ${targets.join(',')}`, start, now());
    await heal();
    for (const i of kind === 'kill' ? targets : []) {
      if (!(await env.waitForConnections(i, ws.length)))
        throw new Error(`the workers did not reconnect to node ${i} within 8 s after it was revived`);
    }
    await sleep(kind === 'kill' ? GUARD + 300 : 300);
  }
}

// ---- S26 and S25's control: the ACL cut ---------------------------------------------------------

const PASSWORD = 'client-secret';
const CUT_WORKERS = 6;
const user = (worker: number) => `s26w${worker}`;

/**
 * Users for the cut workers on each of the 3 nodes, each worker's user `off` on node
 * `worker % 3` (its connections there closed): every node sees 4 of the 6 workers.
 */
async function cutByAcl(env: FaultEnv<LockNodes>): Promise<void> {
  for (let node = 0; node < 3; node++) {
    const admin = env.adminClient(node);
    for (let w = 0; w < CUT_WORKERS; w++) {
      const state = w % 3 === node ? 'off' : 'on';
      await admin.call('ACL', 'SETUSER', user(w), state, `>${PASSWORD}`, '~*', '&*', '+@all');
    }
  }
}

function aclCut(id: string, title: string, peer: boolean): Promise<ScenarioResult> {
  const duration = pick(4000, 20_000);
  return scenario(id, title, { nodes: 3, seedGuardMarker: true }, async (env) => {
    await cutByAcl(env);
    const resource = id.toLowerCase().replace('-', '');
    const base: WorkerOptions = {
      resource,
      lock: true,
      permits: PERMITS,
      ttl: 2000,
      wait: 3000,
      nodeTimeout: 100,
      holdMs: [5, 40],
      gapMs: [0, 10],
      failBackoffMs: [5, 15],
      ...(peer ? { peer: 'redlock-semaphore' as const } : {}),
    };
    const ws = range(CUT_WORKERS).map((w) =>
      env.spawn({
        ...base,
        nodes: range(3).map((node) => {
          const { port } = new URL(env.redis.url(node));
          return `redis://${user(w)}:${PASSWORD}@127.0.0.1:${port}`;
        }),
      }),
    );
    await env.ready(ws);
    env.go(ws, duration);
    await env.finish(ws, duration + 30_000);
    return {
      resources: peer ? [] : range(PERMITS).map((k) => `${resource}#${k}`),
      summarise: (r) => {
        const s = semaphoreSummary(r, resource, ws);
        return {
          figures: s.figures,
          note: `each worker cut off from one of 3 nodes (ACL user off); ${s.note}`,
        };
      },
    };
  });
}

/** S26 in the fault suite: ours, 3 permits, 6 workers on 3 nodes, each cut off from a different node. */
export const s26AclCut = () =>
  aclCut('S26', `${PERMITS}-permit semaphore, 3 nodes, 6 workers each cut off from one node (ACL)`, false);

/** S25's control: the same with redis-semaphore's RedlockSemaphore (must admit more than 3). */
export const s25Control = () =>
  aclCut(
    'S25-control',
    "same with redis-semaphore's RedlockSemaphore, a count per node (must exceed 3 holders)",
    true,
  );
