import { QuorumPing } from './floor.js';
import { costRows, medianCost, perCycle, startSlice, type CycleCost, type MedianCost } from './meter.js';
import {
  baselineCheck,
  FLOOR,
  type BenchContext,
  type BenchResult,
  type Benchmark,
  type Cell,
  type Row,
  type TargetCheck,
} from './report.js';
import { interleave } from './rounds.js';
import { describePaired, median, now, pairedRatio, rounded, summarise, type Summary } from './stats.js';

/** Something B1 times: two sequential steps (acquire + release, or two quorum PINGs). */
interface Contestant {
  readonly id: string;
  /** Runs both steps once; resolves when the second is done. */
  once(stamp: (step: 1 | 2) => void): Promise<void>;
  close(): Promise<void>;
}

/** One round of one contestant. */
interface Round {
  readonly total: Summary;
  readonly first: Summary;
  readonly second: Summary;
  readonly cost: CycleCost;
}

/** Every sample of one contestant (for the tail percentiles) and its rounds (for the medians). */
interface Samples {
  readonly total: number[];
  readonly first: number[];
  readonly second: number[];
  readonly rounds: Round[];
}

/** What the table shows for one contestant. */
interface Figures {
  /** Medians of the per-round p50s. */
  readonly p50: number;
  readonly acquireP50: number;
  readonly releaseP50: number;
  /** Over all samples: a p99 of one round of 1,000 ops would rest on 10 samples. */
  readonly p99: number;
  readonly cost: MedianCost;
  /** Each round's p50 and Node + Redis CPU per cycle, in round order (for per-round ratios). */
  readonly perRound: { readonly p50: readonly number[]; readonly cpuUs: readonly number[] };
}

export const b1: Benchmark = {
  id: 'B1',
  title: 'uncontended acquire + release, sequential, one key',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { ops, warmup } = ctx.config.b1;
    const rounds = Math.min(ctx.config.rounds, ops);
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const contestants: Contestant[] = [];
    const samples = new Map<string, Samples>();
    try {
      for (const lib of ctx.libraries) {
        const client = await lib.open(ctx.urls, settings);
        const key = `bench:b1:${lib.id}`;
        contestants.push({
          id: lib.id,
          async once(stamp) {
            const held = await client.acquire(key);
            stamp(1);
            await held.release();
            stamp(2);
          },
          close: () => client.close(),
        });
      }
      const ping = await QuorumPing.connect(ctx.urls);
      contestants.push({
        id: FLOOR,
        async once(stamp) {
          await ping.round();
          stamp(1);
          await ping.round();
          stamp(2);
        },
        close: async () => ping.close(),
      });

      ctx.log(
        `B1: ${ops} sequential ops per library in ${rounds} interleaved rounds (floor: 2 quorum PING rounds)`,
      );
      for (const c of contestants) {
        samples.set(c.id, { total: [], first: [], second: [], rounds: [] });
        for (let i = 0; i < warmup; i++) await c.once(() => undefined);
      }
      await interleave(contestants, rounds, async (c, round) => {
        const s = samples.get(c.id)!;
        const count = Math.floor(ops / rounds) + (round < ops % rounds ? 1 : 0);
        for (let i = 0; i < 20; i++) await c.once(() => undefined); // re-warm after the others ran
        const total: number[] = [];
        const first: number[] = [];
        const second: number[] = [];
        const stop = await startSlice(ctx.nodes);
        for (let i = 0; i < count; i++) {
          const t0 = now();
          let t1 = t0;
          let t2 = t0;
          await c.once((step) => {
            if (step === 1) t1 = now();
            else t2 = now();
          });
          first.push(t1 - t0);
          second.push(t2 - t1);
          total.push(t2 - t0);
        }
        const cost = perCycle(await stop(), count);
        s.total.push(...total);
        s.first.push(...first);
        s.second.push(...second);
        s.rounds.push({ total: summarise(total), first: summarise(first), second: summarise(second), cost });
      });
    } finally {
      await Promise.all(contestants.map((c) => c.close()));
    }

    const measured: Record<string, Figures> = {};
    for (const [id, s] of samples) {
      measured[id] = {
        p50: median(s.rounds.map((r) => r.total.p50)),
        acquireP50: median(s.rounds.map((r) => r.first.p50)),
        releaseP50: median(s.rounds.map((r) => r.second.p50)),
        p99: summarise(s.total).p99,
        cost: medianCost(s.rounds.map((r) => r.cost)),
        perRound: {
          p50: s.rounds.map((r) => r.total.p50),
          cpuUs: s.rounds.map((r) => r.cost.nodeCpuUs + r.cost.redisCpuUs),
        },
      };
    }
    const floor = measured[FLOOR]!;
    const cells = (pick: (f: Figures) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, f] of Object.entries(measured)) out[id] = pick(f);
      return out;
    };
    const rows: Row[] = [
      { metric: 'acquire+release p50', unit: 'ms', better: 'lower', cells: cells((f) => f.p50) },
      { metric: 'acquire+release p99', unit: 'ms', better: 'lower', cells: cells((f) => f.p99) },
      { metric: 'acquire p50', unit: 'ms', better: 'lower', cells: cells((f) => f.acquireP50) },
      { metric: 'release p50', unit: 'ms', better: 'lower', cells: cells((f) => f.releaseP50) },
      ...costRows('per cycle', cells),
    ];
    return {
      id: 'B1',
      title: this.title,
      rows,
      targets: targets(measured, floor),
      notes: [
        `${ops} ops per library after ${warmup} warm-up ops, in ${rounds} rounds that alternate the libraries; ` +
          `p50 and CPU are medians of the rounds' figures, p99 is over all ops. ` +
          `floor column: two sequential quorum PING rounds in place of acquire and release ` +
          `(one round p50 ${median(samples.get(FLOOR)!.rounds.map((r) => r.first.p50)).toFixed(3)} ms)`,
      ],
      details: {
        ops,
        warmup,
        rounds,
        results: Object.fromEntries(
          [...samples].map(([id, s]) => [
            id,
            {
              ...measured[id],
              total: rounded(summarise(s.total)),
              acquire: rounded(summarise(s.first)),
              release: rounded(summarise(s.second)),
              rounds: s.rounds.map((r) => ({ p50: r.total.p50, ...r.cost })),
            },
          ]),
        ),
      },
    };
  },
};

