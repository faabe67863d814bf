/**
 * The fault driver: each function runs one scenario of the design doc TESTING.md (its S-numbers)
 * against real redis-server lock nodes and worker processes, then checks their histories. Reduced
 * parameters run in the normal `npm test`; FAULTS_FULL=1 runs longer, with more workers and more
 * fault cycles.
 */
import {
  attemptsWithin,
  check,
  describePausedWrites,
  pausedWrites,
  readHistory,
  type Report,
} from './checker.js';
import {
  between,
  FaultEnv,
  type LockNodes,
  firstMessage,
  now,
  nsToMs,
  sleep,
  type FaultEnvOptions,
  type WorkerConfig,
  type WorkerProcess,
} from './harness.js';
import type { RedisNodes } from '../../lib/testing/index.js';
import { timelinesWanted, writeTimeline } from './timeline.js';

export const FULL = process.env.FAULTS_FULL === '1';
export const pick = <T>(reduced: T, full: T): T => (FULL ? full : reduced);

export interface ScenarioResult {
  id: string;
  title: string;
  report: Report;
  /** Wall time of the run, setup and teardown included. */
  seconds: number;
  /** Scenario-specific figures the spec asserts on. */
  figures: Record<string, number>;
  /** One-line summary for the table. */
  note: string;
  /** Set by the spec once every assertion on this run held. */
  passed?: boolean;
}

export type WorkerOptions = Omit<WorkerConfig, 'id' | 'history' | 'nodes' | 'store'>;
type Summary = { figures?: Record<string, number>; note: string };

/**
 * Runs `body` in a fresh environment, then checks every history written (and, in the full run,
 * draws them: timeline.ts).
 */
export async function scenario<N extends LockNodes = RedisNodes>(
  id: string,
  title: string,
  envOptions: FaultEnvOptions<N>,
  body: (
    env: FaultEnv<N>,
  ) => Promise<{ resources: string[]; summarise: (r: Report, env: FaultEnv<N>) => Summary }>,
): Promise<ScenarioResult> {
  const started = performance.now();
  const env = await FaultEnv.start<N>(envOptions);
  try {
    const { resources, summarise } = await body(env);
    const histories = env.historyFiles().map(readHistory);
    const crashed = histories.find((h) => h.crash);
    if (crashed) throw new Error(`worker ${crashed.worker} crashed: ${crashed.crash}`);
    const finals = Object.fromEntries(
      await Promise.all(resources.map(async (r) => [r, await env.counter(r)])),
    );
    const report = check(histories, finals);
    if (timelinesWanted()) writeTimeline({ id, title, report, windows: env.windows });
    const { figures = {}, note } = summarise(report, env);
    return { id, title, report, figures, note, seconds: (performance.now() - started) / 1000 };
  } finally {
    await env.close();
  }
}

export const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** `count` distinct random node indices out of `of`. */
export function randomNodes(count: number, of = 5): number[] {
  const all = range(of);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.slice(0, count);
}

/** Spawns `count` workers, waits until all are connected. */
export async function spawnReady(
  env: FaultEnv<LockNodes>,
  count: number,
  options: (k: number) => WorkerOptions,
): Promise<WorkerProcess[]> {
  const workers = range(count).map((k) => env.spawn(options(k)));
  await env.ready(workers);
  return workers;
}

/** Runs the workers until `nemesis` resolves, then stops them and waits for their jobs to end. */
export async function runWhile(
  env: FaultEnv<LockNodes>,
  workers: WorkerProcess[],
  nemesis: () => Promise<void>,
): Promise<void> {
  env.go(workers, 30 * 60_000);
  try {
    await nemesis();
  } finally {
    for (const w of env.workers) w.send({ type: 'stop' });
  }
  await env.finish(env.workers);
}

export const windowsMs = (env: FaultEnv<LockNodes>) =>
  env.windows.map((w) => ({ start: nsToMs(w.start), end: nsToMs(w.end) }));
export const pct = (x: number) => `${(100 * x).toFixed(x >= 0.9995 || x === 0 ? 0 : 1)}%`;

// ---- control and S0 ----------------------------------------------------------------------------

