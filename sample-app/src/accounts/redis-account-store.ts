import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { FencedWriter } from 'nest-quorum-lock';
import { STORE_REDIS } from '../tokens.js';
import { AccountStore, type Account } from './account-store.js';

/**
 * Accounts in Redis (STORE=redis), a hash per account. Every balance read and write under the
 * lock goes through the library's FencedWriter.
 */
@Injectable()
export class RedisAccountStore extends AccountStore implements OnApplicationShutdown {
  private readonly writer: FencedWriter;

  constructor(@Inject(STORE_REDIS) private readonly redis: Redis) {
    super();
    this.writer = new FencedWriter(redis);
  }

  async get(id: string): Promise<Account | undefined> {
    const hash = await this.redis.hgetall(key(id));
    if (hash.balance === undefined) return undefined;
    return { id, balance: Number(hash.balance), fence: Number(hash.fence ?? 0) };
  }

  async readFenced(id: string, token: number): Promise<Account | 'stale' | undefined> {
    const { accepted, fields, lastToken } = await this.writer.hgetall(key(id), token);
    if (!accepted) {
      this.count(false);
      return 'stale';
    }
    if (fields.balance === undefined) return undefined;
    return { id, balance: Number(fields.balance), fence: lastToken };
  }

  async open(id: string, balance: number): Promise<Account> {
    await this.redis.hset(key(id), { balance, fence: 0 });
    return { id, balance, fence: 0 };
  }

  async writeBalance(id: string, balance: number, token: number): Promise<boolean> {
    const { accepted } = await this.writer.hset(key(id), { balance }, token);
    return this.count(accepted);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

const key = (id: string) => `account:${id}`;
