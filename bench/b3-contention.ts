import { QuorumPublish } from './floor.js';
import type { Library, LockClient } from './libraries.js';
import {
  FLOOR,
  type BenchContext,
  type BenchResult,
  type Benchmark,
  type Cell,
  type TargetCheck,
} from './report.js';
import { cpuMeter, now, rounded, settle, sleep, summarise, type CpuTime, type Summary } from './stats.js';

interface Contention {
  /** Critical-section time (grant -> release called) inside the window / window length. */
  readonly utilisation: number;
  /** Request -> grant, ms. */
  readonly wait: Summary;
  /** Previous holder's release called -> next grant, ms: the idle gap a hand-over costs. */
  readonly handoff: Summary;
  readonly grantsPerClient: readonly number[];
  readonly grants: number;
  /** Acquires that gave up (must be 0: every library has a 10 s budget). */
  readonly gaveUp: number;
  /** Grants while another client was inside its critical section (must be 0). */
  readonly overlaps: number;
  readonly seconds: number;
  /** CPU of the bench process (all 16 clients) and of the redis nodes over the run. */
  readonly cpu: CpuTime;
}

/**
 * `clients` separate library instances (each with its own connections) contend for one key: each
 * holds it for `workMs` (a timer, like awaiting I/O), releases, pauses `pauseMs`, asks again.
 */
async function contend(lib: Library, ctx: BenchContext, clients: readonly LockClient[]): Promise<Contention> {
  const { seconds, workMs, pauseMs } = ctx.config.b3;
  const key = `bench:b3:${lib.id}`;
  // Warm-up: each client takes the lock once (connections, script cache, subscriptions).
  for (const c of clients) await (await c.acquire(key)).release();

  const waits: number[] = [];
  const handoffs: number[] = [];
  const grantsPerClient = clients.map(() => 0);
  let busy = 0;
  let gaveUp = 0;
  let overlaps = 0;
  let holder = -1;
  let lastReleaseAt: number | undefined;
  const meter = cpuMeter(ctx.nodes.urls.map((_, i) => ctx.nodes.pid(i)));
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    clients.map(async (client, index) => {
      while (now() < end) {
        const requested = now();
        let held;
        try {
          held = await client.acquire(key);
        } catch {
          gaveUp++;
          continue;
        }
        const granted = now();
        if (holder !== -1) overlaps++;
        holder = index;
        waits.push(granted - requested);
        if (lastReleaseAt !== undefined) handoffs.push(granted - lastReleaseAt);
        grantsPerClient[index]!++;
        await sleep(workMs);
        const done = now();
        busy += Math.max(0, Math.min(done, end) - Math.max(granted, start));
        holder = -1;
        lastReleaseAt = done;
        await held.release();
        await sleep(pauseMs);
      }
    }),
  );
  return {
    utilisation: busy / (end - start),
    wait: summarise(waits),
    handoff: summarise(handoffs),
    grantsPerClient,
    grants: waits.length,
    gaveUp,
    overlaps,
    seconds,
    cpu: meter(),
  };
}

/** What the floor measures: one holder's work and a bare publish chain as the hand-over. */
interface HandOverFloor {
  readonly utilisation: number;
  readonly handoff: Summary;
  readonly rounds: number;
}

/**
 * The best a lock could do in this rhythm on this machine: a single holder works `workMs` (the
 * same timer), then "hands over" with one QuorumPublish round, and works again at once. Nobody
 * else asks, nothing is locked: the utilisation it reaches is a ceiling for every library.
 */
async function handOverFloor(ctx: BenchContext, seconds: number): Promise<HandOverFloor> {
  const { workMs } = ctx.config.b3;
  const floor = await QuorumPublish.connect(ctx.urls);
  try {
    for (let i = 0; i < 50; i++) await floor.round(); // warm-up
    const handoffs: number[] = [];
    let busy = 0;
    const start = now();
    const end = start + seconds * 1000;
    while (now() < end) {
      const granted = now();
      await sleep(workMs);
      const done = now();
      busy += done - granted;
      await floor.round();
      handoffs.push(now() - done);
    }
    return { utilisation: busy / (now() - start), handoff: summarise(handoffs), rounds: handoffs.length };
  } finally {
    floor.close();
  }
}

