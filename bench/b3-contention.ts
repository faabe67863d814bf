import { QuorumPublish } from './floor.js';
import type { Library, LockClient } from './libraries.js';
import { costRows, medianCost, perCycle, startSlice, type CycleCost, type MedianCost } from './meter.js';
import {
  baselineCheck,
  FLOOR,
  type BenchContext,
  type BenchResult,
  type Benchmark,
  type Cell,
  type TargetCheck,
} from './report.js';
import { interleave } from './rounds.js';
import {
  describePaired,
  median,
  now,
  pairedRatio,
  rounded,
  settle,
  sleep,
  summarise,
  type Summary,
} from './stats.js';

/** One round (slice) of one library. */
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
  /** Node CPU (all 16 clients), Redis CPU and commands per grant. */
  readonly cost: CycleCost;
}

/** Raw samples of one round, pooled over rounds for the tail percentiles. */
interface RoundSamples {
  readonly waits: number[];
  readonly handoffs: number[];
}

/**
 * `clients` separate library instances (each with its own connections) contend for one key for
 * `seconds`: each holds it for `workMs` (a timer, like awaiting I/O), releases, pauses `pauseMs`,
 * asks again.
 */
async function contend(
  lib: Library,
  ctx: BenchContext,
  clients: readonly LockClient[],
  seconds: number,
): Promise<Contention & RoundSamples> {
  const { workMs, pauseMs } = ctx.config.b3;
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
  const stop = await startSlice(ctx.nodes);
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
  const cost = await stop();
  return {
    utilisation: busy / (end - start),
    wait: summarise(waits),
    handoff: summarise(handoffs),
    grantsPerClient,
    grants: waits.length,
    gaveUp,
    overlaps,
    cost: perCycle(cost, waits.length),
    waits,
    handoffs,
  };
}

/** What the floor measures in one round: one holder's work and a bare publish chain as the hand-over. */
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
async function handOverFloor(
  ctx: BenchContext,
  floor: QuorumPublish,
  seconds: number,
): Promise<HandOverFloor> {
  const { workMs } = ctx.config.b3;
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
}

/** One library's figures over all rounds: medians of rounds, tails and counts over all of them. */
interface Figures {
  readonly utilisation: number;
  readonly waitP50: number;
  readonly waitP99: number;
  readonly handoffP50: number;
  readonly cost: MedianCost;
  readonly grantsPerClient: readonly number[];
  readonly grants: number;
  readonly gaveUp: number;
  readonly overlaps: number;
}

function summariseRounds(rounds: ReadonlyArray<Contention & RoundSamples>): Figures {
  return {
    utilisation: median(rounds.map((r) => r.utilisation)),
    waitP50: median(rounds.map((r) => r.wait.p50)),
    waitP99: summarise(rounds.flatMap((r) => r.waits)).p99,
    handoffP50: median(rounds.map((r) => r.handoff.p50)),
    cost: medianCost(rounds.map((r) => r.cost)),
    grantsPerClient: rounds[0]!.grantsPerClient.map((_, i) =>
      rounds.reduce((sum, r) => sum + r.grantsPerClient[i]!, 0),
    ),
    grants: rounds.reduce((sum, r) => sum + r.grants, 0),
    gaveUp: rounds.reduce((sum, r) => sum + r.gaveUp, 0),
    overlaps: rounds.reduce((sum, r) => sum + r.overlaps, 0),
  };
}

