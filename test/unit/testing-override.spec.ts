/**
 * Issue 29, item 9: an e2e test of a whole AppModule without Redis, when the app configures
 * `RedlockModule.forRootAsync()` from its own configuration. The config factory below would connect
 * to Redis nodes that do not exist; the recipe must keep it from ever running, and the app's locks
 * must work in memory.
 */
import 'reflect-metadata';
import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLock,
  FencingToken,
  LockService,
  REDLOCK_MODULE_OPTIONS,
  RedlockModule,
} from '../../lib/index.js';
import { RedlockTestingModule } from '../../lib/testing/index.js';

/** The app's configuration service (what ConfigService is in a real app). */
@Injectable()
class AppConfig {
  static factoryCalls = 0;
  readonly redisNodes = ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'];
}

@Module({ providers: [AppConfig], exports: [AppConfig] })
class AppConfigModule {}

@Injectable()
class OrdersService {
  @DistributedLock('order:{0}', { wait: 2000 })
  async pay(id: string, @FencingToken() token?: number): Promise<{ id: string; token: number }> {
    await new Promise((r) => setTimeout(r, 20));
    return { id, token: token! };
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post(':id/pay')
  pay(@Param('id') id: string) {
    return this.orders.pay(id);
  }
}

/** Kept to show the other override that works: the very object the app imports. */
const redlockImport = RedlockModule.forRootAsync({
  imports: [AppConfigModule],
  inject: [AppConfig],
  useFactory: (config: AppConfig) => {
    AppConfig.factoryCalls++;
    // A real app's nodes; short timeouts only so that the control below ends quickly.
    return { nodes: config.redisNodes, connectTimeout: 200, preflight: 'off', logger: silent };
  },
});

const silent = { log() {}, warn() {}, error() {} };

@Module({ imports: [redlockImport], controllers: [OrdersController], providers: [OrdersService] })
class AppModule {}

async function startApp(builder: TestingModuleBuilder): Promise<INestApplication> {
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** Two concurrent payments of one order run one after the other, with increasing tokens. */
async function locksWork(app: INestApplication): Promise<void> {
  const server = app.getHttpServer();
  const [a, b] = await Promise.all([
    request(server).post('/orders/9/pay').expect(201),
    request(server).post('/orders/9/pay').expect(201),
  ]);
  const tokens = [a.body.token as number, b.body.token as number].sort((x, y) => x - y);
  expect(tokens[0]).toBeGreaterThan(0);
  expect(tokens[1]).toBeGreaterThan(tokens[0]!);
  const locks = app.get(LockService);
  const held = await locks.acquire('order:9');
  expect(await locks.tryAcquire('order:9')).toBeNull();
  await held.release();
}

describe('an e2e test of the whole AppModule (forRootAsync) without Redis', () => {
  beforeEach(() => {
    AppConfig.factoryCalls = 0;
  });

  test('the recipe: overrideProvider(REDLOCK_MODULE_OPTIONS).useValue(RedlockTestingModule.inMemoryOptions())', async () => {
    const app = await startApp(
      Test.createTestingModule({ imports: [AppModule] })
        .overrideProvider(REDLOCK_MODULE_OPTIONS)
        .useValue(RedlockTestingModule.inMemoryOptions()),
    );
    try {
      expect(AppConfig.factoryCalls).toBe(0);
      await locksWork(app);
      expect(
        app
          .get(LockService)
          .status()
          .nodes.map((n) => n.node),
      ).toEqual(['memory://test']);
    } finally {
      await app.close();
    }
  });

  test('overrideModule() of the exact DynamicModule the app imports works too', async () => {
    const app = await startApp(
      Test.createTestingModule({ imports: [AppModule] })
        .overrideModule(redlockImport)
        .useModule(RedlockTestingModule.forRoot()),
    );
    try {
      expect(AppConfig.factoryCalls).toBe(0);
      await locksWork(app);
    } finally {
      await app.close();
    }
  });

  test("why: overrideModule(RedlockModule) never matches forRootAsync()'s DynamicModule (NestJS compares identity), so the factory runs", async () => {
    const app = await startApp(
      Test.createTestingModule({ imports: [AppModule] })
        .overrideModule(RedlockModule)
        .useModule(RedlockTestingModule.forRoot()),
    );
    try {
      expect(AppConfig.factoryCalls).toBe(1);
      expect(
        app
          .get(LockService)
          .status()
          .nodes.map((n) => n.node),
      ).toEqual(['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3']);
    } finally {
      await app.close();
    }
  });
});