/** Control: the same read-modify-write loop without the lock must lose updates. */
export function controlRun(): Promise<ScenarioResult> {
  return scenario(
    'control',
    'no lock, no fencing (proves the checker sees lost updates)',
    {},
    async (env) => {
      const workers = await spawnReady(env, 4, () => ({
        resource: 'ctl',
        lock: false,
        ttl: 1000,
        wait: 0,
        nodeTimeout: 100,
        holdMs: [0, 2],
      }));
      env.go(workers, pick(1000, 5000));
      await env.finish(workers, pick(1000, 5000) + 30_000);
      return {
        resources: ['ctl'],
        summarise: (r) => ({
          note: `${r.lostUpdates} of ${r.acknowledgedIncrements} acknowledged increments lost`,
        }),
      };
    },
  );
}

/** S0: several processes contend, no fault. */
export function s0Contention(): Promise<ScenarioResult> {
  const workers = pick(4, 6);
  return scenario('S0', `${workers} processes contend, no fault`, { seedGuardMarker: true }, async (env) => {
    const ws = await spawnReady(env, workers, () => ({
      resource: 's0',
      lock: true,
      ttl: 1000,
      wait: 10_000,
      nodeTimeout: 100,
      holdMs: [0, 1],
      // Enough acquires for the target grant count, bounded in time on a slow machine.
      iterations: Math.ceil(pick(200, 5400) / workers),
    }));
    env.go(ws, pick(15_000, 180_000));
    await env.finish(ws, pick(30_000, 240_000));
    return {
      resources: ['s0'],
      summarise: (r) => {
        // Contended: another process held the lock at some point while this acquire call ran.
        const granted = r.acquires.filter((a) => a.outcome === 'granted');
        const holds = granted.map((b) => ({
          b,
          stop: Math.min(b.releaseCalled ?? Infinity, b.validityEnd!),
        }));
        const waited = granted.filter((a) =>
          holds.some(({ b, stop }) => b.worker !== a.worker && b.end! < a.end! && stop > a.request),
        ).length;
        const perWorker = new Map<string, number>();
        for (const a of r.acquires)
          if (a.outcome === 'granted') perWorker.set(a.worker, (perWorker.get(a.worker) ?? 0) + 1);
        return {
          figures: {
            grantingWorkers: perWorker.size,
            minGrantsPerWorker: Math.min(...perWorker.values()),
            waitedForAnotherHold: waited,
          },
          note:
            `${r.grants} grants over ${perWorker.size} processes (${pct(waited / Math.max(1, r.grants))} of them ` +
            `waited for another process's hold), final counter ${r.finalCounter}`,
        };
      },
    };
  });
}

// ---- S1, S2: pauses ----------------------------------------------------------------------------

/**
 * S1: a holder stops itself (SIGSTOP) between its read and its write; resumed after 1.5 x ttl.
 * The next holders hold ~0.8 x ttl, so the paused one resumes after the next holder has read the
 * counter and before it writes: the window where a stale write does the most harm. With
 * `fencing: 'writer'` (the library's FencedWriter after an unfenced read) that write is accepted.
 */
function holderPause(id: string, title: string, fencing: 'register' | 'writer'): Promise<ScenarioResult> {
  const ttl = 500;
  const duration = pick(3000, 30_000);
  return scenario(id, title, { seedGuardMarker: true }, async (env) => {
    const ws = await spawnReady(env, pick(3, 4), (k) => ({
      resource: id.toLowerCase(),
      lock: true,
      fencing,
      ttl,
      wait: 3000,
      nodeTimeout: 100,
      ...(k < pick(1, 2)
        ? { pauseAt: 'hold' as const, pauseEvery: pick(1, 2), holdMs: [5, 20] as [number, number] }
        : { holdMs: [0.7 * ttl, 0.9 * ttl] as [number, number] }),
    }));
    // Supervise until every job ended: a worker may still stop itself in its last iteration.
    const supervisor = env.superviseSelfPauses(ws, () => 1.5 * ttl);
    try {
      env.go(ws, duration);
      await env.finish(ws, duration + 30_000);
    } finally {
      await supervisor.stop();
    }
    return {
      resources: [id.toLowerCase()],
      summarise: (r) => describePausedWrites(pausedWrites(r), 'the store'),
    };
  });
}

export const s1HolderPause = () =>
  holderPause('S1', 'holder SIGSTOPped 1.5 x ttl between read and write', 'register');
export const s1WriteOnlyFencing = () =>
  holderPause('S1-writer', "same, with the library's FencedWriter (fenced hgetall + hset)", 'writer');

