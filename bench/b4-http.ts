import 'reflect-metadata';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import autocannon from 'autocannon';
import { DistributedLock, FencingToken, LockService, RedlockModule } from 'nest-quorum-lock';
import type { BenchContext, BenchResult, Benchmark, Row, TargetCheck } from './report.js';

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
    const { app, url } = await startApp(ctx.urls, ctx.config.nodeTimeout);
    const runs: Record<string, Load> = {};
    try {
      for (const route of ['plain', 'decorated', 'manual', 'plain', 'decorated', 'manual']) {
        ctx.log(`B4 ${route}: ${seconds} s, 32 connections`);
        const measured = await load(`${url}/${route}`, seconds / 2);
        const before = runs[route];
        // Two alternating halves per route, averaged: outside load hits all three alike.
        runs[route] = before
          ? {
              rps: (before.rps + measured.rps) / 2,
              p99: Math.max(before.p99, measured.p99),
              errors: before.errors + measured.errors,
              non2xx: before.non2xx + measured.non2xx,
            }
          : measured;
      }
    } finally {
      await app.close();
    }
    const { plain, decorated, manual } = runs as Record<'plain' | 'decorated' | 'manual', Load>;
    const anchan = await anchanStatus();
    const targets: TargetCheck[] = [
      {
        text: 'B4: @DistributedLock costs < 10% of requests/s against LockService.using by hand',
        met:
          decorated.rps >= 0.9 * manual.rps &&
          [decorated, manual, plain].every((r) => r.non2xx === 0 && r.errors === 0),
        detail: `decorated ${decorated.rps.toFixed(0)} req/s vs using() ${manual.rps.toFixed(0)} req/s (${((decorated.rps / manual.rps) * 100).toFixed(1)}%); non-2xx ${decorated.non2xx + manual.non2xx + plain.non2xx}, errors ${decorated.errors + manual.errors + plain.errors}`,
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
        `B4: autocannon, 32 connections, ${seconds} s per route in two alternating halves; every request locks its own key (no contention).`,
        `B4: @anchan828/nest-redlock ${anchan}.`,
      ],
      details: { runs, anchan },
    };
  },
};
