import 'reflect-metadata';
import http from 'node:http';
import { Controller, Get, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DistributedLock,
  EngineClosedError,
  FencingToken,
  LockService,
  LockSignal,
  Redlock,
  RedlockModule,
} from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, sleep } from '../../support/cluster.js';

/*
 * Shutdown of a NestJS app (issue 36, item 1): `app.close()` while locked work runs. Nest closes the
 * HTTP server first, so a request in flight finishes (its nested locks join); then the module's
 * onApplicationShutdown drains: a cron job or a queue worker keeps its lock while it finishes, told
 * to stop through its signal (EngineClosedError), and its next call is refused; the locks are
 * released once the work has ended.
 */

/** What the app's work did, in order, with the lock state another engine saw at each step. */
const journal: string[] = [];

@Injectable()
class Reports {
  stopReason: unknown;

  /** A scheduled job (as `@Cron` would call it): works in steps until told to stop, then wraps up. */
  @DistributedLock('nightly-report', { ttl: 500 })
  async nightly(@LockSignal() signal?: AbortSignal): Promise<void> {
    journal.push('report: started');
    while (!signal!.aborted) await sleep(20);
    this.stopReason = signal!.reason;
    await sleep(800); // wrapping up, longer than the lease: the watchdog extends it meanwhile
    journal.push('report: wrapped up');
  }
}

@Injectable()
class Worker {
  refusal: unknown;
  private loop: Promise<void> | undefined;

  /** A queue worker's job: 300 ms of work under the job's lock. */
  @DistributedLock('job:{0}', { ttl: 400 })
  async handle(id: number, @FencingToken() token?: number): Promise<void> {
    journal.push(`job ${id}: started with token ${token}`);
    await sleep(300);
    journal.push(`job ${id}: done`);
  }

  start(): void {
    this.loop = (async () => {
      for (let id = 1; ; id++) {
        try {
          await this.handle(id);
        } catch (err) {
          this.refusal = err;
          journal.push(`job ${id}: refused`);
          return;
        }
      }
    })();
  }

  stopped(): Promise<void> | undefined {
    return this.loop;
  }
}

@Injectable()
class Ticks {
  ran = 0;

  /** A scheduled job that skips when busy, waiting a while for the lock first. */
  @DistributedLock('busy-tick', { onBusy: 'skip', wait: 5000 })
  async tick(): Promise<void> {
    this.ran++;
  }
}

@Controller()
class SlowController {
  constructor(private readonly locks: LockService) {}

  @Get('slow')
  @DistributedLock('account', { ttl: 500 })
  async slow(@FencingToken() token?: number): Promise<{ token: number; nested: number }> {
    await sleep(600);
    const nested = await this.locks.using('account', (lock) => lock.fencingToken);
    return { token: token!, nested };
  }
}

/** GET without keep-alive (an idle kept-alive connection would hold the HTTP server's close up). */
function get(url: string): Promise<{ status: number; body: { token: number; nested: number } }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      })
      .on('error', reject);
  });
}

describe('app.close() while locked work runs (real nodes)', () => {
  let nodes: RedisNodes;
  let app: INestApplication;
  let watcher: Redlock;
  const logger = new MemoryLogger();

  beforeAll(async () => {
    nodes = await RedisNodes.start(3);
    watcher = new Redlock({ nodes: nodes.urls, restartGuard: false, logger });
    await watcher.connect();
    @Module({
      imports: [RedlockModule.forRoot({ nodes: nodes.urls, restartGuard: false, drainTimeout: 5000 })],
      providers: [Reports, Worker, Ticks],
      controllers: [SlowController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0);
  });
  afterAll(async () => {
    await watcher?.close();
    await nodes?.close();
  });

  test('the request in flight finishes, the cron job and the worker keep their locks until their work ends, then nothing is held', async () => {
    const reports = app.get(Reports);
    const worker = app.get(Worker);
    const url = `${await app.getUrl()}/slow`.replace('[::1]', '127.0.0.1');
    const report = reports.nightly();
    worker.start();
    const request = get(url);
    // A skipping job still waiting for a lock held elsewhere when shutdown begins: skipped, no error.
    const held = await watcher.acquire('busy-tick', { ttl: 10_000 });
    const tick = app.get(Ticks).tick();
    await sleep(100);
    const closing = performance.now();
    const closed = app.close();

    // While the work runs its locks are held: another engine finds them busy.
    await sleep(400);
    const busy = await Promise.all([watcher.tryAcquire('nightly-report'), watcher.inspect('nightly-report')]);
    expect(busy[0]).toBeNull();
    expect(busy[1].held).toBe(true);

    await report;
    await worker.stopped();
    await closed;
    await expect(tick).resolves.toBeUndefined();
    expect(app.get(Ticks).ran).toBe(0);
    await held.release();
    const tookMs = performance.now() - closing;

    const response = await request;
    expect(response.status).toBe(200);
    expect(response.body.nested).toBe(response.body.token);
    expect(reports.stopReason).toBeInstanceOf(EngineClosedError);
    expect(worker.refusal).toBeInstanceOf(EngineClosedError);
    // The job running when shutdown began finished; the next one never started.
    const started = journal.filter((line) => / started/.test(line) && line.startsWith('job'));
    const done = journal.filter((line) => /: done$/.test(line));
    expect(done).toHaveLength(started.length);
    expect(journal).toContain('report: wrapped up');
    // Released once the work ended, not before: close() took as long as the wrap-up.
    expect(tookMs).toBeGreaterThan(700);
    const left = await Promise.all(nodes.urls.map((_, i) => nodes.client(i).keys('redlock:{*}')));
    expect(left.flat()).toEqual([]);
  });
});
