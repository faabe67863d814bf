import type { HeldHandle, Library, LockClient } from './libraries.js';
import type { BenchContext, BenchResult, Benchmark, Cell, TargetCheck } from './report.js';
import { now, rounded, STALLED, summarise, within, type Summary } from './stats.js';

/** Which node is SIGSTOPped. */
const STOPPED_NODE = 0;

interface StoppedRun {
  readonly acquire: Summary;
  readonly release: Summary;
  readonly ops: number;
  readonly errors: number;
  /** Set when an acquire or release did not settle within the stall cap. */
  readonly stalled?: 'acquire' | 'release';
  /** Set when the time budget ended the run before `ops`. */
  readonly budgetHit: boolean;
  /** The op left hanging by a stall, settled after the node resumes. */
  readonly pending?: Promise<unknown>;
}

/** Sequential acquire + release on one key while a node is stopped, within a time budget. */
async function runStopped(client: LockClient, key: string, ctx: BenchContext): Promise<StoppedRun> {
  const { ops, budgetSeconds, stallMs } = ctx.config.b5;
  const acquire: number[] = [];
  const release: number[] = [];
  let errors = 0;
  const deadline = now() + budgetSeconds * 1000;
  const result = (extra: Partial<StoppedRun> = {}): StoppedRun => ({
    acquire: summarise(acquire),
    release: summarise(release),
    ops: acquire.length,
    errors,
    budgetHit: acquire.length + errors < ops,
    ...extra,
  });
  for (let i = 0; i < ops && now() < deadline; i++) {
    const t0 = now();
    let held: HeldHandle | typeof STALLED;
    const acquiring = client.acquire(key);
    try {
      held = await within(acquiring, stallMs);
    } catch {
      errors++;
      continue;
    }
    if (held === STALLED) {
      return result({ stalled: 'acquire', budgetHit: false, pending: acquiring.then((h) => h.release()) });
    }
    const t1 = now();
    acquire.push(t1 - t0);
    const releasing = held.release();
    const released = await within(releasing, stallMs).catch(() => undefined);
    if (released === STALLED) return result({ stalled: 'release', budgetHit: false, pending: releasing });
    release.push(now() - t1);
  }
  return result();
}

export const b5: Benchmark = {
  id: 'B5',
  title: 'one node of five SIGSTOPped: sequential acquire + release',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { ops, budgetSeconds, stallMs } = ctx.config.b5;
    const nodeTimeout = ctx.config.nodeTimeout;
    const settings = { ttl: ctx.config.ttl, wait: ctx.config.wait, nodeTimeout };
    const opened: Array<{ lib: Library; client: LockClient }> = [];
    const measured: Record<string, StoppedRun> = {};
    let stopped = false;
    try {
      // Connect and warm every library up while all nodes answer.
      for (const lib of ctx.libraries) {
        const client = await lib.open(ctx.urls, settings);
        opened.push({ lib, client });
        for (let i = 0; i < 20; i++) await (await client.acquire(`bench:b5:${lib.id}`)).release();
      }
      ctx.nodes.stop(STOPPED_NODE);
      stopped = true;
      for (const { lib, client } of opened) {
        ctx.log(`B5 ${lib.label}: up to ${ops} ops or ${budgetSeconds} s with node ${STOPPED_NODE} stopped`);
        measured[lib.id] = await runStopped(client, `bench:b5:${lib.id}`, ctx);
      }
    } finally {
      if (stopped) ctx.nodes.resume(STOPPED_NODE);
      // Ops left hanging on the stopped node finish now; give them a bounded time.
      await within(Promise.allSettled(Object.values(measured).map((m) => m.pending)), 15_000);
      await Promise.all(opened.map(({ client }) => client.close()));
    }

    const cells = (pick: (r: StoppedRun) => number, stalledOn: 'acquire' | 'release') => {
      const out: Record<string, Cell> = {};
      for (const [id, r] of Object.entries(measured)) {
        if (r.stalled === stalledOn)
          out[id] = { note: `stalls (> ${stallMs / 1000} s, until the node resumes)` };
        else if (r.ops === 0) out[id] = { note: 'no op completed' };
        else out[id] = r.budgetHit || r.ops < ops ? { value: pick(r), note: `[n=${r.ops}]` } : pick(r);
      }
      return out;
    };
    const targets: TargetCheck[] = [];
    const ours = measured.ours;
    if (ours) {
      targets.push({
        text: `our p99 acquire <= nodeTimeout + 5 ms (${nodeTimeout + 5} ms)`,
        met: ours.ops > 0 && !ours.stalled && ours.acquire.p99 <= nodeTimeout + 5,
        detail: `ours p99 ${ours.acquire.p99.toFixed(3)} ms over ${ours.ops} ops`,
      });
    }
    const notes = [
      `node ${STOPPED_NODE} of ${ctx.nodes.count} SIGSTOPped (connections stay open, nothing answers); ours with nodeTimeout ${nodeTimeout} ms, ` +
        `peers with their defaults (redlock-universal: 5 s per-command timeout; redlock@5, redis-semaphore: none). ` +
        `Each library gets up to ${ops} ops or ${budgetSeconds} s; [n=...] marks a run the budget cut short.`,
    ];
    for (const [id, r] of Object.entries(measured)) {
      if (r.errors > 0) notes.push(`${id}: ${r.errors} acquires failed`);
      if (r.stalled)
        notes.push(
          `${id}: ${r.stalled === 'acquire' ? 'an' : 'a'} ${r.stalled} did not settle within ${stallMs} ms while the node was stopped`,
        );
    }
    return {
      id: 'B5',
      title: this.title,
      rows: [
        { metric: 'acquire p50', unit: 'ms', better: 'lower', cells: cells((r) => r.acquire.p50, 'acquire') },
        { metric: 'acquire p99', unit: 'ms', better: 'lower', cells: cells((r) => r.acquire.p99, 'acquire') },
        { metric: 'release p50', unit: 'ms', better: 'lower', cells: cells((r) => r.release.p50, 'release') },
      ],
      targets,
      notes,
      details: {
        stoppedNode: STOPPED_NODE,
        nodeTimeout,
        ops,
        budgetSeconds,
        libraries: Object.fromEntries(
          Object.entries(measured).map(([id, r]) => [
            id,
            {
              acquire: rounded(r.acquire),
              release: rounded(r.release),
              ops: r.ops,
              errors: r.errors,
              stalled: r.stalled ?? null,
              budgetHit: r.budgetHit,
            },
          ]),
        ),
      },
    };
  },
};
