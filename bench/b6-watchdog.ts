import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redlock, type Lock } from 'nest-quorum-lock';
import { delta, serverCounters, type ServerCounters } from './nodes.js';
import type { BenchContext, BenchResult, Benchmark, TargetCheck } from './report.js';
import { forEachLimited, now, sleep } from './stats.js';

/** `gc()` from --expose-gc, or obtained at run time when node was started without the flag. */
function collector(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Heap after a full collection. `samples` > 1 takes the smallest of several spread over `spreadMs`,
 * so that a watchdog tick caught in flight (its rounds and promises are live) does not count.
 */
async function settledHeap(gc: () => void, samples = 1, spreadMs = 0): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(spreadMs / (samples - 1));
    gc();
    gc();
    least = Math.min(least, process.memoryUsage().heapUsed);
  }
  return least;
}

/** Locks whose signal aborted, i.e. lost (nothing has been released yet while this is counted). */
function countAborted(locks: readonly Lock[]): number {
  let n = 0;
  for (const l of locks) if (l.signal.aborted) n++;
  return n;
}

export const b6: Benchmark = {
  id: 'B6',
  title: 'many locks held at once under our watchdog',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { locks: count, seconds, ttl, concurrency } = ctx.config.b6;
    const tickMs = ttl / 3; // the watchdog's default period
    const gc = collector();
    const engine = new Redlock({
      nodes: [...ctx.urls],
      nodeTimeout: ctx.config.nodeTimeout,
      wait: ctx.config.wait,
    });
    const locks: Lock[] = [];
    const lostSamples: Array<{ atSecond: number; lost: number }> = [];
    let firstLoss: string | undefined;
    try {
      await engine.connect();
      // Warm up (scripts, JIT) on a throwaway key, so the heap baseline holds no first-use state.
      for (let i = 0; i < 50; i++) await (await engine.acquire(`bench:b6:warmup`, { ttl })).release();
      const heapBefore = await settledHeap(gc);
      const empty = await serverCounters(ctx.nodes);

      ctx.log(`B6 ours: acquiring ${count} locks (ttl ${ttl} ms, watchdog every ${tickMs} ms)`);
      const t0 = now();
      await forEachLimited(count, concurrency, async (i) => {
        locks[i] = await engine.acquire(`bench:b6:${i}`, {
          ttl,
          maxHold: (seconds + 60) * 1000,
          watchdog: true,
        });
      });
      const acquireSeconds = (now() - t0) / 1000;
      const heapHeld = await settledHeap(gc, 4, tickMs);

      ctx.log(`B6 ours: holding ${count} locks for ${seconds} s`);
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const cpuBefore = process.cpuUsage();
      const before: ServerCounters[] = await serverCounters(ctx.nodes);
      // Extension calls per node, counted where the engine sends them (server-side EVALSHA counts
      // would also include the releases of lost locks).
      let extendCalls = 0;
      for (const voter of engine.voters) {
        const extend = voter.extend.bind(voter);
        voter.extend = (batch) => {
          extendCalls++;
          return extend(batch);
        };
      }
      const holdStart = now();
      // Lock-ticks actually held: the denominator of "per lock per tick" (a lost lock stops ticking).
      let lockTicks = 0;
      let last = holdStart;
      let alive = count - countAborted(locks);
      const lostBeforeHold = count - alive;
      while (now() - holdStart < seconds * 1000) {
        await sleep(Math.min(1000, seconds * 1000 - (now() - holdStart)));
        const at = now();
        const lost = countAborted(locks);
        lockTicks += ((alive + (count - lost)) / 2) * ((at - last) / tickMs);
        alive = count - lost;
        last = at;
        lostSamples.push({ atSecond: Math.round((at - holdStart) / 100) / 10, lost });
        if (lost > 0 && firstLoss === undefined) {
          const reason = locks.find((l) => l.signal.aborted)?.signal.reason as unknown;
          firstLoss = reason instanceof Error ? reason.message : String(reason);
        }
      }
      const after = await serverCounters(ctx.nodes);
      const held = (now() - holdStart) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      loop.disable();
      const lost = countAborted(locks);

      const nodeCount = ctx.nodes.count;
      const ticks = (held * 1000) / tickMs;
      const commandsPerSecond = delta(before, after, (c) => c.commands) / held;
      const evalsPerNode = delta(before, after, (c) => c.calls.evalsha ?? 0) / nodeCount;
      const readsPerNode = delta(before, after, (c) => c.reads) / nodeCount;
      const roundTripsPerLockTick = lockTicks > 0 ? extendCalls / nodeCount / lockTicks : NaN;
      const readsPerLockTick = lockTicks > 0 ? readsPerNode / lockTicks : NaN;
      const bytesPerLock = (heapHeld - heapBefore) / count;
      const cpuShare = (cpu.user + cpu.system) / 1000 / (held * 1000);
      const redisBytesPerLock = delta(empty, before, (c) => c.usedMemory) / nodeCount / count;

      const targets: TargetCheck[] = [
        {
          text: 'no lock lost',
          met: lost === 0,
          detail: `${lost} of ${count} lost (${lostBeforeHold} while the others were still being acquired)${firstLoss ? `; first: ${firstLoss}` : ''}`,
        },
        {
          text: 'fewer round trips than one per lock per tick',
          met: roundTripsPerLockTick < 1,
          detail: `${roundTripsPerLockTick.toFixed(4)} extension calls per node per lock per tick (server side: ${readsPerLockTick.toFixed(3)} socket reads, incl. releases of lost locks)`,
        },
      ];
      const notes = [
        `${count} locks acquired in ${acquireSeconds.toFixed(1)} s (${concurrency} at a time), held ${held.toFixed(1)} s = ${ticks.toFixed(0)} ticks of ${tickMs} ms; ` +
          `heap per lock = (least heap after gc of 4 samples over one tick while held - heap before) / count, includes the bench's array slot (8 B).`,
        `round trips per lock per tick = extension script calls per node (counted at each voter's extend call) / lock-ticks held (a parallel ` +
          `call to all nodes counts once; lost locks stop counting); socket reads = INFO total_reads_processed per node / lock-ticks. ` +
          `Redis commands include those run inside Lua scripts (GET + PEXPIRE per lock extended).` +
          (lost > 0 ? ' Locks were lost, so heap per lock and commands/s describe a partly lost set.' : ''),
        `during the hold: node process CPU ${(cpuShare * 100).toFixed(0)}% of one core, event-loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, ` +
          `max ${(loop.max / 1e6).toFixed(1)} ms; Redis used_memory +${redisBytesPerLock.toFixed(0)} B per lock per node (lock key + fence counter).`,
      ];
      return {
        id: 'B6',
        title: `${this.title} (${count} locks, ttl ${ttl} ms, ${seconds} s)`,
        rows: [
          {
            metric: 'heap per held lock',
            unit: 'bytes',
            better: 'lower',
            digits: 0,
            cells: { ours: bytesPerLock },
          },
          {
            metric: 'Redis commands/s (all nodes)',
            unit: 'cmd/s',
            better: 'lower',
            digits: 0,
            cells: { ours: commandsPerSecond },
          },
          {
            metric: 'round trips per lock per tick',
            unit: 'rounds',
            better: 'lower',
            cells: { ours: roundTripsPerLockTick },
          },
          { metric: 'locks lost', unit: 'count', better: 'lower', digits: 0, cells: { ours: lost } },
        ],
        targets,
        notes,
        details: {
          locks: count,
          ttl,
          tickMs,
          heldSeconds: held,
          acquireSeconds,
          heapBefore,
          heapHeld,
          redisBytesPerLockPerNode: Math.round(redisBytesPerLock),
          bytesPerLock: Math.round(bytesPerLock),
          commandsPerSecond: Math.round(commandsPerSecond),
          evalshaPerNode: evalsPerNode,
          extendCallsPerNode: extendCalls / nodeCount,
          readsPerNode,
          lockTicks: Math.round(lockTicks),
          roundTripsPerLockTick,
          readsPerLockTick,
          lost,
          lostBeforeHold,
          firstLoss: firstLoss ?? null,
          lostSamples,
          cpuShareOfOneCore: Math.round(cpuShare * 1000) / 1000,
          eventLoopDelayMs: {
            p50: loop.percentile(50) / 1e6,
            p99: loop.percentile(99) / 1e6,
            max: loop.max / 1e6,
          },
        },
      };
    } finally {
      ctx.log(`B6 ours: releasing ${locks.length} locks`);
      await forEachLimited(locks.length, concurrency, async (i) => {
        await locks[i]?.release();
      });
      await engine.close();
    }
  },
};