/** S2: a client stops itself right after sending acquire; resumed after 0.9-1.5 x ttl. */
export function s2AcquirePause(): Promise<ScenarioResult> {
  const ttl = 500;
  const duration = pick(3000, 30_000);
  return scenario(
    'S2',
    'client SIGSTOPped while acquire replies are in flight',
    { seedGuardMarker: true },
    async (env) => {
      const ws = await spawnReady(env, pick(3, 4), (k) => ({
        resource: 's2',
        lock: true,
        ttl,
        wait: 0,
        nodeTimeout: 100,
        holdMs: [2, 10],
        failBackoffMs: [2, 10],
        ...(k < pick(1, 2) ? { pauseAt: 'acquire' as const, pauseEvery: 3 } : {}),
      }));
      // Supervise until every job ended: a worker may still stop itself in its last iteration.
      const supervisor = env.superviseSelfPauses(ws, () => between(0.9, 1.5) * ttl);
      try {
        env.go(ws, duration);
        await env.finish(ws, duration + 30_000);
      } finally {
        await supervisor.stop();
      }
      return {
        resources: ['s2'],
        summarise: (r) => {
          const paused = r.acquires.filter((a) => a.paused && a.outcome !== 'indeterminate');
          const overTtl = paused.filter((a) => a.end! - a.request >= a.ttl);
          const errors = [...new Set(overTtl.map((a) => a.error ?? 'granted'))].join(', ');
          return {
            figures: {
              pausedAcquires: paused.length,
              pausedOverTtl: overTtl.length,
              pausedOverTtlGranted: overTtl.filter((a) => a.outcome === 'granted').length,
              pausedGranted: paused.filter((a) => a.outcome === 'granted').length,
            },
            note:
              `${paused.length} acquires paused in flight; ${overTtl.length} took >= ttl: ` +
              `${overTtl.filter((a) => a.outcome === 'granted').length} granted (they failed with ${errors}); ` +
              `${paused.filter((a) => a.outcome === 'granted').length} shorter pauses granted with the validity left`,
          };
        },
      };
    },
  );
}

/**
 * S2, the short case: the client stalls (event loop blocked, as in a GC pause) for longer than
 * nodeTimeout right after its acquire / extension left, but well within the lease. The replies
 * wait in the sockets meanwhile: a round must read them before it declares the nodes silent.
 */
export function s2ShortStall(): Promise<ScenarioResult> {
  const stallMs = 150;
  const nodeTimeout = 100;
  return scenario(
    'S2-short',
    `client stalls ${stallMs} ms (> nodeTimeout ${nodeTimeout} ms) right after sending acquire / extend`,
    { seedGuardMarker: true },
    async (env) => {
      const duration = pick(2000, 15_000);
      const ws = await spawnReady(env, 2, (k) => ({
        resource: `s2s-${k}`, // uncontended: every acquire must succeed
        lock: true,
        ttl: 1000,
        wait: 0,
        nodeTimeout,
        stallMs,
        holdMs: [0, 2],
        extendBeforeRelease: true,
      }));
      env.go(ws, duration);
      await env.finish(ws, duration + 30_000);
      return {
        resources: ['s2s-0', 's2s-1'],
        summarise: (r) => {
          const extensions = r.acquires.flatMap((a) => a.extensions);
          const failedExtends = extensions.filter((e) => !e.ok).length;
          return {
            figures: { extends: extensions.length, failedExtends },
            note:
              `${r.grants}/${r.attempts} stalled acquires granted, ${extensions.length - failedExtends}/` +
              `${extensions.length} stalled extensions succeeded`,
          };
        },
      };
    },
  );
}

// ---- S5, S6: node restarts ---------------------------------------------------------------------

/**
 * S5 / S6: while a worker holds the lock, 3 of the 5 nodes (a majority of the ones that granted
 * it) are SIGKILLed and restarted on the same port at once: without persistence (S5) they come
 * back empty; with `appendfsync always` (S6) they replay their AOF.
 */
