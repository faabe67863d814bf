/**
 * A unit test as an ESM NestJS 12 app writes it (what `nest new` sets up: Vitest 4, `globals: true`):
 * the consumer suite copies it into such an app as `test/lock.spec.ts` and runs it twice, with
 * Vitest and with Jest in ESM mode (`node --experimental-vm-modules`, ts-jest `useESM`), both as
 * the README's Testing section gives them. It uses only the runners' common globals (`describe`,
 * `it`, `expect`). Not a spec of this repository (the name keeps it out).
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService } from 'nest-quorum-lock';
import { InMemoryLocks, RedlockTestingModule } from 'nest-quorum-lock/testing';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
class ReportService {
  running = 0;
  overlaps = 0;

  @DistributedLock('report:{0}', { wait: 2000 })
  async build(id: string, @FencingToken() token?: number): Promise<number> {
    if (++this.running > 1) this.overlaps++;
    await sleep(20);
    this.running--;
    return token!;
  }
}

describe('a @DistributedLock service under RedlockTestingModule (no Redis)', () => {
  it('runs one call at a time, with increasing fencing tokens, and closes cleanly', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [ReportService],
    }).compile();
    await moduleRef.init();
    try {
      const reports = moduleRef.get(ReportService);
      const tokens = await Promise.all([
        reports.build('daily'),
        reports.build('daily'),
        reports.build('daily'),
      ]);
      expect(reports.overlaps).toBe(0);
      expect(new Set(tokens).size).toBe(3);
      expect(tokens.every((t) => Number.isSafeInteger(t) && t > 0)).toBe(true);
      const held = await moduleRef.get(LockService).acquire('report:daily');
      expect(moduleRef.get(InMemoryLocks).isLocked('report:daily')).toBe(true);
      expect(await moduleRef.get(LockService).tryAcquire('report:daily')).toBeNull();
      await held.release();
    } finally {
      await moduleRef.close();
    }
  });
});
