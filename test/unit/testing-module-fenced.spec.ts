import 'reflect-metadata';
import { Global, Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLock, FencedWriter, FencingToken, LockService } from 'nest-quorum-lock';
import {
  FencedTable,
  InvalidFencedValuesError,
  InvalidIdentifierError,
  type SqlHandle,
} from 'nest-quorum-lock/sql';
import { InMemoryFencedTable, InMemoryFencedWriter, RedlockTestingModule } from 'nest-quorum-lock/testing';
import { DataSource } from 'typeorm';
import {
  ACCOUNTS,
  ACCOUNTS_TABLE,
  AccountsModule,
  AccountsService,
  STORE_REDIS,
  WalletModule,
  WalletService,
  unitTestWithFencedTable,
  unitTestWithFencedWriter,
} from '../../docs/examples/fenced-doubles.js';

/*
 * The fenced stores in memory, as a user's unit test gets them: by injection from
 * RedlockTestingModule, without Redis or a database and without a fake of their own. (That the
 * doubles keep the real stores' rule: test/integration/fencing/fenced-doubles.spec.ts.)
 */

/** A database handle: the in-memory table does not use it. */
const noDb = {} as SqlHandle;

/** A user's service that reads and writes under the lock through both stores. */
@Injectable()
class LedgerService {
  constructor(
    readonly store: FencedWriter,
    @Inject(ACCOUNTS) readonly accounts: FencedTable<{ balance: string | null }>,
  ) {}

  @DistributedLock('ledger:{0}')
  async post(id: string, @FencingToken() token?: number): Promise<number> {
    await this.store.hset(`ledger:${id}`, { posted: token! }, token!);
    await this.accounts.write(noDb, id, token!, { balance: String(token) });
    return token!;
  }
}

const withAccounts = () =>
  RedlockTestingModule.forRoot({ fencedTables: [{ provide: ACCOUNTS, table: 'accounts' }] });