export const b3: Benchmark = {
  id: 'B3',
  title: 'contention: clients on one key, 1 ms of work, 5 ms pause',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { clients: count, seconds, workMs, pauseMs } = ctx.config.b3;
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const measured: Record<string, Contention> = {};
    ctx.log(
      `B3 floor: one holder, ${ctx.config.b3.workMs} ms of work, a bare publish chain as the hand-over`,
    );
    const floor = await handOverFloor(ctx, Math.max(2, seconds / 2));
    for (const lib of ctx.libraries) {
      ctx.log(`B3 ${lib.label}: ${count} clients on one key for ${seconds} s`);
      const clients: LockClient[] = [];
      try {
        for (let i = 0; i < count; i++) clients.push(await lib.open(ctx.urls, settings));
        await settle();
        measured[lib.id] = await contend(lib, ctx, clients);
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
    }

    const cells = (pick: (c: Contention) => number, atFloor?: number) => {
      const out: Record<string, Cell> = {};
      for (const [id, c] of Object.entries(measured)) out[id] = pick(c);
      if (atFloor !== undefined) out[FLOOR] = atFloor;
      return out;
    };
    const targets: TargetCheck[] = [];
    const ours = measured.ours;
    const peer = measured.redlock5;
    if (ours) {
      targets.push({
        text: 'our utilisation >= 80%',
        met: ours.utilisation >= 0.8,
        detail:
          `ours ${(ours.utilisation * 100).toFixed(1)}%; the floor reaches ${(floor.utilisation * 100).toFixed(1)}% ` +
          `with a bare publish chain as the hand-over (p50 ${floor.handoff.p50.toFixed(2)} ms)`,
      });
    }
    if (ours && peer) {
      targets.push({
        text: "our p99 wait <= 1/5 of redlock@5's",
        met: ours.wait.p99 <= peer.wait.p99 / 5,
        detail: `ours ${ours.wait.p99.toFixed(1)} ms vs redlock@5 ${peer.wait.p99.toFixed(1)} ms (1/${(peer.wait.p99 / ours.wait.p99).toFixed(1)})`,
      });
    }
    const notes = [
      `floor column: one holder alone, ${workMs} ms timer of work, then one script that PUBLISHes on every node ` +
        `and a subscriber per node that waits for the ${Math.floor(ctx.urls.length / 2) + 1}th message, as the ` +
        `hand-over (${floor.rounds} rounds): a ceiling for any library that wakes its waiters through Redis`,
      `utilisation = critical-section time (grant -> release called, ${workMs} ms timer) / wall time; ` +
        `wait = request -> grant; hand-over = release called -> next grant. Wait budget ${ctx.config.wait} ms for all: ` +
        ctx.libraries.map((l) => `${l.id}: ${l.describeWaiting(settings)}`).join('; '),
    ];
    for (const [id, c] of Object.entries(measured)) {
      if (c.gaveUp > 0) notes.push(`${id}: ${c.gaveUp} acquires gave up within the wait budget`);
      if (c.overlaps > 0)
        notes.push(`${id}: ${c.overlaps} grants overlapped another holder (mutual exclusion broken!)`);
    }
    return {
      id: 'B3',
      title: this.title,
      rows: [
        {
          metric: 'utilisation',
          unit: '%',
          better: 'higher',
          digits: 1,
          cells: cells((c) => c.utilisation * 100, floor.utilisation * 100),
        },
        { metric: 'wait p50', unit: 'ms', better: 'lower', digits: 2, cells: cells((c) => c.wait.p50) },
        { metric: 'wait p99', unit: 'ms', better: 'lower', digits: 2, cells: cells((c) => c.wait.p99) },
        {
          metric: 'hand-over p50',
          unit: 'ms',
          better: 'lower',
          digits: 2,
          cells: cells((c) => c.handoff.p50, floor.handoff.p50),
        },
        {
          metric: 'Node CPU per grant',
          unit: 'ms',
          better: 'lower',
          digits: 2,
          cells: cells((c) => c.cpu.benchMs / c.grants),
        },
        {
          metric: 'Redis CPU per grant',
          unit: 'ms',
          better: 'lower',
          digits: 2,
          cells: cells((c) => c.cpu.redisMs / c.grants),
        },
        {
          metric: 'grants/client min',
          unit: 'count',
          better: 'higher',
          digits: 0,
          cells: cells((c) => Math.min(...c.grantsPerClient)),
        },
        {
          metric: 'grants/client max',
          unit: 'count',
          better: 'lower',
          digits: 0,
          cells: cells((c) => Math.max(...c.grantsPerClient)),
        },
      ],
      targets,
      notes,
      details: {
        clients: count,
        seconds,
        floor: {
          ...floor,
          utilisation: Math.round(floor.utilisation * 10_000) / 10_000,
          handoff: rounded(floor.handoff),
        },
        workMs,
        pauseMs,
        libraries: Object.fromEntries(
          Object.entries(measured).map(([id, c]) => [
            id,
            {
              ...c,
              utilisation: Math.round(c.utilisation * 10_000) / 10_000,
              wait: rounded(c.wait),
              handoff: rounded(c.handoff),
            },
          ]),
        ),
      },
    };
  },
};
