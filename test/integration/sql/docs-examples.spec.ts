/**
 * The examples of docs/fencing.md, run: each ORM's declaration of the token column
 * (docs/examples/sql-schemas.ts, docs/examples/prisma/account.prisma) and FencedTable with each
 * ORM's handle (docs/examples/sql-orms.ts), on a real PostgreSQL (one database per ORM) and the
 * Knex migration on a real MariaDB too.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PrismaPg } from '@prisma/adapter-pg';
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { FencedTable, type SqlHandle } from 'nest-quorum-lock/sql';
import { MariaDbServer, PostgresServer, RedlockTestingModule } from 'nest-quorum-lock/testing';
import {
  Account,
  accounts as drizzleAccounts,
  addFenceToken,
  up,
} from '../../../docs/examples/sql-schemas.js';
import {
  AccountsService,
  depositWithDrizzle,
  resetWithKnex,
  withdrawWithPrisma,
} from '../../../docs/examples/sql-orms.js';
import { closeAfterSessions } from '../../support/postgres-sessions.js';
import { generatePrismaClient } from '../../support/prisma-client.js';

const examples = join(import.meta.dirname, '..', '..', '..', 'docs', 'examples');
const table = new FencedTable<{ balance: unknown }>({ table: 'accounts' });

let server: PostgresServer;
let admin: pg.Pool;
const closers: Array<() => Promise<unknown>> = [];
/** A fresh database on the server, for one ORM's `accounts` table. */
async function database(name: string): Promise<string> {
  await admin.query(`CREATE DATABASE ${name}`);
  return server.url.replace(/\/postgres$/, `/${name}`);
}

beforeAll(async () => {
  server = await PostgresServer.start();
  admin = new pg.Pool({ connectionString: server.url, max: 2 });
}, 60_000);
afterAll(async () => {
  const failed: unknown[] = [];
  for (const close of closers.reverse()) await close().catch((err: unknown) => failed.push(err));
  await admin?.end();
  await closeAfterSessions(server); // pool.end() does not wait for its connections to close
  if (failed.length > 0) throw new AggregateError(failed, `${failed.length} handle(s) failed to close`);
});

test('TypeORM: the entity synchronised; the service withdraws under @DistributedLock in one transaction', async () => {
  const url = await database('typeorm_example');
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockTestingModule.forRoot(),
      TypeOrmModule.forRoot({ type: 'postgres', url, entities: [Account], synchronize: true }),
    ],
    providers: [AccountsService],
  }).compile();
  await moduleRef.init();
  closers.push(() => moduleRef.close());
  const dataSource = moduleRef.get(DataSource);
  await dataSource.getRepository(Account).save({ id: 'alice', balance: '100' });
  expect(await moduleRef.get(AccountsService).withdraw('alice', 30)).toBe(70);
  const stored = await dataSource.getRepository(Account).findOneByOrFail({ id: 'alice' });
  expect(stored.balance).toBe('70');
  const token = Number(stored.fenceToken);
  expect(token).toBeGreaterThan(0); // the lock's token, written by the fenced write
  // A holder with an older token is refused, through the same DataSource.
  expect(await table.write(dataSource, 'alice', token - 1, { balance: '0' })).toEqual({
    accepted: false,
    lastToken: token,
  });
});

test('Drizzle: the table declares the column; a fenced deposit in a transaction, read back through it', async () => {
  const pool = new pg.Pool({ connectionString: await database('drizzle_example'), max: 2 });
  closers.push(() => pool.end());
  await pool.query(
    'CREATE TABLE accounts (id text PRIMARY KEY, balance bigint, fence_token bigint NOT NULL DEFAULT 0)',
  );
  const db = drizzle(pool);
  expect(await depositWithDrizzle(db, 'bob', 5, 3)).toBe(true);
  expect(await depositWithDrizzle(db, 'bob', 5, 2)).toBe(false);
  expect(await db.select().from(drizzleAccounts).where(eq(drizzleAccounts.id, 'bob'))).toEqual([
    { id: 'bob', balance: 5, fenceToken: 3 },
  ]);
});

test('Prisma 7: the model of docs/fencing.md, generated; a fenced withdrawal in an interactive transaction', async () => {
  const model = readFileSync(join(examples, 'prisma', 'account.prisma'), 'utf8');
  const clientFile = generatePrismaClient('docs-postgresql', 'postgresql', model);
  const url = await database('prisma_example');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  closers.push(() => pool.end());
  await pool.query(
    'CREATE TABLE accounts (id text PRIMARY KEY, balance bigint, fence_token bigint NOT NULL DEFAULT 0)',
  );
  const { PrismaClient } = (await import(clientFile)) as {
    PrismaClient: new (options: { adapter: unknown }) => {
      $transaction<T>(fn: (tx: SqlHandle) => Promise<T>): Promise<T>;
      $disconnect(): Promise<void>;
      account: {
        findUnique(a: { where: { id: string } }): Promise<{ balance: bigint; fenceToken: bigint } | null>;
      };
    };
  };
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
  closers.push(() => prisma.$disconnect());
  await table.write(pool, 'carol', 1, { balance: '100' });
  expect(await withdrawWithPrisma(prisma, 'carol', 10, 4)).toBe(90);
  expect(await withdrawWithPrisma(prisma, 'carol', 10, 2)).toBeUndefined(); // an older holder
  expect(await prisma.account.findUnique({ where: { id: 'carol' } })).toEqual({
    id: 'carol',
    balance: 90n,
    fenceToken: 4n,
  });
});

test('Knex: the migration creates the table, the other one fences an existing table, on PostgreSQL', async () => {
  const k: Knex = knex({
    client: 'pg',
    connection: await database('knex_example'),
    pool: { min: 0, max: 2 },
  });
  closers.push(() => k.destroy());
  await up(k);
  expect(await resetWithKnex(k, 'dave', 2)).toBe(true);
  expect(await resetWithKnex(k, 'dave', 1)).toBe(false);
  const legacy: Knex = knex({
    client: 'pg',
    connection: await database('knex_legacy'),
    pool: { min: 0, max: 2 },
  });
  closers.push(() => legacy.destroy());
  await legacy.raw(
    `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint); INSERT INTO accounts VALUES ('old', 7)`,
  );
  await addFenceToken(legacy);
  expect(await table.read(legacy, 'old', 1)).toEqual({
    accepted: true,
    row: { id: 'old', balance: '7' },
    lastToken: 1,
  });
});

test('Knex: the same migration and fenced call on MariaDB', async () => {
  const maria = await MariaDbServer.start();
  const k: Knex = knex({ client: 'mysql2', connection: maria.url, pool: { min: 0, max: 2 } });
  try {
    await up(k);
    expect(await resetWithKnex(k, 'erin', 2)).toBe(true);
    expect(await resetWithKnex(k, 'erin', 1)).toBe(false);
    const [rows] = (await k.raw(`SELECT * FROM accounts`)) as [unknown[]];
    expect(rows).toEqual([{ id: 'erin', balance: 0, fence_token: 2 }]);
  } finally {
    await k.destroy();
    await maria.close();
  }
}, 60_000);

test('every schema example of docs/fencing.md is under 15 lines', () => {
  const doc = readFileSync(join(examples, '..', 'fencing.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Declaring the token column'));
  const blocks = [...section.matchAll(/```(?:ts|prisma)\n([\s\S]*?)```/g)].slice(0, 5).map((m) => m[1]!);
  expect(blocks).toHaveLength(5);
  for (const block of blocks) expect(block.trimEnd().split('\n').length).toBeLessThan(15);
});
