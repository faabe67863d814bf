// docs/testing.md, "Fenced stores in memory": services that inject FencedWriter and a FencedTable,
// their production providers, and unit tests that get in-memory ones from RedlockTestingModule.
// Type-checked by `npm run lint`; test/unit/testing-module-fenced.spec.ts runs the tests.
import { ConflictException, Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { DistributedLock, FencedWriter, FencingToken } from 'nest-quorum-lock';
import { FencedTable, type SqlHandle } from 'nest-quorum-lock/sql';
import {
  InMemoryFencedWriter,
  RedlockTestingModule,
  type InMemoryFencedTable,
} from 'nest-quorum-lock/testing';
import { DataSource } from 'typeorm';

/** The app's own token for its Redis client (the store, not the lock nodes). */
export const STORE_REDIS = Symbol('STORE_REDIS');

@Injectable()
export class WalletService {
  constructor(private readonly store: FencedWriter) {} // injected: a real one in the app, in memory in tests

  @DistributedLock('wallet:{0}')
  async withdraw(id: string, amount: number, @FencingToken() token?: number): Promise<number> {
    const read = await this.store.hgetall(`wallet:${id}`, token!);
    if (!read.accepted) throw new ConflictException('A newer lock holder has read this wallet');
    const balance = Number(read.fields.balance) - amount;
    const { accepted } = await this.store.hset(`wallet:${id}`, { balance }, token!);
    if (!accepted) throw new ConflictException('A newer lock holder has written this wallet');
    return balance;
  }
}

@Module({
  providers: [
    // The writer on the app's Redis client (provided by the app under STORE_REDIS), under its class.
    { provide: FencedWriter, inject: [STORE_REDIS], useFactory: (redis: Redis) => new FencedWriter(redis) },
    WalletService,
  ],
})
export class WalletModule {}

export async function unitTestWithFencedWriter(): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot()], // LockService and FencedWriter, in memory
    providers: [WalletService],
  }).compile();
  const store = moduleRef.get(InMemoryFencedWriter).seed('wallet:7', { balance: 100 }); // a plain HSET
  expect(await moduleRef.get(WalletService).withdraw('7', 30)).toBe(70);
  const { fence } = store.hashOf('wallet:7')!; // the hash as HGETALL shows it: the token that wrote it
  expect(store.hashOf('wallet:7')).toEqual({ balance: '70', fence });
  // A holder whose lock has passed on (its token is below the one recorded) is refused:
  expect(await store.hset('wallet:7', { balance: 0 }, Number(fence) - 1)).toMatchObject({ accepted: false });
  await moduleRef.close();
}

/** The app's own token for its accounts table, and the table's options (shared with the tests). */
export const ACCOUNTS = Symbol('ACCOUNTS');
export const ACCOUNTS_TABLE = { table: 'accounts' };
export type Account = { balance: string | null };

@Injectable()
export class AccountsService {
  constructor(
    @Inject(ACCOUNTS) private readonly accounts: FencedTable<Account>,
    private readonly dataSource: DataSource, // from TypeOrmModule.forRoot(...)
  ) {}

  @DistributedLock('account:{0}')
  async deposit(id: string, amount: number, @FencingToken() token?: number): Promise<number> {
    const db: SqlHandle = this.dataSource;
    const read = await this.accounts.read(db, id, token!);
    if (!read.accepted) throw new ConflictException('A newer lock holder has read this account');
    const balance = Number(read.row.balance ?? 0) + amount;
    const { accepted } = await this.accounts.write(db, id, token!, { balance: String(balance) });
    if (!accepted) throw new ConflictException('A newer lock holder has written this account');
    return balance;
  }
}

@Module({
  providers: [{ provide: ACCOUNTS, useValue: new FencedTable<Account>(ACCOUNTS_TABLE) }, AccountsService],
})
export class AccountsModule {}

export async function unitTestWithFencedTable(): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockTestingModule.forRoot({
        fencedTables: [{ provide: ACCOUNTS, ...ACCOUNTS_TABLE, columnDefaults: { balance: null } }],
      }),
    ],
    providers: [AccountsService, { provide: DataSource, useValue: {} }], // the in-memory table does not use it
  }).compile();
  const accounts = moduleRef.get<InMemoryFencedTable<Account>>(ACCOUNTS).seed('a1', { balance: '10' });
  expect(await moduleRef.get(AccountsService).deposit('a1', 5)).toBe(15);
  expect(accounts.rowOf('a1')).toMatchObject({ id: 'a1', balance: '15' }); // and fence_token: the token
  await moduleRef.close();
}
