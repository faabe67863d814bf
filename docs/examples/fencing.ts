import { ConflictException } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { FencedWriter } from 'nest-quorum-lock';

export async function saveBalance(redis: Redis, id: string, balance: number, token: number): Promise<void> {
  const store = new FencedWriter(redis); // keeps the last accepted token in the hash's "fence" field
  const { accepted } = await store.hset(`account:${id}`, { balance }, token);
  if (!accepted) throw new ConflictException('A newer lock holder has written this account');
}