function restartScenario(
  id: string,
  title: string,
  options: { persistence: 'none' | 'aof-always'; guard: number | false },
): Promise<ScenarioResult> {
  const ttl = 1000;
  // The control (no guard, no persistence) overlaps in some cycles only (1-3 overlaps in 3 cycles,
  // none in one reduced run under load): 6 cycles, so that it shows its violation every run (it
  // runs in \`npm test\` and on each server of \`npm run test:servers\`).
  const cycles = options.guard === false && options.persistence === 'none' ? pick(6, 8) : pick(2, 8);
  return scenario(
    id,
    title,
    { persistence: options.persistence, seedGuardMarker: options.guard !== false },
    async (env) => {
      const ws = await spawnReady(env, pick(3, 4), () => ({
        resource: id.toLowerCase(),
        lock: true,
        ttl,
        wait: 0, // poll: a lock that became free (wrongly) is taken at once
        nodeTimeout: 100,
        restartGuard: options.guard,
        holdMs: [300, 500],
        gapMs: [0, 20],
        failBackoffMs: [5, 15],
        notify: true,
      }));
      let restarts = 0;
      await runWhile(env, ws, async () => {
        for (let c = 0; c < cycles; c++) {
          const hit = await firstMessage(ws, 'grant', 10_000);
          if (!hit) continue;
          const nodes = randomNodes(3);
          const start = now();
          await Promise.all(nodes.map((i) => env.redis.restart(i)));
          env.mark(`restart ${nodes.join(',')}`, start, now());
          restarts++;
          await sleep(options.guard === false ? 1000 : options.guard + 1000);
        }
      });
      return {
        resources: [id.toLowerCase()],
        summarise: (r) => ({
          figures: { restarts },
          note:
            `${restarts} x 3-node restarts; ${r.failures.QuorumUnavailableError ?? 0} acquires refused while ` +
            `nodes abstained or were down; largest token step ${r.maxTokenStep}`,
        }),
      };
    },
  );
}

export const s5RestartNoGuard = () =>
  restartScenario('S5-noguard', 'S5 restart without persistence, restart guard OFF (must show overlaps)', {
    persistence: 'none',
    guard: false,
  });
export const s5RestartGuard = () =>
  restartScenario('S5', 'restart without persistence, restart guard = ttl', {
    persistence: 'none',
    guard: 1000,
  });
export const s6RestartAof = () =>
  restartScenario('S6', 'restart with appendfsync always (guard off: persistence alone)', {
    persistence: 'aof-always',
    guard: false,
  });

// ---- S8, S9: minority and majority faults ------------------------------------------------------

type NodeFault = { kill?: number[]; stop?: number[]; slow?: number[] };

function describeFault(f: NodeFault): string {
  return (['kill', 'stop', 'slow'] as const)
    .filter((k) => f[k]?.length)
    .map((k) => `${k} ${f[k]!.join(',')}`)
    .join(' + ');
}

/** Builds a fault of the given shape (counts per kind) on distinct random nodes. */
function faultOf(shape: { kill?: number; stop?: number; slow?: number }): NodeFault {
  const nodes = randomNodes((shape.kill ?? 0) + (shape.stop ?? 0) + (shape.slow ?? 0));
  return {
    kill: nodes.splice(0, shape.kill ?? 0),
    stop: nodes.splice(0, shape.stop ?? 0),
    slow: nodes.splice(0, shape.slow ?? 0),
  };
}

/**
 * A SIGKILLed node comes back empty (no persistence), so under the restart guard it abstains for
 * `guard` ms from the first engine's reconnection to it: S8 and S9 run with a short guard, and a phase ends
 * only after the killed nodes were reconnected and their guard ran out, so that phases never add up
 * to more nodes out than intended.
 */
const GUARD = 1000;

/** Applies `fault` for `ms`, records the window, heals, and waits until the nodes count again. */
async function faultPhase(env: FaultEnv, fault: NodeFault, ms: number, connections: number): Promise<void> {
  const heal = await env.nodeFault(fault);
  const start = now();
  await sleep(ms);
  env.mark(describeFault(fault), start, now());
  await heal();
  for (const i of fault.kill ?? []) {
    if (!(await env.waitForConnections(i, connections))) {
      throw new Error(`the workers did not reconnect to node ${i} within 8 s after it was revived`);
    }
  }
  if (fault.kill?.length) await sleep(GUARD + 200);
}

