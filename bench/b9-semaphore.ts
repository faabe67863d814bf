import { Redis } from 'ioredis';
import { Redlock as OurRedlock } from 'nest-quorum-lock';
import { RedlockMultiSemaphore, RedlockSemaphore } from 'redis-semaphore';
import type { HeldHandle } from './libraries.js';
import { costRows, medianCost, perCycle, startSlice, type CycleCost, type MedianCost } from './meter.js';
import type { BenchContext, BenchResult, Benchmark, Cell } from './report.js';
import { interleave } from './rounds.js';
import { median, now, rounded, settle, sleep, summarise, within } from './stats.js';

/** One client of a semaphore implementation: its own connections to every node. */
interface SemaphoreClient {
  acquire(key: string): Promise<HeldHandle>;
  close(): Promise<void>;
}

/** A column of B9: one semaphore implementation. */
interface Contestant {
  readonly id: string;
  readonly label: string;
  /** How it waits for a permit (printed with the results). */
  readonly waiting: string;
  open(urls: readonly string[]): Promise<SemaphoreClient>;
}

interface B9Settings {
  readonly ttl: number;
  readonly wait: number;
  readonly nodeTimeout: number;
  readonly permits: number;
}

async function ioredisClients(urls: readonly string[]): Promise<Redis[]> {
  const clients = urls.map((url) => new Redis(url));
  for (const c of clients) c.on('error', () => undefined);
  await Promise.all(clients.map((c) => c.ping()));
  return clients;
}

/**
 * The contestants of B9 for the selected libraries: ours (`permits`), and for redis-semaphore both
 * of its quorum semaphores, `RedlockSemaphore` and `RedlockMultiSemaphore` taking 1 of the permits
 * (both a count of holders per node, admitted on a majority), each with its defaults except the
 * lease and the wait budget, one object per acquisition as request handlers create them.
 */
function contestants(selected: readonly string[], s: B9Settings): Contestant[] {
  const out: Contestant[] = [];
  if (selected.includes('ours')) {
    out.push({
      id: 'ours',
      label: 'ours',
      waiting: `wait ${s.wait} ms: one FIFO queue per key on every node; a release hands its slot to the first waiter`,
      async open(urls) {
        const engine = new OurRedlock({
          nodes: [...urls],
          ttl: s.ttl,
          wait: s.wait,
          nodeTimeout: s.nodeTimeout,
        });
        await engine.connect();
        return {
          acquire: (key) => engine.acquire(key, { permits: s.permits }),
          close: async () => {
            await within(engine.close(), 5_000);
          },
        };
      },
    });
  }
  if (selected.includes('semaphore')) {
    const peer = (id: string, label: string, make: (clients: Redis[], key: string) => RedlockSemaphore) => ({
      id,
      label,
      waiting: `default 10 ms polling, acquireTimeout ${s.wait} ms`,
      async open(urls: readonly string[]): Promise<SemaphoreClient> {
        const clients = await ioredisClients(urls);
        return {
          async acquire(key: string) {
            const semaphore = make(clients, key);
            await semaphore.acquire();
            return { release: () => semaphore.release() };
          },
          close: async () => {
            for (const c of clients) c.disconnect();
          },
        };
      },
    });
    const options = { lockTimeout: s.ttl, acquireTimeout: s.wait };
    out.push(
      peer(
        'semaphore',
        'redis-semaphore',
        (clients, key) => new RedlockSemaphore(clients, key, s.permits, options),
      ),
      peer(
        'semaphore-multi',
        'redis-semaphore (RedlockMultiSemaphore)',
        (clients, key) => new RedlockMultiSemaphore(clients, key, s.permits, 1, options),
      ),
    );
  }
  return out;
}

/** One round (slice) of one contestant. */
interface Round {
  readonly grants: number;
  readonly seconds: number;
  readonly waits: number[];
  readonly maxHolders: number;
  readonly gaveUp: number;
  readonly grantsPerClient: number[];
  readonly cost: CycleCost;
}

/**
 * `clients` loop for `seconds`: acquire a permit, hold it `holdMs` (a timer), release, pause
 * `pauseMs`, ask again. Holders are counted in the process (every client runs here): from the
 * grant until release is called.
 */
async function contend(
  ctx: BenchContext,
  c: Contestant,
  clients: readonly SemaphoreClient[],
  seconds: number,
): Promise<Round> {
  const { holdMs, pauseMs } = ctx.config.b9;
  const key = `bench:b9:${c.id}`;
  const waits: number[] = [];
  const grantsPerClient = clients.map(() => 0);
  let holders = 0;
  let maxHolders = 0;
  let gaveUp = 0;
  const stop = await startSlice(ctx.nodes);
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    clients.map(async (client, index) => {
      while (now() < end) {
        const requested = now();
        let held;
        try {
          held = await client.acquire(key);
        } catch {
          gaveUp++;
          continue;
        }
        waits.push(now() - requested);
        grantsPerClient[index]!++;
        maxHolders = Math.max(maxHolders, ++holders);
        await sleep(holdMs);
        holders--;
        await held.release();
        await sleep(pauseMs);
      }
    }),
  );
  const elapsed = (now() - start) / 1000;
  const cost = await stop();
  return {
    grants: waits.length,
    seconds: elapsed,
    waits,
    maxHolders,
    gaveUp,
    grantsPerClient,
    cost: perCycle(cost, waits.length),
  };
}

interface Figures {
  readonly throughput: number;
  readonly waitP50: number;
  readonly waitP99: number;
  readonly maxHolders: number;
  readonly gaveUp: number;
  readonly grants: number;
  readonly grantsPerClient: readonly number[];
  readonly cost: MedianCost;
}

