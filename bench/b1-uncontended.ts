import { QuorumPing } from './floor.js';
import {
  FLOOR,
  type BenchContext,
  type BenchResult,
  type Benchmark,
  type Cell,
  type TargetCheck,
} from './report.js';
import { interleave } from './rounds.js';
import { now, rounded, summarise, type Summary } from './stats.js';

/** Something B1 times: two sequential steps (acquire + release, or two quorum PINGs). */
interface Contestant {
  readonly id: string;
  /** Runs both steps once; resolves when the second is done. */
  once(stamp: (step: 1 | 2) => void): Promise<void>;
  close(): Promise<void>;
}

interface Latencies {
  readonly total: Summary;
  readonly first: Summary;
  readonly second: Summary;
}

export const b1: Benchmark = {
  id: 'B1',
  title: 'uncontended acquire + release, sequential, one key',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { ops, warmup } = ctx.config.b1;
    const rounds = Math.min(ctx.config.rounds, ops);
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const contestants: Contestant[] = [];
    const samples = new Map<string, { total: number[]; first: number[]; second: number[] }>();
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
        samples.set(c.id, { total: [], first: [], second: [] });
        for (let i = 0; i < warmup; i++) await c.once(() => undefined);
      }
      await interleave(contestants, rounds, async (c, round) => {
        const s = samples.get(c.id)!;
        const count = Math.floor(ops / rounds) + (round < ops % rounds ? 1 : 0);
        for (let i = 0; i < 20; i++) await c.once(() => undefined); // re-warm after the others ran
        for (let i = 0; i < count; i++) {
          const t0 = now();
          let t1 = t0;
          let t2 = t0;
          await c.once((step) => {
            if (step === 1) t1 = now();
            else t2 = now();
          });
          s.first.push(t1 - t0);
          s.second.push(t2 - t1);
          s.total.push(t2 - t0);
        }
      });
    } finally {
      await Promise.all(contestants.map((c) => c.close()));
    }

    const measured: Record<string, Latencies> = {};
    for (const [id, s] of samples) {
      measured[id] = { total: summarise(s.total), first: summarise(s.first), second: summarise(s.second) };
    }
    const floor = measured[FLOOR]!;
    const libraries = Object.entries(measured).filter(([id]) => id !== FLOOR);
    const cells = (pick: (l: Latencies) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, l] of Object.entries(measured)) out[id] = pick(l);
      return out;
    };
    const targets: TargetCheck[] = [];
    const ours = measured.ours;
    if (ours) {
      const peers = libraries.filter(([id]) => !id.startsWith('ours'));
      const faster = peers.filter(([, l]) => l.total.p50 < ours.total.p50).map(([id]) => id);
      targets.push({
        text: 'our p50 not slower than any peer',
        met: faster.length === 0,
        detail:
          `ours ${ours.total.p50.toFixed(3)} ms; ` +
          peers.map(([id, l]) => `${id} ${l.total.p50.toFixed(3)}`).join(', ') +
          (faster.length ? `; faster: ${faster.join(', ')}` : ''),
      });
      const bound = 2.5 * floor.total.p50;
      targets.push({
        text: 'our p50 <= 2.5 x two floor round trips',
        met: ours.total.p50 <= bound,
        detail: `ours ${ours.total.p50.toFixed(3)} ms vs 2.5 x ${floor.total.p50.toFixed(3)} = ${bound.toFixed(3)} ms (${(ours.total.p50 / floor.total.p50).toFixed(2)}x the floor)`,
      });
    }
    return {
      id: 'B1',
      title: this.title,
      rows: [
        { metric: 'acquire+release p50', unit: 'ms', better: 'lower', cells: cells((l) => l.total.p50) },
        { metric: 'acquire+release p99', unit: 'ms', better: 'lower', cells: cells((l) => l.total.p99) },
        { metric: 'acquire p50', unit: 'ms', better: 'lower', cells: cells((l) => l.first.p50) },
        { metric: 'release p50', unit: 'ms', better: 'lower', cells: cells((l) => l.second.p50) },
      ],
      targets,
      notes: [
        `${ops} ops per library after ${warmup} warm-up ops, in ${rounds} rounds that alternate the libraries. ` +
          `floor column: two sequential quorum PING rounds in place of acquire and release ` +
          `(one round p50 ${floor.first.p50.toFixed(3)} ms, p99 ${floor.first.p99.toFixed(3)} ms)`,
      ],
      details: {
        ops,
        warmup,
        rounds,
        results: Object.fromEntries(
          Object.entries(measured).map(([id, l]) => [
            id,
            { total: rounded(l.total), acquire: rounded(l.first), release: rounded(l.second) },
          ]),
        ),
      },
    };
  },
};
