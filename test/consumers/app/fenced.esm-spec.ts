/**
 * A unit test of a service that writes through FencedWriter and a FencedTable, as an ESM NestJS 12
 * app writes it: the consumer suite copies it beside app/lock.esm-spec.ts as `test/fenced.spec.ts`
 * and runs it with Vitest and with Jest in ESM mode. RedlockTestingModule provides both stores in
 * memory from the tarball's `nest-quorum-lock/testing`: no Redis, no database, no fake of the app's.
 * Not a spec of this repository (the name keeps it out).
 */
import 'reflect-metadata';
import { Inject, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencedWriter, FencingToken } from 'nest-quorum-lock';
import { FencedTable, type SqlHandle } from 'nest-quorum-lock/sql';
import { InMemoryFencedTable, InMemoryFencedWriter, RedlockTestingModule } from 'nest-quorum-lock/testing';

const ACCOUNTS = Symbol('ACCOUNTS');
const DB = Symbol('DB');
type Account = { balance: string | null };

@Injectable()
class TransferService {
  // Explicit tokens: the test runner's transform need not emit decorator metadata.
  constructor(
    @Inject(FencedWriter) private readonly ledger: FencedWriter,
    @Inject(ACCOUNTS) private readonly accounts: FencedTable<Account>,
    @Inject(DB) private readonly db: SqlHandle,
  ) {}

  @DistributedLock('account:{0}')
  async credit(id: string, amount: number, @FencingToken() token?: number): Promise<number> {
    const read = await this.accounts.read(this.db, id, token!);
    if (!read.accepted) throw new Error('stale');
    const balance = Number(read.row.balance ?? 0) + amount;
    await this.accounts.write(this.db, id, token!, { balance: String(balance) });
    await this.ledger.hset(`ledger:${id}`, { last: amount }, token!);
    return token!;
  }
}

describe('fenced stores in memory from RedlockTestingModule (no Redis, no database)', () => {
  it('injects them, keeps the rule, and refuses an older token', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockTestingModule.forRoot({
          fencedTables: [{ provide: ACCOUNTS, table: 'accounts', columnDefaults: { balance: null } }],
        }),
      ],
      providers: [TransferService, { provide: DB, useValue: {} }],
    }).compile();
    try {
      const transfers = moduleRef.get(TransferService);
      const first = await transfers.credit('a1', 5);
      const second = await transfers.credit('a1', 7);
      expect(second).toBeGreaterThan(first);
      const accounts = moduleRef.get<InMemoryFencedTable<Account>>(ACCOUNTS);
      expect(accounts).toBeInstanceOf(FencedTable);
      expect(accounts.rowOf('a1')).toEqual({ id: 'a1', balance: '12', fence_token: second });
      const ledger = moduleRef.get(InMemoryFencedWriter);
      expect(moduleRef.get(FencedWriter)).toBe(ledger);
      expect(ledger.hashOf('ledger:a1')).toEqual({ fence: String(second), last: '7' });
      expect(await ledger.hset('ledger:a1', { last: 0 }, first)).toEqual({
        accepted: false,
        lastToken: second,
      });
      expect(await accounts.write({} as SqlHandle, 'a1', first, { balance: '0' })).toEqual({
        accepted: false,
        lastToken: second,
      });
    } finally {
      await moduleRef.close();
    }
  });
});
