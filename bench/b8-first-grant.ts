import type { LockClient } from './libraries.js';
import { costRows, medianCost, perCycle, startSlice, type CycleCost, type MedianCost } from './meter.js';
import {
  baselineCheck,
  type BenchContext,
  type BenchResult,
  type Benchmark,
  type Cell,
  type TargetCheck,
} from './report.js';
import { interleave } from './rounds.js';
import { describePaired, median, now, pairedRatio, rounded, summarise, type PairedRatio } from './stats.js';

/** The two kinds of key B8 compares. */
type Kind = 'fresh' | 'warm';

/** One sub-slice: `count` sequential acquire + release cycles on one kind of key. */
interface Slice {
  readonly p50: number;
  readonly cost: CycleCost;
}

interface Samples {
  readonly latencies: Record<Kind, number[]>;
  readonly rounds: Record<Kind, Slice[]>;
}

/** Medians of the rounds, per kind of key. */
interface Figures {
  readonly fresh: { readonly p50: number; readonly p99: number; readonly cost: MedianCost };
  readonly warm: { readonly p50: number; readonly p99: number; readonly cost: MedianCost };
  /** Fresh p50 / warm p50 per round (both taken in the same round): median, spread. */
  readonly freshOverWarm: PairedRatio;
}

/**
 * B8: the first grant on a resource no one has locked before. Per-entity keys (`order:{id}`) make
 * it a common case, and a library may pay extra for it (ours seeds a fencing counter per
 * resource). In each library's turn of each round, `ops / rounds` acquire + release cycles on
 * never-used keys and as many on one warm key, the two sub-slices in alternating order, so that
 * "fresh / warm" compares figures taken seconds apart under the same load.
 */
