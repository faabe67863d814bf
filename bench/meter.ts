import type { RedisNodes } from 'nest-quorum-lock/testing';
import type { Cell, Row } from './report.js';
import { median, now } from './stats.js';

/**
 * What one measured slice of a benchmark cost: the bench process (every library runs in it) and
 * the redis-server nodes, summed over all nodes.
 */
export interface SliceCost {
  /** CPU of the bench process (user + system, all threads: GC and libuv included), µs. */
  readonly nodeCpuUs: number;
  /** CPU of all redis-server processes together (INFO cpu: used_cpu_user + used_cpu_sys), µs. */
  readonly redisCpuUs: number;
  /**
   * Commands executed by all nodes (INFO commandstats calls). Commands a Lua script runs through
   * `redis.call` count as well as the EVALSHA itself, so a script that bumps a counter shows up.
   */
  readonly commands: number;
  /** Wall-clock time of the slice, ms. */
  readonly wallMs: number;
}

/** The same costs divided by the cycles (acquire + release, or grants) of the slice. */
export interface CycleCost {
  readonly nodeCpuUs: number;
  readonly redisCpuUs: number;
  readonly commands: number;
}

/** One node's cumulative counters. */
interface NodeCounters {
  readonly cpuUs: number;
  readonly calls: number;
}

/**
 * The meter's own INFO calls: left out of the command count, so that a slice counts only what the
 * library sent. Their CPU stays in `redisCpuUs` (a few tens of µs per slice, under 0.1 µs per
 * cycle for the op counts used here).
 */
const METER_COMMANDS = new Set(['info']);

/** Parses `INFO cpu commandstats` (Redis 7 accepts several sections in one call). */
export function parseCounters(info: string): NodeCounters {
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!METER_COMMANDS.has(m[1]!)) calls += Number(m[2]);
  }
  // Seconds with 6 decimals; getrusage() sums the exact run time of every thread, so the total
  // is precise even where the user/system split is estimated from ticks.
  const cpuUs = (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
  return { cpuUs, calls };
}

function readCounters(nodes: RedisNodes): Promise<NodeCounters[]> {
  // Through RedisNodes' own inspection clients: no library's connection carries a meter command.
  return Promise.all(
    nodes.urls.map(async (_, i) =>
      parseCounters(String(await nodes.client(i).call('INFO', 'cpu', 'commandstats'))),
    ),
  );
}

/**
 * Starts measuring a slice; call the returned function when the slice ends. The node counters are
 * read before the bench process's CPU clock starts and after it stops, so the meter's own INFO
 * round trips are not charged to the library as Node CPU.
 */
export async function startSlice(nodes: RedisNodes): Promise<() => Promise<SliceCost>> {
  const before = await readCounters(nodes);
  const cpu = process.cpuUsage();
  const start = now();
  return async () => {
    const used = process.cpuUsage(cpu);
    const wallMs = now() - start;
    const after = await readCounters(nodes);
    const sum = (pick: (c: NodeCounters) => number) =>
      after.reduce((total, a, i) => total + pick(a) - pick(before[i]!), 0);
    return {
      nodeCpuUs: used.user + used.system,
      redisCpuUs: sum((c) => c.cpuUs),
      commands: sum((c) => c.calls),
      wallMs,
    };
  };
}

/** A slice's cost per cycle. NaN when the slice ran no cycle. */
export function perCycle(cost: SliceCost, cycles: number): CycleCost {
  const per = (x: number) => (cycles > 0 ? x / cycles : NaN);
  return { nodeCpuUs: per(cost.nodeCpuUs), redisCpuUs: per(cost.redisCpuUs), commands: per(cost.commands) };
}

/** Median-of-rounds costs per cycle, with Node + Redis CPU as one more figure. */
export type MedianCost = CycleCost & { readonly totalCpuUs: number };

/** The per-round costs summarised as the median of rounds, each figure on its own. */
export function medianCost(rounds: readonly CycleCost[]): MedianCost {
  return {
    nodeCpuUs: median(rounds.map((r) => r.nodeCpuUs)),
    redisCpuUs: median(rounds.map((r) => r.redisCpuUs)),
    commands: median(rounds.map((r) => r.commands)),
    totalCpuUs: median(rounds.map((r) => r.nodeCpuUs + r.redisCpuUs)),
  };
}

/**
 * The cost rows shared by B1, B2, B3 and B8: Node CPU, Redis CPU (all nodes), their sum, and the
 * Redis commands, each per cycle and each the median of the rounds.
 */
export function costRows(
  per: string,
  cells: (pick: (f: { cost: MedianCost }) => number) => Record<string, Cell>,
): Row[] {
  return [
    {
      metric: `Node CPU ${per}`,
      unit: 'us',
      better: 'lower',
      digits: 0,
      cells: cells((f) => f.cost.nodeCpuUs),
    },
    {
      metric: `Redis CPU ${per}`,
      unit: 'us',
      better: 'lower',
      digits: 0,
      cells: cells((f) => f.cost.redisCpuUs),
    },
    {
      metric: `Node + Redis CPU ${per}`,
      unit: 'us',
      better: 'lower',
      digits: 0,
      cells: cells((f) => f.cost.totalCpuUs),
    },
    {
      metric: `Redis commands ${per}`,
      unit: 'count',
      better: 'lower',
      digits: 1,
      cells: cells((f) => f.cost.commands),
    },
  ];
}
