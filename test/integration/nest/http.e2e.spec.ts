import 'reflect-metadata';
import {
  Body,
  Controller,
  ForbiddenException,
  Get,
  Injectable,
  Param,
  Post,
  UseGuards,
  type CanActivate,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { interval, map, take, type Observable } from 'rxjs';
import {
  DistributedLock,
  FencingToken,
  LockNotAcquiredError,
  LockService,
  QuorumUnavailableError,
  Redlock,
  RedlockModule,
} from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const SLOW_HOLD_MS = 1500;

/** A guard that refuses every request: the lock must not even be taken. */
@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

/** An in-process "database" whose read-modify-write loses updates unless callers are serialised. */
@Injectable()
class CounterStore {
  value = 0;
  grants: number[] = [];
  async increment(delayMs: number): Promise<number> {
    const read = this.value;
    await sleep(delayMs);
    this.value = read + 1;
    return this.value;
  }
}

@Controller('counter')
class CounterController {
  constructor(
    private readonly store: CounterStore,
    private readonly locks: LockService,
  ) {}

  @Post('locked')
  @DistributedLock('counter', { wait: 20_000, ttl: 2000 })
  async locked(@FencingToken() token: number): Promise<{ token: number }> {
    this.store.grants.push(token);
    await this.store.increment(3);
    return { token };
  }

  @Post('unlocked')
  async unlocked(): Promise<number> {
    return this.store.increment(3);
  }

  @DistributedLock('above-get')
  @Get('above')
  async above(): Promise<string> {
    return 'above';
  }

  @Get('below')
  @DistributedLock('below-get')
  async below(): Promise<string> {
    return 'below';
  }

  @Post('items/:id')
  @DistributedLock('item:{0}')
  async item(@Param('id') id: string, @Body() body: { qty: number }, @FencingToken() token: number) {
    return { id, qty: body.qty, token };
  }

  @UseGuards(DenyGuard)
  @Get('guarded')
  @DistributedLock('guarded')
  async guarded(): Promise<string> {
    return 'never';
  }

  // Applied before @DistributedLock wraps the method: this route and its guard exist only if the
  // decorator copies the original's metadata onto its wrapper.
  @DistributedLock('guarded-below')
  @UseGuards(DenyGuard)
  @Get('guarded-below')
  async guardedBelow(): Promise<string> {
    return 'never';
  }

  @Get('forbidden')
  @DistributedLock('forbidden')
  async forbidden(): Promise<never> {
    throw new ForbiddenException('not yours');
  }

  @Get('busy')
  @DistributedLock('busy', { wait: 0 })
  async busy(): Promise<string> {
    return 'got it';
  }

  /** What the engine throws while voters abstain for a known time (restart guard). */
  @Get('abstaining')
  @DistributedLock('abstaining')
  async abstaining(): Promise<never> {
    throw new QuorumUnavailableError(['abstaining'], 3, 5, [], 7200);
  }

  @Get('stream')
  @DistributedLock('stream', { ttl: 1000 })
  stream(): Observable<number> {
    return interval(100).pipe(
      take(5),
      map((i) => i),
    );
  }

  @Get('stream-probe')
  async streamProbe(): Promise<boolean> {
    const lock = await this.locks.tryAcquire('stream');
    await lock?.release();
    return lock !== null;
  }
}

/** Holds its lock about 1.5 s under a 10 s lease: clients turned away should not wait 10 s. */
@Controller('counter')
class SlowController {
  @Get('slow')
  @DistributedLock('slow', { wait: 0, ttl: 10_000 })
  async slow(): Promise<string> {
    await sleep(SLOW_HOLD_MS);
    return 'slow done';
  }
}

describe('@DistributedLock over HTTP (5 real redis-server nodes)', () => {
  let redis: RedisNodes;
  let app: INestApplication;
  let store: CounterStore;
  let locks: LockService;

  beforeAll(async () => {
    redis = await RedisNodes.start(5);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false, nodeTimeout: 100 })],
      controllers: [CounterController, SlowController],
      providers: [CounterStore],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    store = app.get(CounterStore);
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  /** Resolves once a route's lock is held on a majority (read for at most 2 s). */
  async function heldOnAMajority(resource: string): Promise<void> {
    const held = async () => (await locks.inspect(resource)).held;
    expect(await eventually(held, true)).toBe(true);
  }

  test('50 concurrent requests: exact count and tokens increasing in grant order; without the lock updates are lost', async () => {
    store.value = 0;
    const server = app.getHttpServer();
    const unlocked = await Promise.all(
      Array.from({ length: 50 }, () => request(server).post('/counter/unlocked')),
    );
    expect(unlocked.every((r) => r.status === 201)).toBe(true);
    expect(store.value).toBeLessThan(50); // the control: lost updates are visible

    store.value = 0;
    store.grants = [];
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => request(server).post('/counter/locked')),
    );
    expect(responses.map((r) => r.status)).toEqual(new Array(50).fill(201));
    expect(store.value).toBe(50);
    expect(store.grants).toHaveLength(50);
    for (let i = 1; i < store.grants.length; i++)
      expect(store.grants[i]!).toBeGreaterThan(store.grants[i - 1]!);
  });

  test('the decorator above and below @Get both answer 200 and keep the method name', async () => {
    const server = app.getHttpServer();
    await request(server).get('/counter/above').expect(200, 'above');
    await request(server).get('/counter/below').expect(200, 'below');
    expect(CounterController.prototype.above.name).toBe('above');
    expect(CounterController.prototype.item.length).toBe(3);
  });

  test('the fencing token reaches a handler that also takes @Param and @Body', async () => {
    const res = await request(app.getHttpServer()).post('/counter/items/42').send({ qty: 3 }).expect(201);
    expect(res.body).toMatchObject({ id: '42', qty: 3 });
    expect(typeof res.body.token).toBe('number');
    expect(res.body.token).toBeGreaterThan(0);
  });

  test('@UseGuards above the decorator still guards the route, before any lock', async () => {
    await request(app.getHttpServer()).get('/counter/guarded').expect(403);
  });

  test('@Get and @UseGuards below the decorator are kept on its wrapper (metadata copied), before any lock', async () => {
    // Without the copy the route would not exist (404) and nothing would guard it.
    await request(app.getHttpServer()).get('/counter/guarded-below').expect(403);
    expect(await redis.client(0).exists('redlock:{guarded-below}:fence')).toBe(0);
  });

  test("the method's own HttpException passes through unchanged", async () => {
    const res = await request(app.getHttpServer()).get('/counter/forbidden').expect(403);
    expect(res.body.message).toBe('not yours');
  });

  test('a busy lock with wait: 0 answers 409 with a client-facing body and Retry-After; called as a service it is LockNotAcquiredError', async () => {
    const holder = await locks.acquire('busy', { ttl: 5000 });
    try {
      const res = await request(app.getHttpServer()).get('/counter/busy').expect(409);
      // Not the holder's 5 s lease: the route never ran here, so the hint is the retry delay.
      expect(res.headers['retry-after']).toBe('1');
      // No lock key, no advice meant for developers (those are logged, see exposeLockDetails).
      expect(res.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        code: 'LOCK_NOT_ACQUIRED', // a busy lock, not the app's own 409 (issue 40, item 6)
        message: 'The resource is busy; retry in 1 s.',
        retryAfterMs: 200,
      });
      const controller = app.get(CounterController);
      await expect(controller.busy()).rejects.toBeInstanceOf(LockNotAcquiredError);
    } finally {
      await holder.release();
    }
    await request(app.getHttpServer()).get('/counter/busy').expect(200, 'got it');
  });

  test("a busy lock's Retry-After is the route's typical hold (1.5 s), not the 10 s lease left", async () => {
    const server = app.getHttpServer();
    await request(server).get('/counter/slow').expect(200, 'slow done'); // learns the typical hold
    const running = request(server)
      .get('/counter/slow')
      .then((r) => r);
    await heldOnAMajority('slow');
    const res = await request(server).get('/counter/slow').expect(409);
    expect(res.body.retryAfterMs).toBeGreaterThanOrEqual(SLOW_HOLD_MS);
    expect(res.body.retryAfterMs).toBeLessThan(SLOW_HOLD_MS + 1000);
    expect(res.headers['retry-after']).toBe(String(Math.ceil(res.body.retryAfterMs / 1000)));
    expect(res.body.message).toBe(`The resource is busy; retry in ${res.headers['retry-after']} s.`);
    expect((await running).status).toBe(200);
  });

  test('an Observable route holds the lock until its last emission', async () => {
    const server = app.getHttpServer();
    const streaming = request(server).get('/counter/stream');
    const done = streaming.then((r) => r);
    await heldOnAMajority('stream'); // mid-stream (5 emissions, 100 ms apart)
    const during = await request(server).get('/counter/stream-probe');
    expect(during.text).toBe('false');
    const res = await done;
    expect(res.status).toBe(200);
    expect(res.text).toBe('4'); // Nest answers with the last value
    // Released one-way at the last emission: a probe may find it held until the release landed (at
    // most 500 ms; not released, it would stay for its 1 s ttl).
    const probe = async () => (await request(server).get('/counter/stream-probe')).text;
    expect(await eventually(probe, 'true', 500)).toBe('true');
  });

  test('a QuorumUnavailableError becomes 503; nodes down: Retry-After 1 and no retryAfterMs', async () => {
    for (const i of [0, 1, 2]) redis.stop(i);
    try {
      const res = await request(app.getHttpServer()).get('/counter/below');
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'QUORUM_UNAVAILABLE',
        message: 'Distributed lock quorum unavailable; retry shortly.',
      });
    } finally {
      for (const i of [0, 1, 2]) redis.resume(i);
    }
  });

  test('a QuorumUnavailableError with retryAfterMs: 503 with Retry-After = ceil(retryAfterMs / 1000)', async () => {
    const res = await request(app.getHttpServer()).get('/counter/abstaining').expect(503);
    expect(res.headers['retry-after']).toBe('8');
    expect(res.body.code).toBe('QUORUM_UNAVAILABLE');
    expect(res.body.retryAfterMs).toBe(7200);
    // The sentence agrees with Retry-After (never "retry shortly" beside a long wait).
    expect(res.body.message).toBe('Distributed lock quorum unavailable; retry in 8 s.');
  });

  // Last in this block: it shuts the app's lock engine down.
  test('an engine shutting down (EngineClosedError): 503 with Retry-After 1', async () => {
    await app.get(Redlock).close();
    const res = await request(app.getHttpServer()).get('/counter/below').expect(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'ENGINE_CLOSED',
      message: 'This instance is shutting down; retry in 1 s.',
      retryAfterMs: 1000,
    });
  });
});

