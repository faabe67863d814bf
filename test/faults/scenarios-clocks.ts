/**
 * Clock scenarios (TESTING.md S20-S24, issue 26): wall clocks that step, of voters (the LD_PRELOAD
 * shim of test/support/clock-shim.ts on a redis-server) and of clients (the same shim on a worker
 * process), while the monotonic clock every history is written with stays shared and untouched.
 */
import { ClockFiles } from '../support/clock-shim.js';
import { pick, scenario, type ScenarioResult, type WorkerOptions } from './scenarios.js';

/** Grants per worker id, from a report's acquires. */
function grantsPerWorker(acquires: ReadonlyArray<{ worker: string; outcome: string }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const a of acquires)
    if (a.outcome === 'granted') counts.set(a.worker, (counts.get(a.worker) ?? 0) + 1);
  return counts;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  return n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
};

/** S23's processes: their ids and wall-clock offsets (ms). */
const S23_CLOCKS: ReadonlyArray<readonly [string, number]> = [
  ['behind-10s', -10_000],
  ['ahead-10s', 10_000],
  ['steady-1', 0],
  ['steady-2', 0],
];

/**
 * S23: four processes contend for one key for 8 s, one with its wall clock 10 s behind, one 10 s
 * ahead (the clock shim on the worker process). Each process's share must be within 1.5x of the
 * median. `clientClockTickets`: the control, with waiting tickets from each process's own wall
 * clock (as before issue 26): the process behind jumps the line, the one ahead starves.
 */
function skewedClients(id: string, title: string, clientClockTickets: boolean): Promise<ScenarioResult> {
  const clocks = new ClockFiles();
  for (const [name, offset] of S23_CLOCKS) clocks.set(name, offset);
  return scenario(id, title, { seedGuardMarker: true }, async (env) => {
    const options: WorkerOptions = {
      resource: 's23',
      lock: true,
      ttl: 1000,
      wait: 10_000,
      nodeTimeout: 100,
      holdMs: [1, 3],
      clientClockTickets,
    };
    const workers = S23_CLOCKS.map(([name]) =>
      env.spawn({ ...options, id: name }, { env: clocks.env(name) }),
    );
    await env.ready(workers);
    env.go(workers, pick(8000, 8000));
    await env.finish(workers, 40_000);
    return {
      resources: ['s23'],
      summarise: (r) => {
        const counts = grantsPerWorker(r.acquires);
        const shares = S23_CLOCKS.map(([name]) => counts.get(name) ?? 0);
        const mid = median(shares);
        const spread = Math.max(...shares.map((n) => Math.max(n / Math.max(mid, 1), mid / Math.max(n, 1))));
        return {
          figures: {
            ...Object.fromEntries(S23_CLOCKS.map(([name], i) => [name, shares[i]!])),
            medianGrants: mid,
            worstRatioToMedian: spread,
          },
          note:
            `grants per process (clock 10 s behind, 10 s ahead, two on time): ${shares.join(', ')}; ` +
            `worst ratio to the median ${spread.toFixed(2)}x` +
            (clientClockTickets
              ? ' (tickets from each client wall clock)'
              : " (tickets in the voters' time)"),
        };
      },
    };
  }).finally(() => clocks.close());
}

export const s23SkewedClients = () =>
  skewedClients('S23', 'client processes with wall clocks 10 s behind and 10 s ahead contend', false);
export const s23SkewedClientsControl = () =>
  skewedClients(
    'S23-control',
    "same, waiting tickets from each client's wall clock (as before): must be unfair",
    true,
  );
