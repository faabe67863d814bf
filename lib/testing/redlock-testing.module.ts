import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { filter, firstValueFrom, take, timeout } from 'rxjs';
import { LockService, RedlockModule, type RedlockModuleOptions } from '../nest/index.js';
import { fencedDoubles, type FencedDoublesOptions } from './fenced/fenced-providers.js';
import { MemoryServer } from './memory/server.js';
import { memoryNode } from './memory/transport.js';

/** Options of {@link RedlockTestingModule.forRoot}. */
export interface RedlockTestingOptions extends FencedDoublesOptions {
  /** Default lease, ms (default 1000: a lock taken away is noticed within ttl / 3). */
  ttl?: number;
  /** Default wait for a busy lock, ms (default 0: fail fast, as in production). */
  wait?: number;
}

/**
 * The lock state of a {@link RedlockTestingModule}, for assertions and for faults: who holds a
 * lock, and taking a held lock away (to test what your code does when `@LockSignal()` aborts).
 */
@Injectable()
export class InMemoryLocks {
  constructor(
    /** The in-memory server behind the locks: its keyspace (lock keys, fence counters, queues). */
    readonly state: MemoryServer,
    private readonly locks: LockService,
    private readonly keyPrefix: string,
    private readonly ttl: number,
  ) {}

  /** Whether `resource` is locked right now. */
  isLocked(resource: string): boolean {
    return this.state.get(this.lockKey(resource)) !== undefined;
  }

  /**
   * Takes the lock on `resource` away from its holder, as a majority lost to a partition would,
   * and resolves once the holder has noticed: its signal aborted with a LockLostError (at its
   * next watchdog extension, within ttl / 3, or when its validity ends).
   */
  async loseLock(resource: string): Promise<void> {
    const noticed = firstValueFrom(
      this.locks.events$.pipe(
        filter((e) => e.type === 'lost' && e.resources.includes(resource)),
        take(1),
        timeout(this.ttl + 1000),
      ),
    );
    this.state.del(this.lockKey(resource));
    await noticed;
  }

  private lockKey(resource: string): string {
    return `${this.keyPrefix}{${resource}}`;
  }
}

/**
 * `RedlockModule` for unit tests, backed by memory instead of Redis: the same `LockService`,
 * `@DistributedLock`, `@FencingToken()` and `@LockSignal()`, with locks exclusive within the
 * process, waiting in line, and strictly increasing fencing tokens. No sockets and no timers are
 * left behind once the testing module is closed. It also provides the fenced stores in memory:
 * `FencedWriter` (an {@link InMemoryFencedWriter}, unless `fencedWriter: false`) and each
 * `FencedTable` of `fencedTables` (an {@link InMemoryFencedTable}) under your own token.
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot()],
 *   providers: [ReportService],
 * }).compile();
 * ```
 */
@Module({})
export class RedlockTestingModule {
  static forRoot(options: RedlockTestingOptions = {}): DynamicModule {
    const state = new MemoryServer();
    const moduleOptions = memoryModuleOptions(options, state);
    const base = RedlockModule.forRoot(moduleOptions);
    const { keyPrefix, ttl } = moduleOptions;
    const fenced = fencedDoubles(options);
    return {
      ...base,
      providers: [
        ...(base.providers ?? []),
        {
          provide: InMemoryLocks,
          inject: [LockService],
          useFactory: (locks: LockService) => new InMemoryLocks(state, locks, keyPrefix, ttl),
        },
        ...fenced.providers,
      ],
      exports: [...(base.exports ?? []), InMemoryLocks, ...fenced.exports],
    };
  }

  /**
   * Module options backed by memory (a fresh keyspace per call), for an app whose own
   * `RedlockModule.forRoot()` / `forRootAsync()` a test replaces without touching the app. NestJS
   * matches `overrideModule()` by identity: `overrideModule(RedlockModule)` never matches the
   * `DynamicModule` that `forRootAsync()` returned inside the app's imports, so it is ignored and
   * the app's factory still runs. Override the options instead; the factory is then never called:
   *
   * ```ts
   * const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
   *   .overrideProvider(REDLOCK_MODULE_OPTIONS)
   *   .useValue(RedlockTestingModule.inMemoryOptions())
   *   .compile();
   * ```
   */
  static inMemoryOptions(options: Pick<RedlockTestingOptions, 'ttl' | 'wait'> = {}): RedlockModuleOptions {
    return memoryModuleOptions(options, new MemoryServer());
  }
}

/** The options of a `RedlockModule` over `server`, the keyspace of one testing module. */
function memoryModuleOptions(options: Pick<RedlockTestingOptions, 'ttl' | 'wait'>, server: MemoryServer) {
  return {
    nodes: [memoryNode(server, { label: 'memory://test' })],
    ttl: options.ttl ?? 1000,
    wait: options.wait ?? 0,
    keyPrefix: 'redlock:',
    restartGuard: false, // memory is never lost
  } satisfies RedlockModuleOptions;
}
