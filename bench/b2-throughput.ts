import { QuorumPing } from './floor.js';
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
import { describePaired, median, now, pairedRatio, rounded, summarise } from './stats.js';

/** Something B2 drives: one operation of loop `loop` (acquire + release of its own key). */
interface Contestant {
  readonly id: string;
  op(loop: number): Promise<void>;
  close(): Promise<void>;
}

/** One round of one contestant. */
interface Round {
  readonly ops: number;
  readonly opsPerSecond: number;
  readonly cost: CycleCost;
  /** Share of one core used by the bench process and by all nodes together while measured. */
  readonly nodeShare: number;
  readonly redisShare: number;
}

interface Tally {
  errors: number;
  /** Every op's latency over all rounds (for the p99). */
  latencies: number[];
  rounds: Round[];
}

/** What the table shows for one contestant: medians of rounds, the p99 over all ops. */
interface Figures {
  readonly opsPerSecond: number;
  readonly p99: number;
  readonly cost: MedianCost;
  readonly ops: number;
  readonly errors: number;
}

/** Counts of one `drive`. */
interface Driven {
  ops: number;
  errors: number;
  readonly latencies: number[];
}

/** `loops` concurrent loops of `op` for `ms`; every loop finishes its op in flight before the clock stops. */
async function drive(c: Contestant, loops: number, ms: number): Promise<Driven & { elapsedMs: number }> {
  const driven: Driven = { ops: 0, errors: 0, latencies: [] };
  const start = now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (now() < end) {
        const t0 = now();
        try {
          await c.op(loop);
          driven.ops++;
          driven.latencies.push(now() - t0);
        } catch {
          driven.errors++;
        }
      }
    }),
  );
  return { ...driven, elapsedMs: now() - start };
}

const pct = (share: number) => `${Math.round(share * 100)}%`;

export const b2: Benchmark = {
  id: 'B2',
  title: 'throughput: concurrent loops of acquire + release on distinct keys',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { loops, seconds, warmupSeconds } = ctx.config.b2;
    const rounds = ctx.config.rounds;
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const contestants: Contestant[] = [];
    const tallies = new Map<string, Tally>();
    try {
      for (const lib of ctx.libraries) {
        const client = await lib.open(ctx.urls, settings);
        const keys = Array.from({ length: loops }, (_, i) => `bench:b2:${lib.id}:${i}`);
        contestants.push({
          id: lib.id,
          op: async (loop) => {
            await (await client.acquire(keys[loop]!)).release();
          },
          close: () => client.close(),
        });
      }
      const ping = await QuorumPing.connect(ctx.urls);
      contestants.push({
        id: FLOOR,
        op: async () => {
          await ping.round();
          await ping.round();
        },
        close: async () => ping.close(),
      });

      ctx.log(`B2: ${loops} loops, ${seconds} s per library in ${rounds} interleaved rounds`);
      for (const c of contestants) {
        await drive(c, loops, warmupSeconds * 1000);
        tallies.set(c.id, { errors: 0, latencies: [], rounds: [] });
      }
      await interleave(contestants, rounds, async (c) => {
        const tally = tallies.get(c.id)!;
        const stop = await startSlice(ctx.nodes);
        const driven = await drive(c, loops, (seconds * 1000) / rounds);
        const cost = await stop();
        tally.errors += driven.errors;
        tally.latencies.push(...driven.latencies);
        tally.rounds.push({
          ops: driven.ops,
          opsPerSecond: (driven.ops / driven.elapsedMs) * 1000,
          cost: perCycle(cost, driven.ops),
          nodeShare: cost.nodeCpuUs / 1000 / cost.wallMs,
          redisShare: cost.redisCpuUs / 1000 / cost.wallMs,
        });
      });
    } finally {
      await Promise.all(contestants.map((c) => c.close()));
    }

    const measured: Record<string, Figures> = {};
    for (const [id, t] of tallies) {
      measured[id] = {
        opsPerSecond: median(t.rounds.map((r) => r.opsPerSecond)),
        p99: summarise(t.latencies).p99,
        cost: medianCost(t.rounds.map((r) => r.cost)),
        ops: t.rounds.reduce((sum, r) => sum + r.ops, 0),
        errors: t.errors,
      };
    }
    const cells = (pick: (f: Figures) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, f] of Object.entries(measured)) out[id] = pick(f);
      return out;
    };
    const notes = Object.entries(measured)
      .filter(([, f]) => f.errors > 0)
      .map(([id, f]) => `${id}: ${f.errors} failed operations`);
    notes.push(
      `ops/s and CPU are medians of the ${rounds} rounds, p99 is over all ops. floor column: the same loops doing ` +
        `two quorum PING rounds (no lock). CPU while measured (median share of one core, 2 cores in all): ` +
        [...tallies]
          .map(
            ([id, t]) =>
              `${id} bench process ${pct(median(t.rounds.map((r) => r.nodeShare)))} + redis ${pct(median(t.rounds.map((r) => r.redisShare)))}`,
          )
          .join('; '),
    );
    const opsCells = cells((f) => f.opsPerSecond);
    const ours = measured.ours;
    const peer = measured.redlock5;
    const targets: TargetCheck[] = [];
    const perRound = (id: string) => tallies.get(id)!.rounds.map((r) => r.opsPerSecond);
    if (ours && peer) {
      targets.push({
        text: 'ours >= 2 x redlock@5 throughput',
        met: ours.opsPerSecond >= 2 * peer.opsPerSecond,
        detail:
          `ours ${Math.round(ours.opsPerSecond)} ops/s vs redlock@5 ${Math.round(peer.opsPerSecond)} (${(ours.opsPerSecond / peer.opsPerSecond).toFixed(2)}x; ` +
          `${describePaired(pairedRatio(perRound('ours'), perRound('redlock5')))})`,
      });
    }
    targets.push(
      ...baselineCheck(
        'throughput',
        opsCells,
        'higher',
        (v) => `${Math.round(v)} ops/s`,
        (id) => tallies.get(id)?.rounds.map((r) => r.opsPerSecond),
      ),
    );
    return {
      id: 'B2',
      title: this.title,
      rows: [
        { metric: `${loops} loops`, unit: 'ops/s', better: 'higher', digits: 0, cells: opsCells },
        { metric: 'op latency p99', unit: 'ms', better: 'lower', cells: cells((f) => f.p99) },
        ...costRows('per op', cells),
      ],
      targets,
      notes,
      details: {
        loops,
        seconds,
        rounds,
        results: Object.fromEntries(
          [...tallies].map(([id, t]) => [
            id,
            {
              ...measured[id],
              opsPerSecond: Math.round(measured[id]!.opsPerSecond),
              latency: rounded(summarise(t.latencies)),
              rounds: t.rounds,
            },
          ]),
        ),
      },
    };
  },
};
