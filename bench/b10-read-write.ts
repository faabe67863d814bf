import { Redlock } from 'nest-quorum-lock';
import { perCycle, medianCost, startSlice, type CycleCost } from './meter.js';
import type { BenchContext, BenchResult, Benchmark, Row } from './report.js';
import { interleave } from './rounds.js';
import { median, now, summarise } from './stats.js';

/*
 * B10: readers' throughput on ONE key, read-write lock vs mutex, our engine only (the peers have
 * no read-write lock over a quorum). `loops` concurrent loops (one engine each, as separate
 * instances would be) acquire the key, hold it `holdMs` (the work), release, and ask again:
 *   read    every loop takes a read lock: they hold together
 *   mutex   every loop takes the plain lock: one at a time (the floor readers should beat by far)
 *   mixed   every 10th acquire of each loop is a write: readers drain, the writer runs, the queued
 *           readers go in together again
 */

interface Setup {
  readonly id: 'read' | 'mutex' | 'mixed';
  readonly label: string;
  /** Whether the loop's `i`-th acquire reads. */
  readonly reads: (i: number) => boolean;
}

const SETUPS: readonly Setup[] = [
  { id: 'read', label: 'read locks only', reads: () => true },
  { id: 'mutex', label: 'plain (exclusive) locks only', reads: () => false },
  { id: 'mixed', label: '9 reads : 1 write', reads: (i) => i % 10 !== 9 },
];

interface Round {
  readonly opsPerSecond: number;
  readonly cost: CycleCost;
  readonly mostAtOnce: number;
}

export const b10: Benchmark = {
  id: 'B10',
  title: "readers' throughput on one key: read-write lock vs mutex (ours)",
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { loops, seconds, warmupSeconds, holdMs } = ctx.config.b10;
    const rounds = ctx.config.rounds;
    const engines = await Promise.all(
      Array.from({ length: loops }, async () => {
        const engine = new Redlock({
          nodes: [...ctx.urls],
          ttl: ctx.config.ttl,
          nodeTimeout: ctx.config.nodeTimeout,
          restartGuard: false,
          preflight: 'off',
          logger: { log: () => undefined, warn: ctx.log, error: ctx.log },
        });
        await engine.connect();
        return engine;
      }),
    );
    const tallies = new Map<string, { rounds: Round[]; latencies: number[]; errors: number }>();
    let slice = 0;
    const drive = async (s: Setup, ms: number) => {
      const tally = tallies.get(s.id) ?? { rounds: [], latencies: [], errors: 0 };
      tallies.set(s.id, tally);
      // A key per slice: a slice starts with no reader or writer left over from the one before.
      const key = `bench:b10:${s.id}:${slice++}`;
      let ops = 0;
      let holding = 0;
      let mostAtOnce = 0;
      const start = now();
      const end = start + ms;
      await Promise.all(
        engines.map(async (engine) => {
          for (let i = 0; now() < end; i++) {
            const t0 = now();
            try {
              const lock = await engine.acquire(key, {
                mode: s.reads(i) ? 'read' : 'write',
                wait: ctx.config.wait,
              });
              tally.latencies.push(now() - t0);
              mostAtOnce = Math.max(mostAtOnce, ++holding);
              await new Promise((resolve) => setTimeout(resolve, holdMs));
              holding--;
              await lock.release();
              ops++;
            } catch {
              tally.errors++;
            }
          }
        }),
      );
      return { ops, elapsedMs: now() - start, mostAtOnce };
    };
    try {
      ctx.log(
        `B10: ${loops} engines on one key, hold ${holdMs} ms, ${seconds} s per setup in ${rounds} rounds`,
      );
      for (const s of SETUPS) await drive(s, warmupSeconds * 1000);
      tallies.clear();
      await interleave(SETUPS, rounds, async (s) => {
        const stop = await startSlice(ctx.nodes);
        const driven = await drive(s, (seconds * 1000) / rounds);
        const cost = await stop();
        tallies.get(s.id)!.rounds.push({
          opsPerSecond: (driven.ops / driven.elapsedMs) * 1000,
          cost: perCycle(cost, driven.ops),
          mostAtOnce: driven.mostAtOnce,
        });
      });
    } finally {
      await Promise.all(engines.map((e) => e.close()));
    }

    const rows: Row[] = [];
    const figures: Record<string, unknown> = {};
    const notes: string[] = [];
    for (const s of SETUPS) {
      const t = tallies.get(s.id)!;
      const opsPerSecond = median(t.rounds.map((r) => r.opsPerSecond));
      const cost = medianCost(t.rounds.map((r) => r.cost));
      const { p50, p99 } = summarise(t.latencies);
      const mostAtOnce = Math.max(...t.rounds.map((r) => r.mostAtOnce));
      rows.push(
        {
          metric: `${s.id}: ops/s`,
          unit: 'ops/s',
          better: 'higher',
          digits: 0,
          cells: { ours: opsPerSecond },
        },
        { metric: `${s.id}: acquire p50`, unit: 'ms', better: 'lower', cells: { ours: p50 } },
        { metric: `${s.id}: acquire p99`, unit: 'ms', better: 'lower', cells: { ours: p99 } },
        {
          metric: `${s.id}: Redis commands per op`,
          unit: 'cmds',
          better: 'lower',
          digits: 1,
          cells: { ours: cost.commands },
        },
      );
      figures[s.id] = { label: s.label, opsPerSecond, p50, p99, cost, mostAtOnce, errors: t.errors };
      notes.push(`${s.id} (${s.label}): at most ${mostAtOnce} holders at once`);
      if (t.errors > 0) notes.push(`${s.id}: ${t.errors} failed acquires`);
    }
    const read = (figures.read as { opsPerSecond: number }).opsPerSecond;
    const mutex = (figures.mutex as { opsPerSecond: number }).opsPerSecond;
    notes.push(
      `read / mutex throughput: ${(read / mutex).toFixed(1)}x with ${loops} loops holding ${holdMs} ms`,
    );
    return {
      id: 'B10',
      title: this.title,
      rows,
      targets: [],
      notes,
      details: { loops, seconds, rounds, holdMs, setups: figures },
    };
  },
};
