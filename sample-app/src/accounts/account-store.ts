import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { FencedWriter } from 'nest-quorum-lock';
import { STORE_REDIS } from '../tokens.js';

/** An account as stored: balance in cents, and the fencing token of the last accepted write. */
export interface Account {
  readonly id: string;
  readonly balance: number;
  readonly fence: number;
}

/** Fenced-write statistics of this instance (for the demo's table). */
export interface StoreStats {
  accepted: number;
  rejected: number;
}

/**
 * The application's database (a Redis hash per account). Every balance write goes through the
 * library's FencedWriter: it is applied only if the lock's fencing token is higher than the last
 * one accepted for the account, so a paused instance that lost its lock cannot overwrite.
 */
@Injectable()
export class AccountStore implements OnApplicationShutdown {
  private readonly writer: FencedWriter;
  readonly stats: StoreStats = { accepted: 0, rejected: 0 };

  constructor(@Inject(STORE_REDIS) private readonly redis: Redis) {
    this.writer = new FencedWriter(redis);
  }

  async get(id: string): Promise<Account | undefined> {
    const hash = await this.redis.hgetall(key(id));
    if (hash.balance === undefined) return undefined;
    return { id, balance: Number(hash.balance), fence: Number(hash.fence ?? 0) };
  }

  /**
   * Reads an account for a read-modify-write under the lock: records `token` as its newest
   * reader, so a paused older holder can no longer write a balance computed before this read.
   * Resolves `stale` when a newer holder has already read or written it.
   */
  async readFenced(id: string, token: number): Promise<Account | 'stale' | undefined> {
    const { accepted, fields, lastToken } = await this.writer.hgetall(key(id), token);
    if (!accepted) {
      this.stats.rejected++;
      return 'stale';
    }
    if (fields.balance === undefined) return undefined;
    return { id, balance: Number(fields.balance), fence: lastToken };
  }

  /** Creates or resets an account (no fence check: an administrative write). */
  async open(id: string, balance: number): Promise<Account> {
    await this.redis.hset(key(id), { balance, fence: 0 });
    return { id, balance, fence: 0 };
  }

  /** Writes the new balance unless a newer token has read or written the account. */
  async writeBalance(id: string, balance: number, token: number): Promise<boolean> {
    const { accepted } = await this.writer.hset(key(id), { balance }, token);
    if (accepted) this.stats.accepted++;
    else this.stats.rejected++;
    return accepted;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

const key = (id: string) => `account:${id}`;
