/**
 * The behaviours every handle of every library must show with a FencedTable on a real server
 * (issue 38's "Done when"): a write with a token is accepted, a lower token is refused with
 * nothing written, a read is accepted with the row or refused without one, and a fenced write
 * inside the library's transaction that then rolls back leaves nothing.
 */
import { FencedTable, type SqlDialect, type SqlHandle } from 'nest-quorum-lock/sql';

/** One library's handle, and how to open and roll back a transaction with it. */
export interface HandleCase {
  /** Runs `fn` with the library's transaction handle, then rolls the transaction back. */
  rolledBack(fn: (tx: SqlHandle) => Promise<void>): Promise<void>;
  /** The handle outside any transaction. */
  readonly handle: SqlHandle;
}

/** A thrown value that only rolls a test's transaction back. */
export class Rollback extends Error {}

/** Runs `body` and swallows the {@link Rollback} it ends with (and nothing else). */
export async function expectRollback(body: () => Promise<unknown>): Promise<void> {
  await expect(body()).rejects.toBeInstanceOf(Rollback);
}

/** The admin side of a test: a plain connection to read rows back and create tables. */
export interface Admin {
  readonly dialect: SqlDialect;
  exec(sql: string): Promise<void>;
  row(table: string, id: string): Promise<Record<string, unknown> | undefined>;
}

type Account = { balance: string | number | bigint | null; note: string | null };

/** Registers the behaviours for the case `name`, whose handle `get` returns once the servers are up. */
export function handleBehaviours(name: string, get: () => HandleCase, admin: () => Admin): void {
  describe(name, () => {
    const table = `fenced_${name.replace(/\W+/g, '_').toLowerCase()}`.slice(0, 60);
    const accounts = new FencedTable<Account>({ table });
    const stored = async (id: string) => {
      const row = await admin().row(table, id);
      return row && { balance: Number(row.balance), note: row.note, token: Number(row.fence_token) };
    };

    beforeAll(async () => {
      const a = admin();
      await a.exec(accounts.createTableSql({ columns: { balance: 'bigint', note: 'text' } }, a.dialect));
    });

    test('a write with a token is accepted; a lower token is refused and writes nothing', async () => {
      const { handle } = get();
      expect(await accounts.write(handle, 'alice', 10, { balance: '100', note: 'ten' })).toEqual({
        accepted: true,
        lastToken: 10,
      });
      expect(await stored('alice')).toEqual({ balance: 100, note: 'ten', token: 10 });
      expect(await accounts.write(handle, 'alice', 7, { balance: '1', note: 'stale' })).toEqual({
        accepted: false,
        lastToken: 10,
      });
      expect(await stored('alice')).toEqual({ balance: 100, note: 'ten', token: 10 });
      // The same holder writes the same values again: accepted (a changed-rows count would say 0).
      expect(await accounts.write(handle, 'alice', 10, { balance: '100', note: 'ten' })).toEqual({
        accepted: true,
        lastToken: 10,
      });
    });

    test('a read is accepted with the row; a lower token is refused, without a row', async () => {
      const { handle } = get();
      await accounts.write(handle, 'bob', 5, { balance: '50' });
      const read = await accounts.read(handle, 'bob', 6);
      expect(read.accepted).toBe(true);
      expect(read.lastToken).toBe(6);
      expect(Number(read.row?.balance)).toBe(50);
      expect(await accounts.read(handle, 'bob', 5)).toEqual({ accepted: false, lastToken: 6 });
      // The read counts: the older holder can no longer write.
      expect((await accounts.write(handle, 'bob', 5, { balance: '0' })).accepted).toBe(false);
      expect(await stored('bob')).toEqual({ balance: 50, note: null, token: 6 });
      // A read of a missing row creates it holding only its key and our token.
      const fresh = await accounts.read(handle, 'carol', 3);
      expect(fresh).toMatchObject({ accepted: true, lastToken: 3 });
      expect(fresh.row?.balance ?? null).toBeNull();
    });

    test("a fenced write inside the library's transaction that rolls back leaves nothing", async () => {
      const c = get();
      await accounts.write(c.handle, 'dave', 10, { balance: '10' });
      await c.rolledBack(async (tx) => {
        expect(await accounts.write(tx, 'dave', 20, { balance: '20' })).toEqual({
          accepted: true,
          lastToken: 20,
        });
        expect(await accounts.write(tx, 'erin', 20, { balance: '20' })).toEqual({
          accepted: true,
          lastToken: 20,
        });
        const read = await accounts.read(tx, 'dave', 20);
        expect(Number(read.row?.balance)).toBe(20); // the transaction sees its own write
      });
      expect(await stored('dave')).toEqual({ balance: 10, note: null, token: 10 });
      expect(await stored('erin')).toBeUndefined();
      // And a transaction that commits keeps it.
      expect((await accounts.write(c.handle, 'dave', 21, { balance: '21' })).accepted).toBe(true);
      expect(await stored('dave')).toEqual({ balance: 21, note: null, token: 21 });
    });
  });
}

/** What the cases use of a TypeORM DataSource (1.x and 0.3 alike). */
interface TypeOrmSource {
  initialize(): Promise<unknown>;
  destroy(): Promise<unknown>;
  transaction<T>(run: (manager: SqlHandle) => Promise<T>): Promise<T>;
  readonly manager: SqlHandle;
  createQueryRunner(): SqlHandle & {
    startTransaction(): Promise<void>;
    rollbackTransaction(): Promise<void>;
    release(): Promise<void>;
  };
}

/**
 * The cases of one TypeORM data source: the DataSource, its EntityManager (rolled back through the
 * EntityManager that transaction() hands over) and a QueryRunner.
 */
export async function typeOrmCases(
  name: string,
  dataSource: TypeOrmSource,
  closers: Array<() => Promise<unknown>>,
): Promise<Array<[string, HandleCase]>> {
  await dataSource.initialize();
  closers.push(() => dataSource.destroy());
  const viaManager = (fn: (tx: SqlHandle) => Promise<void>) =>
    expectRollback(() =>
      dataSource.transaction(async (manager) => {
        await fn(manager);
        throw new Rollback();
      }),
    );
  const runner = dataSource.createQueryRunner();
  closers.push(() => runner.release());
  return [
    [`${name} DataSource`, { handle: dataSource as unknown as SqlHandle, rolledBack: viaManager }],
    [`${name} EntityManager`, { handle: dataSource.manager, rolledBack: viaManager }],
    [
      `${name} QueryRunner`,
      {
        handle: runner,
        async rolledBack(fn) {
          await runner.startTransaction();
          try {
            await fn(runner);
          } finally {
            await runner.rollbackTransaction();
          }
        },
      },
    ],
  ];
}
