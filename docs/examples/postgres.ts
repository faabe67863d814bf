import { ConflictException, Inject, Injectable } from '@nestjs/common';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';
import { FencedTable } from 'nest-quorum-lock/postgres';
import type { Pool } from 'pg';

export const PG_POOL = Symbol('PG_POOL');

const accounts = new FencedTable<{ id: string; balance: string }>({ table: 'accounts' }); // key "id", token "fence_token"

@Injectable()
export class AccountsService {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {} // a pg Pool your database module provides

  @DistributedLock('account:{0}')
  async withdraw(id: string, amount: number, @FencingToken() token?: number): Promise<number> {
    const read = await accounts.read(this.pool, id, token!); // records us as the row's newest reader
    if (!read.accepted) throw new ConflictException('A newer lock holder has read this account');
    const balance = Number(read.row.balance) - amount;
    const { accepted } = await accounts.write(this.pool, id, token!, { balance: String(balance) });
    if (!accepted) throw new ConflictException('A newer lock holder has read or written this account');
    return balance;
  }
}

export async function createSchema(pool: Pool): Promise<void> {
  // Or put accounts.createTableSql(...) / accounts.addTokenColumnSql() in a migration.
  await accounts.ensureTable(pool, { columns: { balance: 'bigint NOT NULL DEFAULT 0' } });
}
