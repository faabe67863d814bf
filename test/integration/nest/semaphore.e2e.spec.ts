import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService, LockSignal, RedlockModule } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { sleep } from '../../support/cluster.js';

/*
 * The README's semaphore examples (docs/semaphores.md), running on real nodes: several app
 * instances (one Nest app each) share the permits.
 */

/** What every instance reports into (one process: the test reads the histories). */
const seen = { running: 0, most: 0, runs: 0 };

// --- README example: a cron job that at most 2 instances run at once ---
@Injectable()
class ReportJobs {
  // Every instance's cron fires at once: two of them run, the others skip this tick. The short wait
  // settles a split vote (instances that each won a minority of nodes, with permits still free).
  @DistributedLock('nightly-reports', { permits: 2, wait: 100, onBusy: 'skip', holdAtLeast: 1000 })
  async build(): Promise<void> {
    seen.most = Math.max(seen.most, ++seen.running);
    seen.runs++;
    await sleep(50);
    seen.running--;
  }
}

// --- README example: at most 3 calls in flight to a rate-limited API, across instances ---
@Injectable()
class PartnerApi {
  /** Calls in flight across the instances, and the most seen. */
  static now = 0;
  static global = 0;

  @DistributedLock('partner-api', { permits: 3, wait: 10_000 })
  async call(@FencingToken() token?: number, @LockSignal() signal?: AbortSignal): Promise<number> {
    PartnerApi.global = Math.max(PartnerApi.global, ++PartnerApi.now);
    if (signal!.aborted) throw new Error('lost');
    await sleep(30);
    PartnerApi.now--;
    return token!;
  }
}

describe('@DistributedLock with permits on real nodes (the README examples)', () => {
  let redis: RedisNodes;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    for (let i = 0; i < 4; i++) {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false })],
        providers: [ReportJobs, PartnerApi],
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

  test('the cron example: 4 instances fire at once, 2 run, 2 skip', async () => {
    await Promise.all(apps.map((app) => app.get(ReportJobs).build()));
    expect(seen.runs).toBe(2);
    expect(seen.most).toBe(2);
    // holdAtLeast: the permits stay taken until 1 s after the grants, so a late tick skips too.
    await apps[0]!.get(ReportJobs).build();
    expect(seen.runs).toBe(2);
    await sleep(1050);
    await apps[0]!.get(ReportJobs).build();
    expect(seen.runs).toBe(3);
  });

  test('the rate-limit example: 4 instances x 6 calls, never more than 3 in flight, every call served', async () => {
    const tokens = await Promise.all(
      apps.flatMap((app) => Array.from({ length: 6 }, () => app.get(PartnerApi).call())),
    );
    console.log(`@DistributedLock permits 3: ${tokens.length} calls, at most ${PartnerApi.global} in flight`);
    expect(tokens).toHaveLength(24);
    expect(PartnerApi.global).toBe(3);
    // The permits and the LockService handle.
    const lock = await apps[0]!.get(LockService).acquire('partner-api', { permits: 3 });
    expect([0, 1, 2]).toContain(lock.permit);
    await lock.release();
  });
});