export const b3: Benchmark = {
  id: 'B3',
  title: 'contention: clients on one key, 1 ms of work, 5 ms pause',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { clients: count, seconds, workMs, pauseMs } = ctx.config.b3;
    const rounds = ctx.config.rounds;
    const slice = seconds / rounds;
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const perLibrary = new Map<string, Array<Contention & RoundSamples>>();
    const floorRounds: HandOverFloor[] = [];
    // Every library's clients stay open for the whole benchmark, so that a round is only the
    // contention itself; idle clients of the other libraries cost nothing but open sockets.
    const opened = new Map<string, LockClient[]>();
    const publish = await QuorumPublish.connect(ctx.urls);
    try {
      for (const lib of ctx.libraries) {
        const clients: LockClient[] = [];
        opened.set(lib.id, clients);
        for (let i = 0; i < count; i++) clients.push(await lib.open(ctx.urls, settings));
        perLibrary.set(lib.id, []);
      }
      ctx.log(
        `B3: ${count} clients per library on one key, ${seconds} s per library in ${rounds} interleaved rounds; ` +
          `floor: one holder, ${workMs} ms of work, a bare publish chain as the hand-over`,
      );
      const contestants: Array<Library | typeof FLOOR> = [...ctx.libraries, FLOOR];
      await interleave(contestants, rounds, async (c) => {
        // Alike for every library and the floor: no one pays for the garbage of the one before.
        await settle();
        if (c === FLOOR) floorRounds.push(await handOverFloor(ctx, publish, slice));
        else perLibrary.get(c.id)!.push(await contend(c, ctx, opened.get(c.id)!, slice));
      });
    } finally {
      publish.close();
      await Promise.all([...opened.values()].flat().map((c) => c.close()));
    }

    const measured: Record<string, Figures> = {};
    for (const [id, r] of perLibrary) measured[id] = summariseRounds(r);
    const floor = {
      utilisation: median(floorRounds.map((r) => r.utilisation)),
      handoffP50: median(floorRounds.map((r) => r.handoff.p50)),
      rounds: floorRounds.reduce((sum, r) => sum + r.rounds, 0),
    };
    const cells = (pick: (f: Figures) => number, atFloor?: number) => {
      const out: Record<string, Cell> = {};
      for (const [id, f] of Object.entries(measured)) out[id] = pick(f);
      if (atFloor !== undefined) out[FLOOR] = atFloor;
      return out;
    };
    const utilisationCells = cells((f) => f.utilisation * 100, floor.utilisation * 100);
    const targets: TargetCheck[] = [];
    const ours = measured.ours;
    const peer = measured.redlock5;
    if (ours) {
      targets.push({
        text: "our utilisation >= 90% of the floor's",
        met: ours.utilisation >= 0.9 * floor.utilisation,
        detail:
          `ours ${(ours.utilisation * 100).toFixed(1)}% vs the floor's ${(floor.utilisation * 100).toFixed(1)}% ` +
          `(${((ours.utilisation / floor.utilisation) * 100).toFixed(0)}%; the floor hands over with a bare publish chain, p50 ${floor.handoffP50.toFixed(2)} ms; ` +
          `${describePaired(
            pairedRatio(
              perLibrary.get('ours')!.map((r) => r.utilisation),
              floorRounds.map((r) => r.utilisation),
            ),
          )})`,
      });
    }
    if (ours && peer) {
      targets.push({
        text: "our p99 wait <= 1/5 of redlock@5's",
        met: ours.waitP99 <= peer.waitP99 / 5,
        detail: `ours ${ours.waitP99.toFixed(1)} ms vs redlock@5 ${peer.waitP99.toFixed(1)} ms (1/${(peer.waitP99 / ours.waitP99).toFixed(1)})`,
      });
    }
    targets.push(
      ...baselineCheck(
        'utilisation',
        utilisationCells,
        'higher',
        (v) => `${v.toFixed(1)}%`,
        (id) => perLibrary.get(id)?.map((r) => r.utilisation),
      ),
    );
    const notes = [
      `floor column: one holder alone, ${workMs} ms timer of work, then one script that PUBLISHes on every node ` +
        `and a subscriber per node that waits for the ${Math.floor(ctx.urls.length / 2) + 1}th message, as the ` +
        `hand-over (${floor.rounds} hand-overs): a ceiling for any library that wakes its waiters through Redis`,
      `utilisation, wait p50, hand-over p50 and costs are medians of the ${rounds} rounds of ${slice} s; ` +
        `wait p99 is over all grants; grants per client are summed over the rounds`,
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
        { metric: 'utilisation', unit: '%', better: 'higher', digits: 1, cells: utilisationCells },
        { metric: 'wait p50', unit: 'ms', better: 'lower', digits: 2, cells: cells((f) => f.waitP50) },
        { metric: 'wait p99', unit: 'ms', better: 'lower', digits: 2, cells: cells((f) => f.waitP99) },
        {
          metric: 'hand-over p50',
          unit: 'ms',
          better: 'lower',
          digits: 2,
          cells: cells((f) => f.handoffP50, floor.handoffP50),
        },
        ...costRows('per grant', cells),
        {
          metric: 'grants/client min',
          unit: 'count',
          better: 'higher',
          digits: 0,
          cells: cells((f) => Math.min(...f.grantsPerClient)),
        },
        {
          metric: 'grants/client max',
          unit: 'count',
          better: 'lower',
          digits: 0,
          cells: cells((f) => Math.max(...f.grantsPerClient)),
        },
      ],
      targets,
      notes,
      details: {
        clients: count,
        seconds,
        rounds,
        workMs,
        pauseMs,
        floor: {
          ...floor,
          perRound: floorRounds.map((r) => ({ utilisation: r.utilisation, handoff: rounded(r.handoff) })),
        },
        libraries: Object.fromEntries(
          [...perLibrary].map(([id, r]) => [
            id,
            {
              ...measured[id],
              wait: rounded(summarise(r.flatMap((x) => x.waits))),
              handoff: rounded(summarise(r.flatMap((x) => x.handoffs))),
              perRound: r.map((x) => ({
                utilisation: x.utilisation,
                grants: x.grants,
                waitP50: x.wait.p50,
                handoffP50: x.handoff.p50,
                ...x.cost,
              })),
            },
          ]),
        ),
      },
    };
  },
};
