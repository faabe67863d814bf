import { Test } from '@nestjs/testing';
import { RedlockModule, LockService } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';

export async function lockedTestExample(): Promise<void> {
  const redis = await RedisNodes.start(3); // real redis-server processes on free ports
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: redis.urls })], // recorded fresh: they vote at once, guard on
    }).compile();
    const app = await moduleRef.createNestApplication().init();
    await app.get(LockService).using('job', async () => {
      redis.stop(0); // SIGSTOP one node: the lock keeps working on the other two
    });
    redis.resume(0);
    await app.close();
  } finally {
    await redis.close(); // ends every node by pid
  }
}

/** docs/testing.md, "Another server": nodes of another server binary. */
export async function valkeyNodesExample(): Promise<string> {
  const valkey = await RedisNodes.start(3, { serverBinary: 'valkey-server' }); // or REDIS_SERVER_BIN
  const { name, version } = valkey.server; // 'valkey', '8.0.1': what the binary says it is
  await valkey.close();
  return `${name} ${version}`;
}
