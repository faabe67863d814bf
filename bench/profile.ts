/**
 * Profiles one library's uncontended cycle (B1's acquire + release of one key) on 5 fresh local
 * nodes:
 *
 * ```bash
 * npm run build && npx tsc -p tsconfig.bench.json
 * node bench/dist/profile.js ours 20000 --cpu /tmp/ours.cpuprofile
 * node bench/dist/profile.js ours-baseline 20000 --baseline /tmp/baseline/dist --cpu /tmp/old.cpuprofile
 * node bench/dist/profile.js ours 60000 --loops 64 --alloc /tmp/ours.heapprofile   # B2's shape
 * node bench/dist/profile-top.js /tmp/ours.cpuprofile 10
 * ```
 *
 * `--loops N` runs the cycles in N concurrent loops, each on its own key (B2's shape); without it,
 * one loop on one key (B1's). `--fresh` takes a never-used key on every cycle (B8's first grants).
 * `--cpu <file.cpuprofile>` profiles the measured cycles only (no start-up, no redis-server
 * spawning: what `--cpu-prof` would add). `--alloc <file.heapprofile>` samples allocations during
 * the measured cycles, garbage included (what `--heap-prof` leaves out: it keeps only what is
 * still alive), for when the CPU profile shows the garbage collector high: `profile-top.js` reads
 * that file too.
 * Only the library runs in this process (no other library, no table), so the profile holds its
 * cycle and what the runtime spends on it; nodes are started and stopped here, by pid.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { baselineLibrary, selectLibraries } from './libraries.js';
import { startNodes } from './nodes.js';
import { perCycle, startSlice } from './meter.js';
import { now, summarise } from './stats.js';

async function main(): Promise<void> {
  const [id = 'ours', countArg = '20000', ...rest] = process.argv.slice(2);
  const count = Number(countArg);
  const option = (name: string) => {
    const at = rest.indexOf(name);
    return at >= 0 ? rest[at + 1] : undefined;
  };
  const baselineDir = option('--baseline');
  const baseline = baselineDir ? await baselineLibrary(baselineDir) : undefined;
  const loops = Number(option('--loops') ?? 1);
  const allocFile = option('--alloc');
  const cpuFile = option('--cpu');
  const fresh = rest.includes('--fresh');
  const lib = selectLibraries([id], baseline).find((l) => l.id === id);
  if (!lib || !Number.isInteger(count) || count <= 0 || !Number.isInteger(loops) || loops <= 0) {
    throw new Error('usage: profile.js <library id> [cycles] [--loops N] [--fresh] [--baseline <dist dir>]');
  }
  const nodes = await startNodes(5);
  try {
    const client = await lib.open(nodes.urls, { ttl: 10_000, wait: 10_000, nodeTimeout: 100 });
    try {
      const keys = Array.from({ length: loops }, (_, i) => `bench:profile:${id}:${i}`);
      const latencies: number[] = [];
      let freshKeys = 0;
      /**
       * `cycles` acquire + release in `loops` concurrent loops, each on its own key (with
       * --fresh, a new one each time).
       */
      const run = async (cycles: number, record: boolean) => {
        let next = 0;
        await Promise.all(
          keys.map(async (key) => {
            while (next++ < cycles) {
              const t0 = now();
              await (await client.acquire(fresh ? `${key}:${freshKeys++}` : key)).release();
              if (record) latencies.push(now() - t0);
            }
          }),
        );
      };
      await run(1_000, false); // JIT warm-up, inside the profile but short
      const session = allocFile ? await startAllocationSampling() : undefined;
      const profiler = cpuFile ? await startCpuProfile() : undefined;
      const stop = await startSlice(nodes);
      const start = now();
      await run(count, true);
      const elapsed = now() - start;
      const cost = perCycle(await stop(), count);
      if (profiler && cpuFile) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(cpuFile, JSON.stringify(profile));
        profiler.disconnect();
      }
      if (session && allocFile) {
        const { profile } = await session.post('HeapProfiler.stopSampling');
        writeFileSync(allocFile, JSON.stringify(profile));
        session.disconnect();
      }
      console.log(
        `${lib.label}: ${count} cycles in ${loops} loop(s), ${Math.round((count / elapsed) * 1000)} cycles/s, ` +
          `p50 ${summarise(latencies).p50.toFixed(3)} ms; per cycle Node CPU ` +
          `${cost.nodeCpuUs.toFixed(0)} us, Redis CPU ${cost.redisCpuUs.toFixed(0)} us, ${cost.commands.toFixed(1)} commands`,
      );
    } finally {
      await client.close();
    }
  } finally {
    await nodes.close();
  }
}

/** Starts the CPU profiler (100 µs sampling) for the measured cycles only. */
async function startCpuProfile(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return session;
}

/** Samples every 4 KB allocated, keeping samples of objects the GC has collected since. */
async function startAllocationSampling(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return session;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
