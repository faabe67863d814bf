/**
 * Issue 25, item 6: DISTRIBUTED_LOCK_METADATA is used: at bootstrap, every `@DistributedLock`
 * method's options are checked against the engine the module built, so a bad option fails the
 * bootstrap naming the method instead of failing every call.
 */
import 'reflect-metadata';
import { Controller, Get, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DISTRIBUTED_LOCK_METADATA, DistributedLock, Redlock, RedlockOptionsError } from '../../lib/index.js';
import { RedlockTestingModule } from '../../lib/testing/index.js';

@Injectable()
class GoodJobs {
  @DistributedLock('good', { ttl: 500, wait: 100, onBusy: 'skip' })
  async run(): Promise<string | undefined> {
    return 'ran';
  }
}

/** A ttl the engine would refuse at every call: not above the module's nodeTimeout (100 ms). */
@Injectable()
class ShortLeaseJobs {
  @DistributedLock('short', { ttl: 50 })
  async run(): Promise<void> {}
}

@Controller('x')
class LongHoldController {
  @Get()
  @DistributedLock('x', { holdAtLeast: -5 })
  async get(): Promise<void> {}
}

describe('@DistributedLock options are checked at bootstrap (DISTRIBUTED_LOCK_METADATA)', () => {
  test('the decorator records its key and options under DISTRIBUTED_LOCK_METADATA', () => {
    expect(Reflect.getMetadata(DISTRIBUTED_LOCK_METADATA, GoodJobs.prototype.run)).toEqual({
      key: 'good',
      options: { ttl: 500, wait: 100, onBusy: 'skip' },
    });
  });

  test('valid options: the module initialises and the method runs', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [GoodJobs],
    }).compile();
    await moduleRef.init();
    expect(await moduleRef.get(GoodJobs).run()).toBe('ran');
    await moduleRef.close();
  });

  test.each([
    [
      'a provider',
      { providers: [ShortLeaseJobs] },
      /`@DistributedLock ttl on ShortLeaseJobs.run`: 50 ms is not above nodeTimeout 100 ms/,
    ],
    [
      'a controller',
      { controllers: [LongHoldController] },
      /`@DistributedLock holdAtLeast on LongHoldController.get`: got -5/,
    ],
  ])(
    'a bad option on %s fails the bootstrap naming the method; the engine is closed',
    async (_, metadata, message) => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot()],
        ...metadata,
      }).compile();
      const init = moduleRef.init();
      await expect(init).rejects.toBeInstanceOf(RedlockOptionsError);
      await expect(init).rejects.toThrow(message);
      await expect(moduleRef.get(Redlock).acquire('any')).rejects.toThrow(/closed/);
    },
  );
});
