import { ConflictException } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { FencedWriter } from 'nest-quorum-lock';

export async function withdraw(redis: Redis, id: string, amount: number, token: number): Promise<number> {
  const store = new FencedWriter(redis); // keeps the highest token that read or wrote the hash in "fence"
  const read = await store.hgetall(`account:${id}`, token); // a fenced read: records us as the newest reader
  if (!read.accepted) throw new ConflictException('A newer lock holder has read this account');
  const balance = Number(read.fields.balance) - amount;
  const { accepted } = await store.hset(`account:${id}`, { balance }, token); // refused if a newer token came
  if (!accepted) throw new ConflictException('A newer lock holder has written this account');
  return balance;
}
