import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { FencedTable } from 'nest-quorum-lock/sql';
import { AccountRow } from './account.entity.js';
import { AccountStore, type Account } from './account-store.js';

/** The `accounts` table: a NULL balance is an account that was never opened (see readFenced). */
export const ACCOUNTS = new FencedTable<{ id: string; balance: string | null }>({ table: 'accounts' });

/**
 * Accounts in PostgreSQL (the default store), one row each in `accounts (id, balance,
 * fence_token)`, reached through TypeORM (`@nestjs/typeorm`'s DataSource, the AccountRow entity).
 * Balance reads and writes under the lock go through the library's FencedTable, handed the
 * DataSource: one statement each, accepted only while no higher fencing token has touched the row.
 */
@Injectable()
export class PostgresAccountStore extends AccountStore implements OnModuleInit {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  /** Creates the table if needed (a real application would run a migration instead). */
  async onModuleInit(): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      // Instances starting together would race on CREATE TABLE IF NOT EXISTS: one at a time.
      await manager.query(`SELECT pg_advisory_xact_lock(hashtext('sample-app accounts schema'))`);
      await ACCOUNTS.ensureTable(manager, { columns: { balance: 'bigint' } });
    });
  }

  async get(id: string): Promise<Account | undefined> {
    const row = await this.dataSource.getRepository(AccountRow).findOneBy({ id });
    if (!row || row.balance === null) return undefined;
    return { id, balance: Number(row.balance), fence: Number(row.fenceToken) };
  }

  async readFenced(id: string, token: number): Promise<Account | 'stale' | undefined> {
    // A fenced read of a missing account records the token in a new row with a NULL balance, so
    // that no older holder can create the account behind this reader's back.
    const read = await ACCOUNTS.read(this.dataSource, id, token);
    if (!read.accepted) {
      this.count(false);
      return 'stale';
    }
    if (read.row.balance === null) return undefined;
    return { id, balance: Number(read.row.balance), fence: read.lastToken };
  }

  async open(id: string, balance: number): Promise<Account> {
    await this.dataSource
      .getRepository(AccountRow)
      .upsert({ id, balance: String(balance), fenceToken: '0' }, ['id']);
    return { id, balance, fence: 0 };
  }

  async writeBalance(id: string, balance: number, token: number): Promise<boolean> {
    const { accepted } = await ACCOUNTS.write(this.dataSource, id, token, { balance: String(balance) });
    return this.count(accepted);
  }
}
