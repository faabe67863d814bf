/**
 * FencedTable with the handle each ORM gives (docs/fencing.md). Run by
 * test/integration/sql/docs-examples.spec.ts on a real PostgreSQL (and the Knex one on MariaDB).
 */
import { ConflictException, Injectable } from '@nestjs/common';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { Knex } from 'knex';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';
import { FencedTable, type SqlHandle } from 'nest-quorum-lock/sql';
import { DataSource } from 'typeorm';

/** Your generated PrismaClient (`prisma generate`), as far as these examples use it. */
interface PrismaClient {
  $transaction<T>(fn: (tx: SqlHandle) => Promise<T>): Promise<T>;
}

const accounts = new FencedTable<{ balance: string | number | bigint | null }>({ table: 'accounts' });

@Injectable()
export class AccountsService {
  constructor(private readonly dataSource: DataSource) {} // from TypeOrmModule.forRoot(...)

  @DistributedLock('account:{0}')
  async withdraw(id: string, amount: number, @FencingToken() token?: number): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      const read = await accounts.read(manager, id, token!); // part of this transaction
      if (!read.accepted) throw new ConflictException('A newer lock holder has read this account');
      const balance = Number(read.row.balance) - amount;
      const { accepted } = await accounts.write(manager, id, token!, { balance: String(balance) });
      if (!accepted) throw new ConflictException('A newer lock holder has written this account');
      return balance;
    });
  }
}

export async function withdrawWithPrisma(prisma: PrismaClient, id: string, amount: number, token: number) {
  return prisma.$transaction(async (tx) => {
    const read = await accounts.read(tx, id, token);
    if (!read.accepted) return undefined; // a newer holder has read the row
    const balance = Number(read.row.balance) - amount;
    return (await accounts.write(tx, id, token, { balance })).accepted ? balance : undefined;
  });
}

export async function depositWithDrizzle(db: NodePgDatabase, id: string, amount: number, token: number) {
  return db.transaction(async (tx) => {
    const read = await accounts.read(tx, id, token);
    if (!read.accepted) return false;
    return (await accounts.write(tx, id, token, { balance: Number(read.row.balance) + amount })).accepted;
  });
}

export async function resetWithKnex(knex: Knex, id: string, token: number) {
  return (await accounts.write(knex, id, token, { balance: 0 })).accepted; // one call: no transaction needed
}
