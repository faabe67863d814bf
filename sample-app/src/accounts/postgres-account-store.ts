import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Pool } from 'pg';
import { FencedTable } from 'nest-quorum-lock/postgres';
import { STORE_PG } from '../tokens.js';
import { AccountStore, type Account } from './account-store.js';

/** The `accounts` table: a NULL balance is an account that was never opened (see readFenced). */
export const ACCOUNTS = new FencedTable<{ id: string; balance: string | null }>({ table: 'accounts' });

/**
 * Accounts in PostgreSQL (the default store), one row each in `accounts (id, balance,
 * fence_token)`. Balance reads and writes under the lock go through the library's FencedTable:
 * one statement each, accepted only while no higher fencing token has touched the row.
 */
@Injectable()
export class PostgresAccountStore extends AccountStore implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(STORE_PG) private readonly pool: Pool) {
    super();
  }

  /** Creates the table if needed (a real application would run a migration instead). */
  async onModuleInit(): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Instances starting together would race on CREATE TABLE IF NOT EXISTS: one at a time.
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('sample-app accounts schema'))`);
      await ACCOUNTS.ensureTable(client, { columns: { balance: 'bigint' } });
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async get(id: string): Promise<Account | undefined> {
    const { rows } = await this.pool.query<{ balance: string | null; fence_token: string }>(
      'SELECT balance, fence_token FROM accounts WHERE id = $1',
      [id],
    );
    const row = rows[0];
    if (!row || row.balance === null) return undefined;
    return { id, balance: Number(row.balance), fence: Number(row.fence_token) };
  }

  async readFenced(id: string, token: number): Promise<Account | 'stale' | undefined> {
    // A fenced read of a missing account records the token in a new row with a NULL balance, so
    // that no older holder can create the account behind this reader's back.
    const { accepted, row, lastToken } = await ACCOUNTS.read(this.pool, id, token);
    if (!accepted) {
      this.count(false);
      return 'stale';
    }
    if (row.balance === null) return undefined;
    return { id, balance: Number(row.balance), fence: lastToken };
  }

  async open(id: string, balance: number): Promise<Account> {
    await this.pool.query(
      'INSERT INTO accounts (id, balance, fence_token) VALUES ($1, $2, 0) ' +
        'ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, fence_token = 0',
      [id, balance],
    );
    return { id, balance, fence: 0 };
  }

  async writeBalance(id: string, balance: number, token: number): Promise<boolean> {
    const { accepted } = await ACCOUNTS.write(this.pool, id, token, { balance: String(balance) });
    return this.count(accepted);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