describe('503 while brand-new nodes abstain under the restart guard', () => {
  const GUARD_MS = 3000;
  let redis: RedisNodes;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await RedisNodes.start(3, { freshFor: [] }); // not recorded fresh: they abstain, as production nodes
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: GUARD_MS, ttl: 1000 })],
      controllers: [CounterController],
      providers: [CounterStore],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  test('Retry-After is the time until a quorum votes again (the rest of the guard), not 1 s', async () => {
    const started = Date.now();
    const res = await request(app.getHttpServer()).get('/counter/below').expect(503);
    const seconds = Number(res.headers['retry-after']);
    // The first acquire on brand-new nodes sets their markers: the guard runs from about now.
    const left = GUARD_MS - (Date.now() - started);
    expect(res.body.retryAfterMs).toBeGreaterThan(left - 500);
    expect(res.body.retryAfterMs).toBeLessThanOrEqual(GUARD_MS);
    expect(seconds).toBe(Math.ceil(res.body.retryAfterMs / 1000));
    expect(seconds).toBeGreaterThan(1);
    expect(res.body.message).toBe(`Distributed lock quorum unavailable; retry in ${seconds} s.`);
  });
});

/** Collects what the app logs, per level. */
class CapturingLogger implements LoggerService {
  readonly lines: Array<{ level: string; message: string }> = [];
  log(message: unknown): void {
    this.lines.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }
  debug(message: unknown): void {
    this.lines.push({ level: 'debug', message: String(message) });
  }
  verbose(message: unknown): void {
    this.lines.push({ level: 'verbose', message: String(message) });
  }
}