describe('RedlockTestingModule provides the fenced stores in memory', () => {
  test('a service that injects FencedWriter compiles with RedlockTestingModule.forRoot() alone', async () => {
    // Before: "Nest can't resolve dependencies of the WalletService (?) ... FencedWriter at index [0]".
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [WalletService],
    }).compile();
    try {
      const store = moduleRef.get(FencedWriter);
      expect(store).toBeInstanceOf(FencedWriter);
      expect(store).toBe(moduleRef.get(InMemoryFencedWriter));
      expect(store.fenceField).toBe('fence');
    } finally {
      await moduleRef.close();
    }
  });

  test('docs/testing.md: the FencedWriter example runs as a unit test', async () => {
    await unitTestWithFencedWriter();
  });

  test('docs/testing.md: the FencedTable example runs as a unit test', async () => {
    await unitTestWithFencedTable();
  });

  test('each lock grant writes with a higher token; an older holder is refused by both stores', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [withAccounts()],
      providers: [LedgerService],
    }).compile();
    try {
      const ledger = moduleRef.get(LedgerService);
      const first = await ledger.post('l1');
      const second = await ledger.post('l1');
      expect(second).toBeGreaterThan(first);
      const store = moduleRef.get(InMemoryFencedWriter);
      expect(store.hashOf('ledger:l1')).toEqual({ fence: String(second), posted: String(second) });
      const accounts = moduleRef.get<InMemoryFencedTable<{ balance: string | null }>>(ACCOUNTS);
      expect(accounts).toBeInstanceOf(FencedTable);
      expect(accounts.rowOf('l1')).toEqual({ id: 'l1', balance: String(second), fence_token: second });
      // The first holder, paused past its lease, comes back with its token:
      expect(await ledger.store.hset('ledger:l1', { posted: first }, first)).toEqual({
        accepted: false,
        lastToken: second,
      });
      expect(await ledger.accounts.write(noDb, 'l1', first, { balance: 'stale' })).toEqual({
        accepted: false,
        lastToken: second,
      });
      expect(await ledger.accounts.read(noDb, 'l1', first)).toEqual({ accepted: false, lastToken: second });
      expect(accounts.rowOf('l1')).toMatchObject({ balance: String(second) });
    } finally {
      await moduleRef.close();
    }
  });

  test('every compiled module gets stores of its own, also from one forRoot() result', async () => {
    const testing = withAccounts();
    const compile = () =>
      Test.createTestingModule({ imports: [testing], providers: [LedgerService] }).compile();
    const [a, b] = [await compile(), await compile()];
    try {
      await a.get(LedgerService).post('x');
      expect(a.get(InMemoryFencedWriter)).not.toBe(b.get(InMemoryFencedWriter));
      expect(a.get(InMemoryFencedWriter).hashOf('ledger:x')).toBeDefined();
      expect(b.get(InMemoryFencedWriter).hashOf('ledger:x')).toBeUndefined();
      expect(b.get<InMemoryFencedTable>(ACCOUNTS).rowOf('x')).toBeUndefined();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("fencedWriter: { fenceField } matches the app's writer; false provides none", async () => {
    const custom = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ fencedWriter: { fenceField: 'version' } })],
    }).compile();
    try {
      const store = custom.get(FencedWriter);
      await store.hset('k', { a: 1 }, 3);
      expect(custom.get(InMemoryFencedWriter).hashOf('k')).toEqual({ version: '3', a: '1' });
    } finally {
      await custom.close();
    }
    await expect(
      Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot({ fencedWriter: false })],
        providers: [WalletService],
      }).compile(),
    ).rejects.toThrow(/FencedWriter/);
  });

  test("a FencedWriter provided by the test's own module wins over the testing module's", async () => {
    const own = new InMemoryFencedWriter('own');
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [WalletService, { provide: FencedWriter, useValue: own }],
    }).compile();
    try {
      expect((moduleRef.get(WalletService) as unknown as { store: FencedWriter }).store).toBe(own);
    } finally {
      await moduleRef.close();
    }
  });

  test('bad fenced options fail when forRoot is called, with the real table checks', () => {
    const table = (entry: object) => () =>
      RedlockTestingModule.forRoot({ fencedTables: [entry as { provide: symbol; table: string }] });
    expect(table({ table: 'accounts' })).toThrow(
      new TypeError(
        'fencedTables[0] needs `provide`: the token your application provides that FencedTable under.',
      ),
    );
    expect(table({ provide: ACCOUNTS, table: '' })).toThrow(InvalidIdentifierError);
    expect(table({ provide: ACCOUNTS, table: 'a'.repeat(64) })).toThrow(InvalidIdentifierError);
    expect(table({ provide: ACCOUNTS, table: 'a', columnDefaults: { id: 'x' } })).toThrow(
      InvalidFencedValuesError,
    );
    expect(() =>
      RedlockTestingModule.forRoot({
        fencedTables: [
          { provide: ACCOUNTS, table: 'a' },
          { provide: ACCOUNTS, table: 'b' },
        ],
      }),
    ).toThrow('fencedTables[1]: the token Symbol(ACCOUNTS) is given twice.');
    expect(() => RedlockTestingModule.forRoot({ fencedWriter: { fenceField: '' } })).toThrow(TypeError);
  });

  test('the in-memory table checks what the real one checks, and ignores the handle', async () => {
    const t = new InMemoryFencedTable<{ balance: number }>({ table: 'accounts', keyColumn: 'code' });
    await expect(t.write(undefined as unknown as SqlHandle, 'k', 1, {})).resolves.toEqual({
      accepted: true,
      lastToken: 1,
    });
    await expect(t.write(noDb, null, 1, {})).rejects.toThrow(InvalidFencedValuesError);
    await expect(t.write(noDb, 'k', 1, { code: 'x' } as object)).rejects.toThrow(InvalidFencedValuesError);
    await expect(t.read(noDb, 'k', 0)).rejects.toMatchObject({ name: 'InvalidFencingTokenError' });
    await expect(t.ensureTable(noDb, { columns: { ['']: 'text' } })).rejects.toThrow(InvalidIdentifierError);
    t.seed('old', { balance: 5 }, 40);
    expect(await t.write(noDb, 'old', 39, { balance: 6 })).toEqual({ accepted: false, lastToken: 40 });
    expect(await t.read(noDb, 'old', 41)).toEqual({
      accepted: true,
      row: { code: 'old', balance: 5 },
      lastToken: 41,
    });
    expect(t.qualifiedName).toBe('"accounts"');
  });

  test('LockService is still the in-memory one beside the stores', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [withAccounts()] }).compile();
    try {
      const lock = await moduleRef.get(LockService).acquire('ledger:z');
      const { lastToken } = await moduleRef.get(FencedWriter).hgetall('ledger:z', lock.fencingToken);
      expect(lastToken).toBe(lock.fencingToken);
      await lock.release();
    } finally {
      await moduleRef.close();
    }
  });

  test("docs/testing.md: a whole app's own stores are replaced with overrideProvider", async () => {
    let clientsMade = 0;
    @Global()
    @Module({
      providers: [
        { provide: STORE_REDIS, useFactory: () => ++clientsMade }, // stands for the app's Redis client
        { provide: DataSource, useFactory: () => ++clientsMade },
      ],
      exports: [STORE_REDIS, DataSource],
    })
    class ConnectionsModule {}
    @Module({ imports: [ConnectionsModule, WalletModule, AccountsModule, RedlockTestingModule.forRoot()] })
    class AppModule {}

    const writer = new InMemoryFencedWriter().seed('wallet:w', { balance: 3 });
    const table = new InMemoryFencedTable(ACCOUNTS_TABLE);
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(FencedWriter)
      .useValue(writer)
      .overrideProvider(ACCOUNTS)
      .useValue(table)
      .overrideProvider(STORE_REDIS)
      .useValue({})
      .overrideProvider(DataSource)
      .useValue({})
      .compile();
    try {
      expect(clientsMade).toBe(0);
      const wallet = moduleRef.get(WalletService, { strict: false });
      const accounts = moduleRef.get(AccountsService, { strict: false });
      expect(await accounts.deposit('a', 5)).toBe(5);
      expect(table.rowOf('a')).toMatchObject({ balance: '5' });
      expect(await wallet.withdraw('w', 1)).toBe(2);
      expect(writer.hashOf('wallet:w')).toMatchObject({ balance: '2' });
    } finally {
      await moduleRef.close();
    }
  });
});