/** S8: 2 of 5 nodes killed, stopped or slow; a contended resource and an uncontended one. */
export function s8Minority(): Promise<ScenarioResult> {
  const shapes = pick(
    [{ kill: 2 }, { stop: 1, slow: 1 }],
    [{ kill: 2 }, { stop: 2 }, { kill: 1, stop: 1 }, { slow: 2 }, { kill: 1, slow: 1 }, { stop: 1, slow: 1 }],
  );
  const rounds = pick(1, 2);
  const phaseMs = pick(1000, 2500);
  return scenario(
    'S8',
    '2 of 5 nodes killed / stopped / slow',
    { debugCommands: true, seedGuardMarker: true },
    async (env) => {
      const common = { lock: true, ttl: 1000, nodeTimeout: 100, restartGuard: GUARD };
      const ws = await spawnReady(env, pick(3, 4), (k) =>
        k === 0
          ? { ...common, resource: 's8-solo', wait: 0, gapMs: [1, 3], holdMs: [0, 1] }
          : { ...common, resource: 's8', wait: 2000, holdMs: [1, 5] },
      );
      await runWhile(env, ws, async () => {
        await sleep(300);
        for (let r = 0; r < rounds; r++) {
          for (const shape of shapes) {
            await faultPhase(env, faultOf(shape), phaseMs, ws.length);
            await sleep(300);
          }
        }
      });
      return {
        resources: ['s8', 's8-solo'],
        summarise: (r) => {
          const windows = windowsMs(env);
          const solo = attemptsWithin(r.acquires, windows, 's8-solo');
          const soloLatency = r.acquires
            .filter((a) => a.resource === 's8-solo' && a.outcome !== 'indeterminate')
            .filter((a) => windows.some((w) => a.request >= w.start && a.request < w.end))
            .map((a) => a.end! - a.request)
            .sort((x, y) => x - y);
          const p99 = soloLatency[Math.floor(soloLatency.length * 0.99)] ?? 0;
          const max = soloLatency[soloLatency.length - 1] ?? 0;
          const contended = r.acquires.filter((a) => a.resource === 's8' && a.outcome === 'granted').length;
          return {
            figures: {
              faultPhases: windows.length,
              soloAttempts: solo.attempts,
              soloGrants: solo.grants,
              soloAvailability: solo.attempts ? solo.grants / solo.attempts : 0,
              soloP99Ms: p99,
              soloMaxMs: max,
            },
            note:
              `${windows.length} fault phases; uncontended during faults: ${solo.grants}/${solo.attempts} ` +
              `(${pct(solo.attempts ? solo.grants / solo.attempts : 0)}), p99 ${p99.toFixed(1)} ms, max ${max.toFixed(0)} ms; ` +
              `${contended} contended grants`,
          };
        },
      };
    },
  );
}

/** S9: 3 of 5 nodes down: no grant, bounded failures, recovery when they return. */
export function s9Majority(): Promise<ScenarioResult> {
  const wait = 500;
  const shapes = pick(
    [{ kill: 3 }, { kill: 1, stop: 2 }],
    [{ kill: 3 }, { stop: 3 }, { kill: 1, stop: 2 }, { kill: 2, stop: 1 }, { kill: 3 }, { kill: 1, stop: 2 }],
  );
  const phaseMs = pick(1200, 2500);
  return scenario('S9', '3 of 5 nodes killed / stopped', { seedGuardMarker: true }, async (env) => {
    const ws = await spawnReady(env, 3, () => ({
      resource: 's9',
      lock: true,
      ttl: 1000,
      wait,
      nodeTimeout: 100,
      restartGuard: GUARD,
      holdMs: [5, 20],
      failBackoffMs: [20, 50],
      notify: true,
    }));
    const recoveries: number[] = [];
    await runWhile(env, ws, async () => {
      await sleep(300);
      for (const shape of shapes) {
        const fault = faultOf(shape);
        const heal = await env.nodeFault(fault);
        const start = now();
        await sleep(phaseMs);
        const end = now();
        env.mark(describeFault(fault), start, end);
        await heal();
        const hit = await firstMessage(ws, 'grant', 10_000);
        recoveries.push(hit ? nsToMs(now() - end) : Infinity);
        await sleep(200);
      }
    });
    return {
      resources: ['s9'],
      summarise: (r) => {
        const windows = windowsMs(env);
        // Attempts that began and ended inside a window: the majority was down all along.
        const inside = r.acquires.filter(
          (a) =>
            a.outcome !== 'indeterminate' && windows.some((w) => a.request >= w.start && a.end! <= w.end),
        );
        const grantsInside = inside.filter((a) => a.outcome === 'granted').length;
        const maxRecovery = Math.max(...recoveries);
        return {
          figures: {
            faultPhases: windows.length,
            attemptsInside: inside.length,
            grantsInside,
            recovered: recoveries.filter(Number.isFinite).length,
            maxRecoveryMs: maxRecovery,
            maxAttemptMs: r.maxAttemptMs,
            wait,
          },
          note:
            `${windows.length} phases: ${inside.length} attempts during them, ${grantsInside} granted; ` +
            `slowest attempt ${r.maxAttemptMs.toFixed(0)} ms (wait ${wait}); grants resumed within ` +
            `${maxRecovery.toFixed(0)} ms of healing (a killed node returns empty: reconnect back-off + ` +
            `restart guard ${GUARD} ms)`,
        };
      },
    };
  });
}