function summariseRounds(rounds: readonly Round[]): Figures {
  return {
    throughput: median(rounds.map((r) => r.grants / r.seconds)),
    waitP50: median(rounds.map((r) => summarise(r.waits).p50)),
    waitP99: summarise(rounds.flatMap((r) => r.waits)).p99,
    maxHolders: Math.max(...rounds.map((r) => r.maxHolders)),
    gaveUp: rounds.reduce((sum, r) => sum + r.gaveUp, 0),
    grants: rounds.reduce((sum, r) => sum + r.grants, 0),
    grantsPerClient: rounds[0]!.grantsPerClient.map((_, i) =>
      rounds.reduce((sum, r) => sum + r.grantsPerClient[i]!, 0),
    ),
    cost: medianCost(rounds.map((r) => r.cost)),
  };
}

export const b9: Benchmark = {
  id: 'B9',
  title: 'semaphore: 8 permits, 32 clients on one key (acquire, 2 ms hold, release)',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const { clients: count, permits, seconds, holdMs, pauseMs } = ctx.config.b9;
    const rounds = ctx.config.rounds;
    const slice = seconds / rounds;
    const settings = {
      ttl: ctx.config.ttl,
      wait: ctx.config.wait,
      nodeTimeout: ctx.config.nodeTimeout,
      permits,
    };
    const all = contestants(
      ctx.libraries.map((l) => l.id),
      settings,
    );
    if (all.length === 0) throw new Error('B9 runs ours and redis-semaphore: BENCH_LIBS names neither');
    const opened = new Map<string, SemaphoreClient[]>();
    const perContestant = new Map<string, Round[]>();
    try {
      for (const c of all) {
        const clients: SemaphoreClient[] = [];
        opened.set(c.id, clients);
        for (let i = 0; i < count; i++) clients.push(await c.open(ctx.urls));
        // Warm-up: each client takes a permit once (connections, script cache).
        for (const client of clients) await (await client.acquire(`bench:b9:${c.id}`)).release();
        perContestant.set(c.id, []);
      }
      ctx.log(
        `B9: ${count} clients per semaphore, ${permits} permits on one key, ${seconds} s each in ${rounds} interleaved rounds`,
      );
      await interleave(all, rounds, async (c) => {
        await settle();
        perContestant.get(c.id)!.push(await contend(ctx, c, opened.get(c.id)!, slice));
      });
    } finally {
      await Promise.all([...opened.values()].flat().map((client) => client.close()));
    }

    const measured = new Map([...perContestant].map(([id, r]) => [id, summariseRounds(r)]));
    const cells = (pick: (f: Figures) => number) => {
      const out: Record<string, Cell> = {};
      for (const [id, f] of measured) out[id] = pick(f);
      return out;
    };
    const notes = [
      `ratios in B9 are to ours; throughput, wait p50 and costs are medians of the ${rounds} rounds of ${slice} s, ` +
        'wait p99 over all grants, max holders the most seen at once in any round (counted in the bench ' +
        'process from the grant until release is called)',
      `${count} clients per semaphore, each with its own connections; hold ${holdMs} ms (a timer), pause ${pauseMs} ms. ` +
        all.map((c) => `${c.label}: ${c.waiting}`).join('; '),
    ];
    for (const c of all) {
      const f = measured.get(c.id)!;
      if (f.gaveUp > 0) notes.push(`${c.label}: ${f.gaveUp} acquires gave up within the wait budget`);
      if (f.maxHolders > permits)
        notes.push(`${c.label}: ${f.maxHolders} holders at once with ${permits} permits (broken!)`);
    }
    return {
      id: 'B9',
      title: this.title,
      reference: 'ours',
      columns: all.map((c) => ({ id: c.id, label: c.label })),
      rows: [
        {
          metric: 'throughput',
          unit: 'grants/s',
          better: 'higher',
          digits: 0,
          cells: cells((f) => f.throughput),
        },
        { metric: 'acquire p50', unit: 'ms', better: 'lower', digits: 2, cells: cells((f) => f.waitP50) },
        { metric: 'acquire p99', unit: 'ms', better: 'lower', digits: 2, cells: cells((f) => f.waitP99) },
        ...costRows('per grant', cells),
        {
          metric: `max holders (${permits} permits)`,
          unit: 'count',
          better: 'lower',
          digits: 0,
          ratio: false,
          cells: cells((f) => f.maxHolders),
        },
        {
          metric: 'grants/client min',
          unit: 'count',
          better: 'higher',
          digits: 0,
          cells: cells((f) => Math.min(...f.grantsPerClient)),
        },
      ],
      targets: [
        {
          text: `no more than ${permits} holders at once (ours)`,
          met: (measured.get('ours')?.maxHolders ?? 0) <= permits,
          detail: all.map((c) => `${c.label} ${measured.get(c.id)!.maxHolders}`).join(', '),
        },
      ],
      notes,
      details: {
        clients: count,
        permits,
        seconds,
        rounds,
        holdMs,
        pauseMs,
        contestants: Object.fromEntries(
          [...perContestant].map(([id, r]) => [
            id,
            {
              ...measured.get(id),
              wait: rounded(summarise(r.flatMap((x) => x.waits))),
              perRound: r.map((x) => ({
                grants: x.grants,
                seconds: x.seconds,
                maxHolders: x.maxHolders,
                waitP50: summarise(x.waits).p50,
                ...x.cost,
              })),
            },
          ]),
        ),
      },
    };
  },
};
