import { QuorumPing } from './floor.js';
import { FLOOR, type BenchContext, type BenchResult, type Benchmark, type Cell } from './report.js';
import { interleave } from './rounds.js';
import { addCpu, cpuMeter, NO_CPU, now, rounded, summarise, type CpuTime, type Summary } from './stats.js';

/** Something B2 drives: one operation of loop `loop` (acquire + release of its own key). */
interface Contestant {
  readonly id: string;
  op(loop: number): Promise<void>;
  close(): Promise<void>;
}

interface Tally {
  ops: number;
  errors: number;
  elapsedMs: number;
  latencies: number[];
  cpu: CpuTime;
}

interface Throughput {
  readonly opsPerSecond: number;
  readonly ops: number;
  readonly errors: number;
  readonly latency: Summary;
  readonly cpu: CpuTime;
}

/** `loops` concurrent loops of `op` for `ms`; every loop finishes its op in flight before the clock stops. */
async function drive(
  c: Contestant,
  loops: number,
  ms: number,
  into?: Tally,
  redisPids: readonly (number | undefined)[] = [],
) {
  const meter = cpuMeter(redisPids);
  const start = now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (now() < end) {
        const t0 = now();
        try {
          await c.op(loop);
          if (into) {
            into.ops++;
            into.latencies.push(now() - t0);
          }
        } catch {
          if (into) into.errors++;
        }
      }
    }),
  );
  if (into) {
    into.elapsedMs += now() - start;
    into.cpu = addCpu(into.cpu, meter());
  }
}

const pct = (share: number) => `${Math.round(share * 100)}%`;

export const b2: Benchmark = {
  id: 'B2',
  title: 'throughput: concurrent loops of acquire + release on distinct keys',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { loops, seconds, warmupSeconds } = ctx.config.b2;
    const rounds = ctx.config.rounds;
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout: ctx.config.nodeTimeout };
    const pids = ctx.nodes.urls.map((_, i) => ctx.nodes.pid(i));
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
        tallies.set(c.id, { ops: 0, errors: 0, elapsedMs: 0, latencies: [], cpu: NO_CPU });
      }
      await interleave(contestants, rounds, async (c) => {
        await drive(c, loops, (seconds * 1000) / rounds, tallies.get(c.id), pids);
      });
    } finally {
      await Promise.all(contestants.map((c) => c.close()));
    }

    const measured: Record<string, Throughput> = {};
    for (const [id, t] of tallies) {
      measured[id] = {
        opsPerSecond: (t.ops / t.elapsedMs) * 1000,
        ops: t.ops,
        errors: t.errors,
        latency: summarise(t.latencies),
        cpu: t.cpu,
      };
    }
    const cells = (pick: (t: Throughput) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, t] of Object.entries(measured)) out[id] = pick(t);
      return out;
    };
    const perKiloOp = (ms: number, t: Throughput) => (ms / t.ops) * 1000;
    const ours = measured.ours;
    const peer = measured.redlock5;
    const notes = Object.entries(measured)
      .filter(([, t]) => t.errors > 0)
      .map(([id, t]) => `${id}: ${t.errors} failed operations`);
    notes.push(
      `floor column: the same loops doing two quorum PING rounds (no lock). CPU while measured (share of one core, 2 cores in all): ` +
        Object.entries(measured)
          .map(
            ([id, t]) =>
              `${id} bench process ${pct(t.cpu.benchMs / t.cpu.wallMs)} + redis ${pct(t.cpu.redisMs / t.cpu.wallMs)}`,
          )
          .join('; '),
    );
    return {
      id: 'B2',
      title: this.title,
      rows: [
        {
          metric: `${loops} loops`,
          unit: 'ops/s',
          better: 'higher',
          digits: 0,
          cells: cells((t) => t.opsPerSecond),
        },
        { metric: 'op latency p99', unit: 'ms', better: 'lower', cells: cells((t) => t.latency.p99) },
        {
          metric: 'Node CPU per 1k ops',
          unit: 'ms',
          better: 'lower',
          digits: 0,
          cells: cells((t) => perKiloOp(t.cpu.benchMs, t)),
        },
        {
          metric: 'Redis CPU per 1k ops',
          unit: 'ms',
          better: 'lower',
          digits: 0,
          cells: cells((t) => perKiloOp(t.cpu.redisMs, t)),
        },
      ],
      targets:
        ours && peer
          ? [
              {
                text: 'ours >= 1.5 x redlock@5 throughput',
                met: ours.opsPerSecond >= 1.5 * peer.opsPerSecond,
                detail: `ours ${Math.round(ours.opsPerSecond)} ops/s vs redlock@5 ${Math.round(peer.opsPerSecond)} (${(ours.opsPerSecond / peer.opsPerSecond).toFixed(2)}x)`,
              },
            ]
          : [],
      notes,
      details: {
        loops,
        seconds,
        rounds,
        results: Object.fromEntries(
          Object.entries(measured).map(([id, t]) => [
            id,
            { ...t, opsPerSecond: Math.round(t.opsPerSecond), latency: rounded(t.latency) },
          ]),
        ),
      },
    };
  },
};
