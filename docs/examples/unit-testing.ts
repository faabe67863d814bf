import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencingToken, LockService, LockSignal, Redlock, type Lock } from 'nest-quorum-lock';
import { InMemoryLocks, MemoryServer, memoryNode, RedlockTestingModule } from 'nest-quorum-lock/testing';

@Injectable()
export class ReportService {
  @DistributedLock('report:{0}', { wait: 2000 })
  async build(
    id: string,
    @FencingToken() token?: number,
    @LockSignal() signal?: AbortSignal,
  ): Promise<string> {
    signal?.throwIfAborted();
    return `${id} built under token ${token}`;
  }
}

export async function unitTestWithoutRedis(): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot()], // the real LockService and decorators, on memory
    providers: [ReportService],
  }).compile();
  await moduleRef.init();
  const reports = moduleRef.get(ReportService);
  await reports.build('daily'); // locked, fenced, released: no Redis, no sockets
  await moduleRef.get(InMemoryLocks).loseLock('report:daily'); // a held lock's @LockSignal aborts
  await moduleRef.close(); // nothing left open: the test process exits
}

export async function unitTestWithADouble(): Promise<void> {
  const fakeLock = { fencingToken: 42, signal: new AbortController().signal } as Lock;
  const locks: Pick<LockService, 'using'> = {
    using: (_keys, fn) => Promise.resolve(fn(fakeLock)), // what @DistributedLock calls
  };
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot()],
    providers: [ReportService],
  })
    .overrideProvider(LockService)
    .useValue(locks)
    .compile();
  await moduleRef.get(ReportService).build('daily'); // -> 'daily built under token 42'
  await moduleRef.close();
}

export async function inMemoryServersThatFail(): Promise<number> {
  const servers = [new MemoryServer(), new MemoryServer(), new MemoryServer()];
  const engine = new Redlock({ nodes: servers.map((server) => memoryNode(server)), restartGuard: false });
  const lock = await engine.acquire('report:daily');
  servers[0]!.restart({ keepData: false }); // one voter crashes and comes back empty
  servers[1]!.stepClock(-5_000); // another one's wall clock steps back 5 s
  await lock.extend(); // still held: a majority keeps it
  await lock.release();
  await engine.close();
  return lock.fencingToken;
}
