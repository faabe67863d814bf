import 'reflect-metadata';
import { Inject, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockModule } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { PartnerApi, ReportJobs } from '../../../docs/examples/semaphores.js';
import { PriceCatalog } from '../../../docs/examples/read-write-locks.js';
import { sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';
import { inLine } from '../../support/waiting-line.js';

/*
 * The decorator examples of the README and docs/semaphores.md / docs/read-write-locks.md, the very
 * classes those pages quote (docs/examples/), in three app instances on 3 real redis-server nodes.
 * Their collaborators (the report builder, the partner API, the price store) are the test's, and
 * record what ran at once across the instances.
 */

/** How many calls run at once across the instances, and the most seen. */
class Concurrency {
  now = 0;
  most = 0;
  runs = 0;
  async during<T>(ms: number, result: T): Promise<T> {
    this.most = Math.max(this.most, ++this.now);
    this.runs++;
    try {
      await sleep(ms);
      return result;
    } finally {
      this.now--;
    }
  }
}

// The examples' constructors take interfaces (no runtime token): name their one dependency here, as
// an app would with @Inject(TOKEN) on the parameter.
const REPORTS = Symbol('Reports');
const PARTNER = Symbol('Partner');
const PRICE_STORE = Symbol('PriceStore');
Inject(REPORTS)(ReportJobs, undefined, 0);
Inject(PARTNER)(PartnerApi, undefined, 0);
Inject(PRICE_STORE)(PriceCatalog, undefined, 0);

const reports = new Concurrency();
const partner = new Concurrency();
const readers = new Concurrency();
const writers = new Concurrency();
/** Fencing tokens the price store saw, in the order it saw them, with the mode. */
const priceTokens: Array<{ op: 'read' | 'rebuild'; token: number; readersAtOnce: number }> = [];

describe('the README / docs decorator examples for semaphores and read-write locks, on real nodes', () => {
  let redis: RedisNodes;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    for (let i = 0; i < 3; i++) {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false })],
        providers: [
          ReportJobs,
          PartnerApi,
          PriceCatalog,
          { provide: REPORTS, useValue: { buildAll: () => reports.during(300, undefined) } },
          {
            provide: PARTNER,
            useValue: { post: (_body: unknown, fence: number) => partner.during(40, fence) },
          },
          {
            provide: PRICE_STORE,
            useValue: {
              read: async (_sku: string, fence: number) => {
                if (writers.now > 0) throw new Error('a read ran beside a rebuild');
                priceTokens.push({ op: 'read', token: fence, readersAtOnce: readers.now + 1 });
                return readers.during(60, 42);
              },
              rebuild: async (fence: number) => {
                if (readers.now > 0 || writers.now > 0)
                  throw new Error('a rebuild ran beside another holder');
                priceTokens.push({ op: 'rebuild', token: fence, readersAtOnce: 0 });
                await writers.during(40, undefined);
              },
            },
          },
        ],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
    }
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.close();
  });

  test("ReportJobs (the README's cron example): every instance fires, at most two build at once, the rest skip", async () => {
    // The cron's tick, as every instance's scheduler fires it: here two ticks on three instances.
    for (let tick = 0; tick < 2; tick++) {
      const results = await Promise.all(apps.map((app) => app.get(ReportJobs).build()));
      expect(results).toEqual([undefined, undefined, undefined]); // a skipped tick is not an error
    }
    expect(reports.most).toBe(2);
    expect(reports.runs).toBe(4); // 2 per tick: the third instance skipped each tick
  });

  test('PartnerApi: 12 calls from three instances, at most 3 in flight, all served in turn with tokens', async () => {
    const calls = Array.from({ length: 12 }, (_, i) => apps[i % 3]!.get(PartnerApi).call({ i }));
    const tokens = await Promise.all(calls);
    expect(partner.runs).toBe(12);
    expect(partner.most).toBe(3);
    for (const token of tokens) expect(Number.isSafeInteger(token) && token > 0).toBe(true);
  });

  test('PriceCatalog: readers share the catalog, a rebuild excludes them, tokens place reads between writes', async () => {
    const catalog = (i: number) => apps[i % 3]!.get(PriceCatalog);
    const first = Array.from({ length: 6 }, (_, i) => catalog(i).price(`sku-${i}`));
    const reads = () => priceTokens.filter((t) => t.op === 'read').length;
    expect(await eventually(reads, 6)).toBe(6); // the first readers all got in
    const rebuild = catalog(0).rebuild(); // queues behind the readers; later readers queue behind it
    // In line on every node behind the readers still reading, or running if they were done.
    const inLineOrRunning = async () =>
      priceTokens.some((t) => t.op === 'rebuild') ||
      (await inLine(redis, 'price-catalog')).every((n) => n === 1);
    expect(await eventually(inLineOrRunning, true)).toBe(true);
    const later = Array.from({ length: 6 }, (_, i) => catalog(i + 1).price(`sku-late-${i}`));
    expect(await Promise.all([...first, ...later])).toEqual(new Array(12).fill(42));
    await rebuild;
    expect(readers.most).toBeGreaterThan(1); // readers shared the key
    const rebuildAt = priceTokens.findIndex((t) => t.op === 'rebuild');
    expect(rebuildAt).toBeGreaterThan(0);
    // The later readers came after the rebuild, with its token or above; the first ones below it.
    const before = priceTokens.slice(0, rebuildAt);
    const after = priceTokens.slice(rebuildAt + 1);
    const written = priceTokens[rebuildAt]!.token;
    expect(before.map((t) => t.op)).toEqual(new Array(6).fill('read'));
    expect(after.map((t) => t.op)).toEqual(new Array(6).fill('read'));
    for (const t of before) expect(t.token).toBeLessThan(written);
    for (const t of after) expect(t.token).toBeGreaterThanOrEqual(written);
  });
});
