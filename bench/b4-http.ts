import 'reflect-metadata';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import autocannon from 'autocannon';
import { DistributedLock, FencingToken, LockService, RedlockModule } from 'nest-quorum-lock';
import type { BenchContext, BenchResult, Benchmark, Row, TargetCheck } from './report.js';
import { interleave } from './rounds.js';
import { describePaired, median, pairedRatio } from './stats.js';

/** Every request locks its own key: B4 measures the decorator's cost, not contention. */
let sequence = 0;
const nextKey = () => `bench:b4:${sequence++}`;

@Controller()
class B4Controller {
  constructor(private readonly locks: LockService) {}

  @Get('plain')
  async plain(): Promise<string> {
    return 'ok';
  }

  @Get('decorated')
  @DistributedLock(() => nextKey())
  async decorated(@FencingToken() token?: number): Promise<string> {
    return token ? 'ok' : 'no token';
  }

  @Get('manual')
  manual(): Promise<string> {
    return this.locks.using(nextKey(), (lock) => (lock.fencingToken ? 'ok' : 'no token'));
  }
}

async function startApp(
  urls: readonly string[],
  nodeTimeout: number,
): Promise<{ app: INestApplication; url: string }> {
  @Module({
    imports: [RedlockModule.forRoot({ nodes: [...urls], nodeTimeout })],
    controllers: [B4Controller],
  })
  class B4Module {}
  const app = await NestFactory.create(B4Module, { logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

interface Load {
  readonly rps: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
}

async function load(url: string, seconds: number): Promise<Load> {
  const result = await autocannon({ url, connections: 32, duration: seconds });
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/** The three routes, in the order of the first round. */
const ROUTES = ['plain', 'decorated', 'manual'] as const;
type Route = (typeof ROUTES)[number];

/** One route's rounds: medians of req/s and p99, errors and non-2xx summed. */
function summariseLoads(loads: readonly Load[]): Load {
  return {
    rps: median(loads.map((l) => l.rps)),
    p99: median(loads.map((l) => l.p99)),
    errors: loads.reduce((sum, l) => sum + l.errors, 0),
    non2xx: loads.reduce((sum, l) => sum + l.non2xx, 0),
  };
}

/** Whether @anchan828/nest-redlock can be loaded beside NestJS 12 (its ESM build cannot). */
async function anchanStatus(): Promise<string> {
  try {
    await import('@anchan828/nest-redlock' as string);
    return 'loads, but is not wired into this benchmark';
  } catch (err) {
    return `does not load beside NestJS 12: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** A row of requests per second (only our library runs here). */
function rps(metric: string, load: Load): Row {
  return { metric, unit: 'req/s', better: 'higher', digits: 0, cells: { ours: load.rps } };
}

/** A row of p99 latency. */
function p99(metric: string, load: Load): Row {
  return { metric, unit: 'ms', better: 'lower', digits: 1, cells: { ours: load.p99 } };
}

export const b4: Benchmark = {
  id: 'B4',
  title: 'HTTP: the same route without a lock, with @DistributedLock, and with LockService.using by hand',
  async run(ctx: BenchContext): Promise<BenchResult> {
    const seconds = Math.max(2, 10 * ctx.config.scale);
    const rounds = ctx.config.rounds;
    // Whole seconds per turn (autocannon's unit), at least one.
    const slice = Math.max(1, Math.round(seconds / rounds));
    const { app, url } = await startApp(ctx.urls, ctx.config.nodeTimeout);
    const perRoute: Record<Route, Load[]> = { plain: [], decorated: [], manual: [] };
    try {
      ctx.log(`B4: ${rounds} interleaved rounds of ${slice} s per route, 32 connections`);
      // The routes take turns, the first one rotating: the machine's drift and one route's
      // leftovers (garbage, warm caches) land on all three alike.
      await interleave(ROUTES, rounds, async (route) => {
        perRoute[route].push(await load(`${url}/${route}`, slice));
      });
    } finally {
      await app.close();
    }
    const runs = Object.fromEntries(ROUTES.map((r) => [r, summariseLoads(perRoute[r])])) as Record<
      Route,
      Load
    >;
    const { plain, decorated, manual } = runs;
    const anchan = await anchanStatus();
    const perRound = pairedRatio(
      perRoute.decorated.map((l) => l.rps),
      perRoute.manual.map((l) => l.rps),
    );
    const targets: TargetCheck[] = [
      {
        text: '@DistributedLock costs < 10% of requests/s against LockService.using by hand',
        met:
          decorated.rps >= 0.9 * manual.rps &&
          [decorated, manual, plain].every((r) => r.non2xx === 0 && r.errors === 0),
        detail:
          `decorated ${decorated.rps.toFixed(0)} req/s vs using() ${manual.rps.toFixed(0)} req/s ` +
          `(${((decorated.rps / manual.rps) * 100).toFixed(1)}%, medians of rounds; ${describePaired(perRound)}); ` +
          `non-2xx ${decorated.non2xx + manual.non2xx + plain.non2xx}, errors ${decorated.errors + manual.errors + plain.errors}`,
      },
    ];
    return {
      id: 'B4',
      title: this.title,
      rows: [
        rps('route with @DistributedLock', decorated),
        rps('same, LockService.using by hand', manual),
        rps('same route, no lock', plain),
        p99('route with @DistributedLock, p99', decorated),
        p99('no lock, p99', plain),
      ],
      targets,
      notes: [
        `autocannon, 32 connections, ${rounds} interleaved rounds of ${slice} s per route; req/s and p99 are ` +
          `medians of the rounds, errors and non-2xx summed; every request locks its own key (no contention).`,
        `@anchan828/nest-redlock ${anchan}.`,
      ],
      details: { runs, perRound: perRoute, anchan },
    };
  },
};