/** Issue 17's and issue 11's checks on B1. */
function targets(measured: Record<string, Figures>, floor: Figures): TargetCheck[] {
  const out: TargetCheck[] = [];
  const ours = measured.ours;
  if (!ours) return out;
  const peer = measured.redlock5;
  if (peer) {
    out.push({
      text: "our p50 at least 1.0x redlock@5's speed (aim 1.2x)",
      met: ours.p50 <= peer.p50,
      detail:
        `ours ${ours.p50.toFixed(3)} ms vs redlock@5 ${peer.p50.toFixed(3)} ms (${(peer.p50 / ours.p50).toFixed(2)}x its speed; ` +
        `${describePaired(pairedRatio(peer.perRound.p50, ours.perRound.p50))})`,
    });
    out.push({
      text: "our Node + Redis CPU per cycle at most 1.0x redlock@5's (aim 0.8x)",
      met: ours.cost.totalCpuUs <= peer.cost.totalCpuUs,
      detail:
        `ours ${ours.cost.totalCpuUs.toFixed(0)} us (Node ${ours.cost.nodeCpuUs.toFixed(0)} + Redis ${ours.cost.redisCpuUs.toFixed(0)}) ` +
        `vs redlock@5 ${peer.cost.totalCpuUs.toFixed(0)} us (Node ${peer.cost.nodeCpuUs.toFixed(0)} + Redis ${peer.cost.redisCpuUs.toFixed(0)}): ` +
        `${(ours.cost.totalCpuUs / peer.cost.totalCpuUs).toFixed(2)}x ` +
        `(${describePaired(pairedRatio(ours.perRound.cpuUs, peer.perRound.cpuUs))})`,
    });
  }
  const bound = 2.5 * floor.p50;
  out.push({
    text: 'our p50 <= 2.5 x two floor round trips',
    met: ours.p50 <= bound,
    detail: `ours ${ours.p50.toFixed(3)} ms vs 2.5 x ${floor.p50.toFixed(3)} = ${bound.toFixed(3)} ms (${(ours.p50 / floor.p50).toFixed(2)}x the floor)`,
  });
  const ms = (v: number) => `${v.toFixed(3)} ms`;
  const us = (v: number) => `${v.toFixed(0)} us`;
  const pick = (f: (x: Figures) => number) =>
    Object.fromEntries(Object.entries(measured).map(([id, x]) => [id, f(x)]));
  out.push(
    ...baselineCheck(
      'p50',
      pick((f) => f.p50),
      'lower',
      ms,
      (id) => measured[id]?.perRound.p50,
    ),
  );
  out.push(
    ...baselineCheck(
      'Node + Redis CPU per cycle',
      pick((f) => f.cost.totalCpuUs),
      'lower',
      us,
      (id) => measured[id]?.perRound.cpuUs,
    ),
  );
  return out;
}