describe('lock details: logged once per error, sent to clients only with exposeLockDetails', () => {
  let redis: RedisNodes;
  const apps: INestApplication[] = [];

  async function start(
    exposeLockDetails?: boolean,
  ): Promise<{ app: INestApplication; logger: CapturingLogger }> {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          nodes: redis.urls,
          restartGuard: false,
          nodeTimeout: 100,
          ...(exposeLockDetails === undefined ? {} : { exposeLockDetails }),
        }),
      ],
      controllers: [CounterController],
      providers: [CounterStore],
    }).compile();
    const logger = new CapturingLogger();
    const app = moduleRef.createNestApplication({ logger });
    apps.push(app);
    await app.init();
    return { app, logger };
  }

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await redis?.close();
  });

  for (const expose of [undefined, true]) {
    test(`exposeLockDetails ${String(expose)}: one debug line with the key and advice; the body ${expose ? 'adds' : 'keeps out'} detail and resources`, async () => {
      const { app, logger } = await start(expose);
      const holder = await app.get(LockService).acquire('busy', { ttl: 5000 });
      try {
        const res = await request(app.getHttpServer()).get('/counter/busy').expect(409);
        const logged = logger.lines.filter((l) => l.message.includes('LOCK_NOT_ACQUIRED'));
        expect(logged).toHaveLength(1);
        expect(logged[0]!.level).toBe('debug');
        expect(logged[0]!.message).toContain('CounterController.busy');
        expect(logged[0]!.message).toContain('"busy" is held by another owner');
        if (expose) {
          expect(res.body.resources).toEqual(['busy']);
          expect(res.body.detail).toContain('"busy" is held by another owner');
          expect(res.body.message).toBe('The resource is busy; retry in 1 s.');
        } else {
          expect(Object.keys(res.body).sort()).toEqual([
            'code',
            'error',
            'message',
            'retryAfterMs',
            'statusCode',
          ]);
          expect(JSON.stringify(res.body)).not.toContain('busy"');
        }
      } finally {
        await holder.release();
      }
    });
  }

  test('a lost quorum is logged once per error at warn level, with the nodes (not sent to the client)', async () => {
    const { app, logger } = await start();
    for (const i of [0, 1]) redis.stop(i);
    try {
      const res = await request(app.getHttpServer()).get('/counter/below').expect(503);
      expect(JSON.stringify(res.body)).not.toContain('127.0.0.1');
      const logged = logger.lines.filter((l) => l.message.includes('QUORUM_UNAVAILABLE'));
      expect(logged).toHaveLength(1);
      expect(logged[0]!.level).toBe('warn');
      expect(logged[0]!.message).toContain('127.0.0.1');
    } finally {
      for (const i of [0, 1]) redis.resume(i);
    }
  });

  test('exposeLockDetails other than a boolean fails at bootstrap', async () => {
    const compiling = Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          nodes: redis.urls,
          exposeLockDetails: 'yes' as unknown as boolean,
        }),
      ],
    }).compile();
    await expect(compiling).rejects.toThrow(/Invalid Redlock option `exposeLockDetails`: got yes/);
  });
});
