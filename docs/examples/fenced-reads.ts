// docs/fencing.md, "A fenced read raises the token": what a test of FencedWriter asserts. Type-checked
// by `npm run lint`; test/integration/fencing/docs-fenced-reads.spec.ts runs it on a real node.
import type { Redis } from 'ioredis';
import { FencedWriter } from 'nest-quorum-lock';

// In a test (Jest or Vitest): a fenced read is a write of the token, so assert what it leaves.
export async function fencedReadRaisesTheToken(redis: Redis): Promise<void> {
  const store = new FencedWriter(redis);
  // The newer holder (token 8) only reads: its token is recorded, the hash created if need be.
  expect(await store.hgetall('account:7', 8)).toEqual({ accepted: true, fields: {}, lastToken: 8 });
  expect(await redis.hgetall('account:7')).toEqual({ fence: '8' });
  // The older holder (token 7) is now stale: its write and its read are refused, nothing changes.
  expect(await store.hset('account:7', { balance: 100 }, 7)).toEqual({ accepted: false, lastToken: 8 });
  expect(await store.hgetall('account:7', 7)).toMatchObject({ accepted: false, lastToken: 8 });
  expect(await redis.hget('account:7', 'balance')).toBeNull();
}