// ---- S10-S13 -----------------------------------------------------------------------------------

/** S10: the holder process is SIGKILLed; the lock must be free again after ttl. */
export function s10HolderKilled(): Promise<ScenarioResult> {
  const ttl = 1000;
  const kills = pick(2, 10);
  return scenario('S10', 'holder process SIGKILLed', { seedGuardMarker: true }, async (env) => {
    const options: WorkerOptions = {
      resource: 's10',
      lock: true,
      ttl,
      wait: 3000,
      nodeTimeout: 100,
      holdMs: [100, 300],
      notify: true,
    };
    const ws = await spawnReady(env, pick(3, 4), () => options);
    const killed: Array<{ worker: string; i: number }> = [];
    await runWhile(env, ws, async () => {
      for (let k = 0; k < kills; k++) {
        const live = env.workers.filter((w) => w.alive);
        const hit = await firstMessage(live, 'grant', 10_000);
        if (!hit) continue;
        await hit.worker.kill();
        killed.push({ worker: hit.worker.id, i: hit.message.i! });
        const replacement = env.spawn(options);
        await env.ready([replacement]);
        env.go([replacement], 30 * 60_000, 0);
        await sleep(300);
      }
      await sleep(ttl + 200);
    });
    return {
      resources: ['s10'],
      summarise: (r) => {
        const grants = r.acquires.filter((a) => a.outcome === 'granted').sort((x, y) => x.end! - y.end!);
        const freeAfter = killed.map(({ worker, i }) => {
          const dead = grants.find((a) => a.worker === worker && a.i === i);
          const next = dead && grants.find((a) => a.end! > dead.end! && a.worker !== worker);
          return dead && next && dead.releaseCalled === undefined ? next.end! - dead.end! : Infinity;
        });
        const maxFree = Math.max(...freeAfter);
        return {
          figures: { kills: killed.length, maxFreeAfterMs: maxFree, ttl },
          note:
            `${killed.length} holders killed mid-hold; next grant ${Math.min(...freeAfter).toFixed(0)}-` +
            `${maxFree.toFixed(0)} ms after the dead holder's grant (ttl ${ttl})`,
        };
      },
    };
  });
}

