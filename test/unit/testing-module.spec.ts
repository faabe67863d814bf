import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  DistributedLock,
  FencingToken,
  LockLostError,
  LockNotAcquiredError,
  LockService,
  LockSignal,
  RedlockModule,
  type Lock,
} from '../../lib/index.js';
import { InMemoryLocks, RedlockTestingModule } from '../../lib/testing/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user's service, as it would be written for production. */
@Injectable()
class ReportService {
  readonly tokens: number[] = [];
  running = 0;
  overlaps = 0;

  @DistributedLock('report:{0}', { wait: 2000 })
  async run(id: string, ms: number, @FencingToken() token?: number): Promise<number> {
    if (++this.running > 1) this.overlaps++;
    this.tokens.push(token!);
    await sleep(ms);
    this.running--;
    return token!;
  }

  @DistributedLock('once', { wait: 0 })
  async once(ms: number): Promise<string> {
    await sleep(ms);
    return 'ran';
  }

  @DistributedLock('long')
  async long(@LockSignal() signal?: AbortSignal): Promise<unknown> {
    return new Promise((resolve) =>
      signal!.addEventListener('abort', () => resolve(signal!.reason), { once: true }),
    );
  }
}

describe('RedlockTestingModule: the real LockService and decorators on memory (no Redis)', () => {
  let moduleRef: TestingModule;
  let reports: ReportService;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ ttl: 600 })],
      providers: [ReportService],
    }).compile();
    await moduleRef.init();
    reports = moduleRef.get(ReportService);
  });
  afterAll(() => moduleRef?.close());

  test('exclusive and waiting: 5 concurrent calls run one at a time, tokens strictly increasing', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => reports.run('a', 20)));
    expect(reports.overlaps).toBe(0);
    expect(reports.tokens).toEqual([...reports.tokens].sort((x, y) => x - y));
    expect(new Set(results).size).toBe(5);
  });

  test('busy with wait 0 raises LockNotAcquiredError', async () => {
    const first = reports.once(100);
    await sleep(10);
    await expect(reports.once(0)).rejects.toBeInstanceOf(LockNotAcquiredError);
    expect(await first).toBe('ran');
  });

  test('LockService works on memory too: acquire, tryAcquire, using, inspect', async () => {
    const locks = moduleRef.get(LockService);
    const lock = await locks.acquire('manual');
    expect(await locks.tryAcquire('manual')).toBeNull();
    expect(await locks.inspect('manual')).toMatchObject({ held: true, fencingToken: lock.fencingToken });
    await lock.release();
    expect(await locks.using('manual', (l: Lock) => l.fencingToken)).toBeGreaterThan(lock.fencingToken);
  });

  test("a lock taken away aborts the holder's @LockSignal with a LockLostError", async () => {
    const memory = moduleRef.get(InMemoryLocks);
    const running = reports.long();
    await sleep(20);
    expect(memory.isLocked('long')).toBe(true);
    await memory.loseLock('long');
    expect(await running).toBeInstanceOf(LockLostError);
  });
});

describe('LockService replaced by a test double', () => {
  test('the bootstrap does not wait connectTimeout for nodes the double never uses', async () => {
    const nodes = [1, 2, 3].map((port) => `redis://127.0.0.1:${port}`); // closed ports
    const fake = {
      using: (_keys: unknown, fn: (lock: Partial<Lock>) => unknown) => fn({ fencingToken: 42 }),
    };
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes, logger: { log() {}, warn() {}, error() {} } })], // connectTimeout 5 s
      providers: [ReportService],
    })
      .overrideProvider(LockService)
      .useValue(fake)
      .compile();
    try {
      const started = performance.now();
      await moduleRef.init();
      expect(performance.now() - started).toBeLessThan(2000);
      expect(await moduleRef.get(ReportService).once(0)).toBe('ran');
    } finally {
      await moduleRef.close(); // also on failure: the engine's reconnecting sockets must not linger
    }
  });
});

describe('closing leaves no open handle (a separate Node process must exit by itself)', () => {
  const fixture = join(here, 'fixtures', 'testing-module-exit.mjs');
  for (const mode of ['memory', 'override']) {
    test(`${mode === 'memory' ? 'RedlockTestingModule' : 'RedlockModule with LockService overridden by a test double'}`, () => {
      const run = spawnSync(process.execPath, [fixture, mode], { encoding: 'utf8', timeout: 15_000 });
      // A handle left open would keep the process alive until the time-out kills it (status null).
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      expect(run.stdout).toContain(mode === 'memory' ? 'tokens increasing: true' : 'fake lock token: 42');
    });
  }
});