export const b8: Benchmark = {
  id: 'B8',
  title: 'first grant: acquire + release on never-used keys vs one warm key',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { ops, warmup } = ctx.config.b8;
    const rounds = Math.min(ctx.config.rounds, ops);
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    // The nodes are new in every run, but a nonce keeps keys never-used even against old nodes.
    const nonce = Date.now().toString(36);
    const clients = new Map<string, LockClient>();
    const samples = new Map<string, Samples>();
    try {
      for (const lib of ctx.libraries) clients.set(lib.id, await lib.open(ctx.urls, settings));
      const keyFor = (id: string) => {
        let next = 0;
        return (kind: Kind) =>
          kind === 'warm' ? `bench:b8:${id}:warm` : `bench:b8:${id}:${nonce}:${next++}`;
      };
      const keys = new Map([...clients.keys()].map((id) => [id, keyFor(id)]));
      const cycle = async (id: string, kind: Kind) => {
        await (await clients.get(id)!.acquire(keys.get(id)!(kind))).release();
      };

      ctx.log(
        `B8: ${ops} cycles on never-used keys and ${ops} on a warm key per library, ${rounds} interleaved rounds`,
      );
      for (const id of clients.keys()) {
        samples.set(id, { latencies: { fresh: [], warm: [] }, rounds: { fresh: [], warm: [] } });
        for (let i = 0; i < warmup; i++) {
          await cycle(id, 'fresh');
          await cycle(id, 'warm');
        }
      }
      await interleave([...clients.keys()], rounds, async (id, round) => {
        const s = samples.get(id)!;
        const count = Math.floor(ops / rounds) + (round < ops % rounds ? 1 : 0);
        // Re-warm the code paths after the other libraries ran (on fresh keys too: they stay fresh).
        for (let i = 0; i < 10; i++) {
          await cycle(id, 'fresh');
          await cycle(id, 'warm');
        }
        const order: Kind[] = round % 2 === 0 ? ['fresh', 'warm'] : ['warm', 'fresh'];
        for (const kind of order) {
          const latencies: number[] = [];
          const stop = await startSlice(ctx.nodes);
          for (let i = 0; i < count; i++) {
            const t0 = now();
            await cycle(id, kind);
            latencies.push(now() - t0);
          }
          const cost = perCycle(await stop(), count);
          s.latencies[kind].push(...latencies);
          s.rounds[kind].push({ p50: summarise(latencies).p50, cost });
        }
      });
    } finally {
      await Promise.all([...clients.values()].map((c) => c.close()));
    }

    const measured: Record<string, Figures> = {};
    for (const [id, s] of samples) {
      const figures = (kind: Kind) => ({
        p50: median(s.rounds[kind].map((r) => r.p50)),
        p99: summarise(s.latencies[kind]).p99,
        cost: medianCost(s.rounds[kind].map((r) => r.cost)),
      });
      measured[id] = {
        fresh: figures('fresh'),
        warm: figures('warm'),
        freshOverWarm: pairedRatio(
          s.rounds.fresh.map((r) => r.p50),
          s.rounds.warm.map((r) => r.p50),
        ),
      };
    }
    const cells = (pick: (f: Figures) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, f] of Object.entries(measured)) out[id] = pick(f);
      return out;
    };
    const freshCells = cells((f) => f.fresh.p50);
    const targets: TargetCheck[] = [];
    const freshPerRound = (id: string) => samples.get(id)!.rounds.fresh.map((r) => r.p50);
    const ours = measured.ours;
    const peer = measured.redlock5;
    if (ours) {
      targets.push({
        text: "a first grant's p50 at most 1.1x a warm grant's",
        met: ours.freshOverWarm.median <= 1.1,
        detail:
          `ours fresh ${ours.fresh.p50.toFixed(3)} ms, warm ${ours.warm.p50.toFixed(3)} ms (${ours.freshOverWarm.median.toFixed(2)}x, median of rounds; ` +
          `${describePaired(ours.freshOverWarm)})`,
      });
    }
    if (ours && peer) {
      targets.push({
        text: "a first grant at least 1.0x redlock@5's speed on the same kind of keys",
        met: ours.fresh.p50 <= peer.fresh.p50,
        detail:
          `ours ${ours.fresh.p50.toFixed(3)} ms vs redlock@5 ${peer.fresh.p50.toFixed(3)} ms (${(peer.fresh.p50 / ours.fresh.p50).toFixed(2)}x its speed; ` +
          `${describePaired(pairedRatio(freshPerRound('redlock5'), freshPerRound('ours')))})`,
      });
    }
    targets.push(
      ...baselineCheck(
        'first-grant p50',
        freshCells,
        'lower',
        (v) => `${v.toFixed(3)} ms`,
        (id) => samples.get(id)?.rounds.fresh.map((r) => r.p50),
      ),
    );
    return {
      id: 'B8',
      title: this.title,
      rows: [
        { metric: 'fresh key: acquire+release p50', unit: 'ms', better: 'lower', cells: freshCells },
        {
          metric: 'fresh key: acquire+release p99',
          unit: 'ms',
          better: 'lower',
          cells: cells((f) => f.fresh.p99),
        },
        {
          metric: 'warm key: acquire+release p50',
          unit: 'ms',
          better: 'lower',
          cells: cells((f) => f.warm.p50),
        },
        {
          metric: 'fresh / warm p50',
          unit: 'x',
          better: 'lower',
          digits: 2,
          ratio: false,
          cells: cells((f) => f.freshOverWarm.median),
        },
        ...costRows('per fresh cycle', (pick) => cells((f) => pick(f.fresh))),
        {
          metric: 'Redis commands per warm cycle',
          unit: 'count',
          better: 'lower',
          digits: 1,
          cells: cells((f) => f.warm.cost.commands),
        },
      ],
      targets,
      notes: [
        `${ops} cycles per kind of key and library after ${warmup} warm-up cycles of each, in ${rounds} rounds that ` +
          `alternate the libraries (and, within a turn, which kind goes first); p50, fresh / warm and costs are ` +
          `medians of the rounds, p99 is over all cycles. Fresh keys are never reused.`,
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
              fresh: { ...measured[id]!.fresh, all: rounded(summarise(s.latencies.fresh)) },
              warm: { ...measured[id]!.warm, all: rounded(summarise(s.latencies.warm)) },
              rounds: s.rounds,
            },
          ]),
        ),
      },
    };
  },
};