/** S11: 3 nodes SIGSTOPped while the watchdog extends; the signal must abort before validity ends. */
export function s11WatchdogLoss(): Promise<ScenarioResult> {
  const ttl = 600;
  const runs = pick(3, 15);
  return scenario(
    'S11',
    'holder loses the majority while auto-extending',
    { seedGuardMarker: true },
    async (env) => {
      const [w] = await spawnReady(env, 1, () => ({
        resource: 's11',
        lock: true,
        ttl,
        wait: 3000,
        nodeTimeout: 50,
        watchdog: true,
        holdMs: [4 * ttl, 4 * ttl],
        skipWriteIfLost: true,
        failBackoffMs: [20, 50],
        notify: true,
      }));
      let aborted = 0;
      await runWhile(env, [w!], async () => {
        for (let run = 0; run < runs; run++) {
          const grant = await w!.next('grant', 10_000);
          if (!grant) continue;
          await sleep(between(0.5, 1.5) * ttl); // a few extensions happen first
          const nodes = randomNodes(3);
          for (const i of nodes) env.redis.stop(i);
          const start = now();
          const abort = await w!.next('abort', 3 * ttl, (m) => m.i === grant.i);
          env.mark(`stop ${nodes.join(',')}`, start, now());
          for (const i of nodes) env.redis.resume(i);
          if (abort) aborted++;
          await w!.next('released', 4 * ttl, (m) => m.i === grant.i);
        }
      });
      return {
        resources: ['s11'],
        summarise: (r) => {
          const lostRuns = r.acquires.filter((a) =>
            env.windows.some(
              (win) =>
                a.outcome === 'granted' &&
                a.end! < nsToMs(win.start) &&
                a.abort &&
                a.abort.t > nsToMs(win.start),
            ),
          );
          const inTime = lostRuns.filter(
            (a) => a.abort!.reason === 'LockLostError' && a.abort!.t < a.abort!.validityEnd,
          );
          const margins = lostRuns.map((a) => a.abort!.validityEnd - a.abort!.t);
          const extendedBefore = lostRuns.filter((a) => a.abort!.validityEnd > a.grantValidityEnd!).length;
          return {
            figures: {
              runs: env.windows.length,
              aborted,
              lostRuns: lostRuns.length,
              abortedInTime: inTime.length,
              extendedBeforeLoss: extendedBefore,
              minMarginMs: margins.length ? Math.min(...margins) : 0,
            },
            note:
              `${env.windows.length} runs: signal aborted with LockLostError before the validity end in ` +
              `${inTime.length}; margin ${margins.length ? Math.min(...margins).toFixed(0) : '-'}-` +
              `${margins.length ? Math.max(...margins).toFixed(0) : '-'} ms; ${extendedBefore} had been extended first`,
          };
        },
      };
    },
  );
}

/** S12: many clients start at the same instant (barrier), once per round, on a fresh resource. */
export function s12Barrier(): Promise<ScenarioResult> {
  const workers = pick(6, 10);
  const rounds = pick(5, 30);
  const ttl = 1000;
  return scenario(
    'S12',
    `${workers} clients start at the same instant`,
    { seedGuardMarker: true },
    async (env) => {
      const ws = await spawnReady(env, workers, () => ({
        resource: 'unused',
        lock: true,
        ttl,
        wait: 0,
        nodeTimeout: 100,
        holdMs: [ttl / 2 + 100, ttl / 2 + 100],
        rounds: true,
        notify: true,
      }));
      const resources: string[] = [];
      let maxWinners = 0;
      let withWinner = 0;
      let leftover = 0;
      let maxCleanMs = 0;
      for (let round = 0; round < rounds; round++) {
        const resource = `s12-${round}`;
        resources.push(resource);
        const attempts = ws.map((w) => w.next('attempt', 10_000));
        const done = ws.map((w) => w.next('round-done', 10_000));
        const startAt = now() + 150_000_000n;
        for (const w of ws) w.send({ type: 'round', resource, startAt: String(startAt) });
        const results = await Promise.all(attempts);
        const winners = results.filter((m) => m?.ok).length;
        maxWinners = Math.max(maxWinners, winners);
        if (winners > 0) withWinner++;
        // The losers free their partial keys at once (not when their lease runs out): only the
        // winner's value may remain, well before half the ttl.
        const cleanMs = await cleanWithin(env, resource, winners > 0, ttl / 2);
        if (cleanMs === undefined) leftover++;
        else maxCleanMs = Math.max(maxCleanMs, cleanMs);
        await Promise.all(done);
      }
      for (const w of ws) w.send({ type: 'stop' });
      await env.finish();
      return {
        resources,
        summarise: (r) => {
          const spreads = resources
            .map((res) => r.acquires.filter((a) => a.resource === res).map((a) => a.request))
            .map((t) => Math.max(...t) - Math.min(...t))
            .sort((x, y) => x - y);
          const spread = spreads[Math.floor(spreads.length / 2)] ?? 0;
          return {
            figures: {
              rounds,
              maxWinners,
              roundsWithWinner: withWinner,
              roundsWithLeftoverKeys: leftover,
              maxCleanMs,
            },
            note:
              `${rounds} rounds x ${workers} clients (requests within ${spread.toFixed(1)} ms, median): ` +
              `${withWinner} with one winner, ${rounds - withWinner} split, max winners ${maxWinners}; ` +
              `losers' keys gone within ${maxCleanMs.toFixed(0)} ms (rounds with keys left at ttl/2: ${leftover})`,
          };
        },
      };
    },
  );
}

