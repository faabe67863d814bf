import 'reflect-metadata';
import { Inject, Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { firstValueFrom, lastValueFrom, Observable, toArray } from 'rxjs';
import {
  DistributedLock,
  LockNotAcquiredError,
  LockService,
  RedlockModule,
  type LockEvent,
} from '../../../lib/index.js';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';
import { OrderPayments } from '../../../docs/examples/cluster-voters.js';
import { PriceFeed, sharedTicks } from '../../../docs/examples/observables.js';
import { sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * docs/distributed-lock.md and the decorator example of docs/deploying.md (issue 40, items 1 and
 * 8), the very classes those pages quote (docs/examples/), on real redis-server nodes: a method
 * declared to return an Observable runs its body once per subscription, each under a lock of its
 * own; share() runs it once; a key template with literal braces locks a Redis Cluster hash tag.
 */

/** The price source the example streams from: records each run, its token, and overlaps. */
class Runs {
  calls = 0;
  running = 0;
  most = 0;
  tokens: number[] = [];
  /** When set, a run ends at the first tick after it resolves instead of after three ticks. */
  until: Promise<void> | undefined;
  stream(_sku: string, fence: number): Observable<number> {
    return new Observable<number>((subscriber) => {
      this.calls++;
      this.tokens.push(fence);
      this.most = Math.max(this.most, ++this.running);
      let i = 0;
      const until = this.until;
      let ended = false;
      void until?.then(() => (ended = true));
      const timer = setInterval(() => {
        subscriber.next(i++);
        if (until ? ended : i === 3) subscriber.complete();
      }, 20);
      return () => {
        clearInterval(timer);
        this.running--;
      };
    });
  }
}

const PRICES = Symbol('PriceSource');
Inject(PRICES)(PriceFeed, undefined, 0);

/** The docs' claim for `wait: 0`: a second subscription while the first holds is refused. */
@Injectable()
class FailFastFeed {
  constructor(@Inject(PRICES) private readonly prices: Runs) {}

  @DistributedLock('fail-fast-feed:{0}', { wait: 0 })
  ticks(sku: string): Observable<number> {
    return this.prices.stream(sku, 0);
  }
}

const increasing = (tokens: number[]) => tokens.every((t, i) => i === 0 || t > tokens[i - 1]!);

describe('docs/distributed-lock.md: Observables, one run per subscription (real nodes)', () => {
  let redis: RedisNodes;
  let app: INestApplication;
  const runs = new Runs();

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false })],
      providers: [PriceFeed, FailFastFeed, { provide: PRICES, useValue: runs }],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  beforeEach(() => Object.assign(runs, { calls: 0, running: 0, most: 0, tokens: [], until: undefined }));

  test('calling the method runs nothing and takes no lock; each subscription runs the body under a lock of its own', async () => {
    const feed = app.get(PriceFeed);
    const ticks = feed.ticks('sku-1'); // one call
    await sleep(50);
    expect(runs.calls).toBe(0);
    const probe = await app.get(LockService).tryAcquire('price-feed:sku-1');
    expect(probe).not.toBeNull(); // nothing holds the key before a subscription
    await probe!.release();

    expect(await lastValueFrom(ticks.pipe(toArray()))).toEqual([0, 1, 2]);
    expect(await lastValueFrom(ticks.pipe(toArray()))).toEqual([0, 1, 2]);
    expect(runs.calls).toBe(2); // the body ran once per subscription
    expect(increasing(runs.tokens)).toBe(true); // each under its own grant
  });

  test('two subscribers at once: the second waits for the first’s lock (never two runs at once)', async () => {
    const ticks = app.get(PriceFeed).ticks('sku-2');
    await Promise.all([lastValueFrom(ticks), lastValueFrom(ticks)]);
    expect(runs.calls).toBe(2);
    expect(runs.most).toBe(1);
    expect(increasing(runs.tokens)).toBe(true);
  });

  test('with wait: 0 the second subscription gets LockNotAcquiredError while the first holds', async () => {
    let end!: () => void;
    runs.until = new Promise<void>((resolve) => (end = resolve));
    const ticks = app.get(FailFastFeed).ticks('sku-3');
    const first = lastValueFrom(ticks);
    // The first subscription holds the lock once its body runs, until the test ends it.
    expect(await eventually(() => runs.calls, 1)).toBe(1);
    await expect(firstValueFrom(ticks)).rejects.toBeInstanceOf(LockNotAcquiredError);
    end();
    await first;
    expect(runs.calls).toBe(1);
  });

  test('sharedTicks: several subscribers, one run and one lock', async () => {
    const shared = sharedTicks(app.get(PriceFeed), 'sku-4');
    const [a, b] = await Promise.all([
      lastValueFrom(shared.pipe(toArray())),
      lastValueFrom(shared.pipe(toArray())),
    ]);
    expect([a, b]).toEqual([
      [0, 1, 2],
      [0, 1, 2],
    ]);
    expect(runs.calls).toBe(1);
  });
});

describe("docs/deploying.md: a decorator key with a hash tag ('{{order:{0}}}:items') on a Redis Cluster voter", () => {
  test('OrderPayments.ship locks {order:42}:items and {order:42}:payment in one slot of the cluster', async () => {
    const cluster = await RedisClusterNodes.start(3);
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: [{ cluster: cluster.startupNodes }], restartGuard: false })],
        providers: [OrderPayments],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      try {
        const acquired: LockEvent[] = [];
        const sub = app.get(LockService).events$.subscribe((e) => {
          if (e.type === 'acquired') acquired.push(e);
        });
        expect(await app.get(OrderPayments).ship('42')).toBe('order 42 shipped');
        sub.unsubscribe();
        expect(acquired.map((e) => e.resources)).toEqual([['{order:42}:items', '{order:42}:payment']]);
      } finally {
        await app.close();
      }
    } finally {
      await cluster.close();
    }
  });
});
