/**
 * A unit test as a CommonJS NestJS app writes it with Jest and ts-jest (what `nest new` sets up):
 * the consumer suite copies it into such an app as `test/lock.spec.ts`, with the Jest config the
 * README's Installation section gives (Jest < 30 on Node < 24.9 cannot `require()` an ES module,
 * so ts-jest transforms this package). Not a spec of this repository (the name keeps it out).
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService, RedlockModule } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';

@Injectable()
class ReportJob {
  @DistributedLock('report', { wait: 0 })
  async run(@FencingToken() token?: number): Promise<number | undefined> {
    return token;
  }
}

describe('nest-quorum-lock under Jest in a CommonJS app', () => {
  let nodes: RedisNodes;
  beforeAll(async () => {
    nodes = await RedisNodes.start(3);
  });
  afterAll(async () => {
    await nodes?.close();
  });

  test('a locked provider method: increasing tokens, LockNotAcquiredError while held elsewhere', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: nodes.urls })],
      providers: [ReportJob],
    }).compile();
    await moduleRef.init();
    try {
      const job = moduleRef.get(ReportJob);
      const first = await job.run();
      const second = await job.run();
      expect(typeof first).toBe('number');
      expect(second).toBeGreaterThan(first as number);
      const held = await moduleRef.get(LockService).acquire('report');
      await expect(job.run()).rejects.toMatchObject({ name: 'LockNotAcquiredError' });
      await held.release();
    } finally {
      await moduleRef.close();
    }
  });
});
