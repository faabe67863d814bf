import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { AsyncAppModule } from '../../../docs/examples/async-config.js';
import { REDLOCK_MODULE_OPTIONS, type RedlockModuleOptions } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';

/*
 * The README's "Async configuration" example (docs/examples/async-config.ts, the class the README
 * quotes): an unset REDLOCK_NODES stops the bootstrap with the variable's name, not with a
 * TypeError on `undefined.split`; set, its comma-separated URLs become the module's nodes.
 */
describe("the README's async configuration example", () => {
  const saved = process.env.REDLOCK_NODES;
  afterEach(() => {
    if (saved === undefined) delete process.env.REDLOCK_NODES;
    else process.env.REDLOCK_NODES = saved;
  });

  test('REDLOCK_NODES unset: the bootstrap fails naming the variable', async () => {
    delete process.env.REDLOCK_NODES;
    const failure = await Test.createTestingModule({ imports: [AsyncAppModule] })
      .compile()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe('Configuration key "REDLOCK_NODES" does not exist');
    expect((failure as Error).message).not.toMatch(/undefined|split/);
  });

  test('REDLOCK_NODES set: its URLs are the nodes, and the app starts on them', async () => {
    const redis = await RedisNodes.start(3);
    try {
      process.env.REDLOCK_NODES = redis.urls.join(',');
      const moduleRef = await Test.createTestingModule({ imports: [AsyncAppModule] }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      const options = app.get<RedlockModuleOptions>(REDLOCK_MODULE_OPTIONS);
      expect(options.nodes).toEqual(redis.urls);
      expect(options.ttl).toBe(10_000);
      await app.close();
    } finally {
      await redis.close();
    }
  });
});
