import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService, LockUsageError, Redlock } from '../../lib/index.js';
import { MemoryServer, memoryNode, RedlockTestingModule } from '../../lib/testing/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user's service: at most two GPU jobs at once, across every instance. */
@Injectable()
class GpuJobs {
  running = 0;
  most = 0;
  readonly tokens: number[] = [];

  @DistributedLock('gpu', { permits: 2, wait: 5000 })
  async render(ms: number, @FencingToken() token?: number): Promise<void> {
    this.most = Math.max(this.most, ++this.running);
    this.tokens.push(token!);
    await sleep(ms);
    this.running--;
  }
}

describe('semaphores on the in-memory voter (RedlockTestingModule)', () => {
  let moduleRef: TestingModule;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ ttl: 1000 })],
      providers: [GpuJobs],
    }).compile();
    await moduleRef.init();
  });
  afterAll(() => moduleRef?.close());

  test('@DistributedLock with permits: at most k at once, every call served', async () => {
    const jobs = moduleRef.get(GpuJobs);
    await Promise.all(Array.from({ length: 6 }, () => jobs.render(20)));
    expect(jobs.most).toBe(2);
    expect(jobs.tokens).toHaveLength(6);
  });

  test('LockService: the permit and mode on the handle; a plain lock on the same key is a typed error', async () => {
    const locks = moduleRef.get(LockService);
    const one = await locks.acquire('pool', { permits: 3 });
    const two = await locks.acquire('pool', { permits: 3 });
    expect([one.permit, two.permit]).toEqual([0, 1]);
    expect(one.mode).toBe('write');
    await expect(locks.acquire('pool')).rejects.toThrow(LockUsageError);
    await Promise.all([one.release(), two.release()]);
  });
});

describe('semaphores on three in-memory voters: a slot granted on a minority is given back', () => {
  test('a minority grant is given back; a split vote is proposed again with the slot free on a majority first', async () => {
    const states = [new MemoryServer(), new MemoryServer(), new MemoryServer()];
    const engine = new Redlock({
      nodes: states.map((state) => memoryNode(state)),
      restartGuard: false,
      preflight: 'off',
    });
    await engine.connect();
    // Voter 0 has slot 0 held by someone else (a client cut off from the others).
    states[0]!.set('redlock:{split}:permit:0', 'other:0', 10_000);
    const lock = await engine.acquire('split', { permits: 2 });
    expect(lock.permit).toBe(0); // nodes 1 and 2 granted slot 0
    expect(states[0]!.get('redlock:{split}:permit:1')).toBeUndefined(); // node 0's slot 1 given back
    // Voter 1 now has slot 1 held by someone else as well: slot 1 is free on voters 0 and 2 only.
    states[1]!.set('redlock:{split}:permit:1', 'other:1', 10_000);
    const second = engine.tryAcquire('split', { permits: 2 });
    await expect(second).resolves.toMatchObject({ permit: 1 });
    await lock.release();
    await (await second)!.release();
    // A split: voter 0 grants slot 0, voter 1 slot 1, voter 2 is full. Slot 1 is free on a
    // majority (0 and 1): the next round proposes it first to every voter, and wins it.
    states[1]!.set('redlock:{resplit}:permit:0', 'other:2', 10_000);
    states[2]!.set('redlock:{resplit}:permit:0', 'other:3', 10_000);
    states[2]!.set('redlock:{resplit}:permit:1', 'other:4', 10_000);
    const third = await engine.tryAcquire('resplit', { permits: 2 });
    expect(third?.permit).toBe(1);
    expect(states[0]!.get('redlock:{resplit}:permit:0')).toBeUndefined(); // the minority grant, given back
    await third!.release();
    await engine.close();
  });
});