/**
 * Polls until only the winner's value (or, without a winner, nothing) is left of `resource` on
 * the nodes; resolves the ms it took, or undefined if keys remained for `limitMs`.
 */
async function cleanWithin(env: FaultEnv, resource: string, winner: boolean, limitMs: number) {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    const values = (await env.lockValues(resource)).filter((v) => v !== null && v !== 'down');
    const distinct = new Set(values).size;
    if (winner ? distinct <= 1 : distinct === 0) return performance.now() - started;
    await sleep(5);
  }
  return undefined;
}

/**
 * S13: a holder overstays its lease (event loop blocked 1.5 x ttl), then releases or extends the
 * expired lock before any timer runs, while the next holder holds it; the next holders extend
 * before they release, which fails if anything deleted their key.
 */
export function s13AfterExpiry(): Promise<ScenarioResult> {
  const ttl = 600;
  const duration = pick(4000, 30_000);
  /** An extension asked for this close to the holder's validity end may fail on timing alone. */
  const slackMs = 50;
  return scenario('S13', 'release / extend after expiry', { seedGuardMarker: true }, async (env) => {
    const common = { resource: 's13', lock: true, ttl, wait: 3000, nodeTimeout: 100 };
    const ws = await spawnReady(env, pick(3, 4), (k) =>
      k === 0
        ? { ...common, overstayMs: 1.5 * ttl, overstayEvery: 1 }
        : { ...common, holdMs: [0.55 * ttl, 0.7 * ttl], extendBeforeRelease: true },
    );
    env.go(ws, duration);
    await env.finish(ws, duration + 30_000);
    return {
      resources: ['s13'],
      summarise: (r) => {
        const late = r.acquires.flatMap((a) => a.extensions.filter((e) => e.afterExpiry));
        const staleReleases = r.acquires.flatMap((a) => a.staleReleases);
        const contenders = r.acquires.filter((a) => a.worker !== 'w0');
        const extendsOf = contenders.flatMap((a) => a.extensions.map((e) => ({ a, e })));
        const failed = extendsOf.filter(({ e }) => !e.ok);
        // Failures asked for well within the holder's validity can only mean its key was touched.
        const unexplained = failed.filter(({ a, e }) => e.request < a.validityEnd! - slackMs);
        return {
          figures: {
            overstays: late.length + staleReleases.length,
            extendAfterExpiryOk: late.filter((e) => e.ok).length,
            staleReleases: staleReleases.length,
            contenderExtends: extendsOf.length,
            contenderExtendFailures: unexplained.length,
            contenderLateExtendFailures: failed.length - unexplained.length,
          },
          note:
            `${staleReleases.length} releases and ${late.length} extends after expiry (extends that succeeded: ` +
            `${late.filter((e) => e.ok).length}); the next holders' ${extendsOf.length} extends: ` +
            `${unexplained.length} failed` +
            (failed.length > unexplained.length
              ? ` (+${failed.length - unexplained.length} asked < ${slackMs} ms before their own validity end: ` +
                `${failed.map(({ e }) => e.message ?? e.error).join('; ')})`
              : ''),
        };
      },
    };
  });
}

/** One markdown table row per scenario. */
export function tableHeader(): string {
  return (
    '| scenario | fault | workers | attempts | grants | failed acquires | avail. | overlaps | token order viol. | stale writes accepted | writes rejected | lost updates | run s | key figures |\n' +
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
  );
}

const SHORT: Record<string, string> = {
  LockNotAcquiredError: 'busy',
  QuorumUnavailableError: 'no quorum',
  LockLostError: 'lost',
};

function failures(counts: Record<string, number>): string {
  const parts = Object.entries(counts).map(([name, n]) => `${SHORT[name] ?? name} ${n}`);
  return parts.length ? parts.join(', ') : '-';
}

export function tableRow(s: ScenarioResult): string {
  const r = s.report;
  const cells = [
    s.passed ? s.id : `${s.id} (assertions FAILED)`,
    s.title,
    r.workers,
    r.attempts || '-',
    r.grants || '-',
    failures(r.failures),
    r.attempts ? pct(r.availability) : '-',
    r.overlaps,
    r.tokenOrderViolations + r.duplicateTokens,
    r.staleWritesAccepted,
    r.writesRejected,
    r.lostUpdates,
    s.seconds.toFixed(1),
    s.note,
  ];
  return `| ${cells.join(' | ')} |`;
}
