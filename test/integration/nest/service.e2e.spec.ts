import 'reflect-metadata';
import { Controller, Get, Inject, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
// A value import: emitDecoratorMetadata then records `Observable` as the declared return type.
import { interval, Observable, take } from 'rxjs';
import {
  DistributedLock,
  FencingToken,
  LockLostError,
  LockNotAcquiredError,
  LockService,
  LockSignal,
  RedlockModule,
  RedlockOptionsError,
  type RedlockModuleOptions,
} from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const lockKeyOf = (r: string) => `redlock:{${r}}`;

@Injectable()
class JobRunner {
  runs: Array<{ id: string; token: number }> = [];
  aborted: Array<{ before: boolean; reason: unknown }> = [];
  /** Called once `untilLost` holds its lock. */
  onHold: () => void = () => undefined;

  @DistributedLock('job:{0}')
  async run(id: string, @FencingToken() token?: number): Promise<number> {
    this.runs.push({ id, token: token! });
    return token!;
  }

  @DistributedLock('long', { ttl: 400 })
  async long(ms: number, @LockSignal() signal?: AbortSignal): Promise<boolean> {
    await sleep(ms);
    return signal!.aborted;
  }

  /** Runs until the lock is lost (or 5 s), and reports when that happened relative to validity. */
  @DistributedLock('fragile', { ttl: 1000 })
  async untilLost(@LockSignal() signal?: AbortSignal, @FencingToken() _token?: number): Promise<unknown> {
    const started = Date.now();
    this.onHold();
    await new Promise<void>((resolve) => {
      signal!.addEventListener('abort', () => resolve(), { once: true });
      const timer = setTimeout(resolve, 5000);
      signal!.addEventListener('abort', () => clearTimeout(timer), { once: true });
    });
    return { aborted: signal!.aborted, reason: signal!.reason, afterMs: Date.now() - started };
  }

  /** A stream that ticks every 100 ms for up to 5 s under a 900 ms lease (extended by the watchdog). */
  @DistributedLock('ticker', { ttl: 900 })
  ticker(): Observable<number> {
    return interval(100).pipe(take(50));
  }

  @DistributedLock('user:{0.id}')
  async outer(user: { id: string }, @FencingToken() token?: number): Promise<number[]> {
    const inner = await this.inner(user);
    return [token!, inner];
  }

  @DistributedLock((user: { id: string }) => `user:${user.id}`)
  async inner(user: { id: string }, @FencingToken() token?: number): Promise<number> {
    return token!;
  }
}

@Injectable()
class Scheduler {
  constructor(private readonly jobs: JobRunner) {}
  trigger(id: string): Promise<number> {
    return this.jobs.run(id);
  }
}

async function boot(
  options: RedlockModuleOptions,
  extra: { controllers?: never[] } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot(options)],
    providers: [JobRunner, Scheduler],
    ...extra,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('@DistributedLock on services, LockService and the module (5 real nodes)', () => {
  let redis: RedisNodes;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await RedisNodes.start(5);
    app = await boot({ nodes: redis.urls, restartGuard: false, nodeTimeout: 50 });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  const keysOnNodes = (key: string) => Promise.all(redis.urls.map((_, i) => redis.client(i).get(key)));

  test("a service method with 'job:{0}' and @FencingToken, called from another provider", async () => {
    const scheduler = app.get(Scheduler);
    const first = await scheduler.trigger('a');
    const second = await scheduler.trigger('a');
    expect(second).toBeGreaterThan(first);
    expect(app.get(JobRunner).runs.map((r) => r.id)).toEqual(['a', 'a']);
    expect(await keysOnNodes(lockKeyOf('job:a'))).toEqual([null, null, null, null, null]);
  });

  test('the watchdog keeps a 400 ms lock through a 2 s method (5 x ttl); the key is gone right after', async () => {
    const jobs = app.get(JobRunner);
    const running = jobs.long(2000);
    await sleep(1500);
    const values = await keysOnNodes(lockKeyOf('long'));
    expect(values.filter((v) => v !== null).length).toBeGreaterThanOrEqual(3);
    await expect(app.get(LockService).acquire('long')).rejects.toBeInstanceOf(LockNotAcquiredError);
    expect(await running).toBe(false); // not aborted while the method ran
    expect(await keysOnNodes(lockKeyOf('long'))).toEqual([null, null, null, null, null]);
  });

  test('stopping 3 of 5 nodes mid-method aborts @LockSignal before the validity ends', async () => {
    const jobs = app.get(JobRunner);
    const holding = new Promise<void>((resolve) => (jobs.onHold = resolve));
    const running = jobs.untilLost();
    await holding;
    const stoppedAt = Date.now();
    for (const i of [0, 1, 2]) redis.stop(i);
    try {
      const result = (await running) as { aborted: boolean; reason: unknown; afterMs: number };
      expect(result.aborted).toBe(true);
      expect(result.reason).toBeInstanceOf(LockLostError);
      // ttl 1000: the watchdog extends every ~333 ms; the loss is seen at the next extension,
      // before the lease granted just before the nodes stopped runs out.
      expect(Date.now() - stoppedAt).toBeLessThan(1000);
    } finally {
      for (const i of [0, 1, 2]) redis.resume(i);
    }
  });

  test('an Observable method errors with LockLostError when the lock is lost mid-stream', async () => {
    const jobs = app.get(JobRunner);
    const seen: number[] = [];
    const outcome = new Promise<unknown>((resolve) => {
      jobs.ticker().subscribe({
        next: (v) => seen.push(v),
        error: (err: unknown) => resolve(err),
        complete: () => resolve('completed'),
      });
    });
    // Mid-stream: the first tick came, under the lock.
    expect(await eventually(() => seen.length > 0, true)).toBe(true);
    for (const i of [0, 1, 2]) redis.stop(i);
    try {
      const err = await outcome;
      expect(err).toBeInstanceOf(LockLostError);
      expect(seen.length).toBeLessThan(50);
    } finally {
      for (const i of [0, 1, 2]) redis.resume(i);
    }
  });

  test('nested locked calls on the same key complete with the same token', async () => {
    const jobs = app.get(JobRunner);
    const [outer, inner] = await jobs.outer({ id: '7' });
    expect(inner).toBe(outer);
  });

  test('a missing template argument is a typed error, not a lock on "undefined"', async () => {
    const jobs = app.get(JobRunner);
    await expect(jobs.outer({} as { id: string })).rejects.toBeInstanceOf(RedlockOptionsError);
  });

  test('LockService.using runs under the lock and releases; tryAcquire gives null when busy', async () => {
    const locks = app.get(LockService);
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const holding = locks.using('svc', async (lock) => {
      inside();
      await finished;
      return lock.fencingToken;
    });
    await entered;
    expect(await locks.tryAcquire('svc')).toBeNull(); // another call chain: no joining
    finish();
    const token = await holding;
    expect(token).toBeGreaterThan(0);
    const again = await locks.tryAcquire('svc');
    expect(again).not.toBeNull();
    await again!.release();
    expect(await locks.probe()).toMatchObject({ quorum: 3, quorumReachable: true });
  });

  test('await using releases the lock at the end of the block', async () => {
    const locks = app.get(LockService);
    {
      await using lock = await locks.acquire('disposable');
      expect(lock.fencingToken).toBeGreaterThan(0);
    }
    expect(await keysOnNodes(lockKeyOf('disposable'))).toEqual([null, null, null, null, null]);
  });
});

describe('module configuration and lifecycle', () => {
  let redis: RedisNodes;
  beforeAll(async () => {
    redis = await RedisNodes.start(3);
  });
  afterAll(() => redis?.close());

  test('forRootAsync with a factory that reads configuration', async () => {
    const CONFIG = Symbol('CONFIG');
    @Module({
      providers: [{ provide: CONFIG, useValue: { REDLOCK_NODES: redis.urls.join(',') } }],
      exports: [CONFIG],
    })
    class ConfigModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: (config: { REDLOCK_NODES: string }) => ({
            nodes: config.REDLOCK_NODES.split(','),
            restartGuard: false,
            // The lock below is never released by its holder: close() waits this long for it.
            drainTimeout: 100,
          }),
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const lock = await app.get(LockService).acquire('async-config');
    expect(lock.fencingToken).toBeGreaterThan(0);
    await app.close(); // releases held locks (after drainTimeout)
    const values = await Promise.all([0, 1, 2].map((i) => redis.client(i).get(lockKeyOf('async-config'))));
    expect(values).toEqual([null, null, null]);
  });

  test('forRootAsync with useClass', async () => {
    @Injectable()
    class RedlockConfig {
      createRedlockOptions(): RedlockModuleOptions {
        return { nodes: redis.urls, restartGuard: false };
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useClass: RedlockConfig })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await app.get(LockService).using('use-class', () => undefined);
    await app.close();
  });

  test.each([
    [{ nodes: [] }, /nodes/],
    [{ nodes: ['http://localhost:6379'] }, /scheme/],
    [{ nodes: ['redis://localhost:1'], ttl: -5 }, /ttl/],
    [{ nodes: ['redis://localhost:1'], driftFactor: 0.7 }, /driftFactor/],
    [{ nodes: ['redis://localhost:1'], ttl: 120_000, restartGuard: 60_000 }, /restartGuard/],
  ])('bad options %j fail the bootstrap with RedlockOptionsError', async (options, message) => {
    const attempt = Test.createTestingModule({
      imports: [RedlockModule.forRoot(options as RedlockModuleOptions)],
    })
      .compile()
      .then(async (ref) => {
        const app = ref.createNestApplication({ logger: false });
        await app.init();
        await app.close();
      });
    const err = await attempt.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedlockOptionsError);
    expect((err as Error).message).toMatch(message);
  });

  test('a provider using @DistributedLock without RedlockModule fails at bootstrap, saying what to import', async () => {
    @Injectable()
    class Orphan {
      @DistributedLock('x')
      async work(): Promise<void> {}
    }
    const err = await Test.createTestingModule({ providers: [Orphan] })
      .compile()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/RedlockModule\.forRoot/);
  });

  test('clients passed in are not closed on shutdown; connections the module opened are', async () => {
    const mine = new Redis(redis.url(0));
    @Controller()
    class Noop {
      constructor(@Inject(LockService) readonly locks: LockService) {}
      @Get()
      @DistributedLock('noop')
      async get(): Promise<string> {
        return 'ok';
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [mine, redis.url(1), redis.url(2)], restartGuard: false })],
      controllers: [Noop],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    // Node 1's connections, seen by the server: the module's command and wake-up connections.
    const admin = redis.client(1);
    const connections = async () =>
      String(await admin.client('LIST'))
        .trim()
        .split('\n').length - 1;
    expect(await connections()).toBeGreaterThan(0);
    await app.close();
    expect(mine.status).toBe('ready');
    expect(await mine.ping()).toBe('PONG');
    for (let i = 0; i < 50 && (await connections()) > 0; i++) await sleep(20);
    expect(await connections()).toBe(0);
    mine.disconnect();
  });
});
