/**
 * nest-quorum-lock/sql without a database: what it imports, and the errors for handles it does
 * not take (each before any SQL is sent). The behaviour on real servers is in test/integration/sql.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { FencedTable, InvalidFencedValuesError } from 'nest-quorum-lock/sql';

const lib = join(import.meta.dirname, '..', '..', 'lib');

/** The bare packages the modules reachable from `entry` import statically (runtime and type-only). */
function packagesOf(entry: string): { runtime: Set<string>; typeOnly: Set<string>; files: number } {
  const seen = new Set<string>();
  const runtime = new Set<string>();
  const typeOnly = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gm)) {
      const [, type, spec] = m;
      if (spec!.startsWith('.')) visit(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      else (type ? typeOnly : runtime).add(spec!);
    }
  };
  visit(join(lib, entry));
  return { runtime, typeOnly, files: seen.size };
}

test('nest-quorum-lock/sql imports no package, not even the types of an ORM or a driver', () => {
  const { runtime, typeOnly, files } = packagesOf(join('fencing', 'sql', 'index.ts'));
  expect(files).toBeGreaterThanOrEqual(15);
  expect([...runtime]).toEqual([]);
  expect([...typeOnly]).toEqual([]);
});

describe('handles FencedTable does not take: a TypeError naming what it takes, no SQL sent', () => {
  const table = new FencedTable({ table: 'accounts' });
  const accepted =
    /node-postgres Pool.*TypeORM DataSource.*Prisma client.*Drizzle db.*Knex.*Kysely.*mysql2 Pool/;

  test.each([
    ['an empty object', {}],
    ['null', null],
    ['a string', 'postgres://localhost/db'],
    ['a class instance without a query method', new (class Sequelize {})()],
  ])('%s', async (_, handle) => {
    await expect(table.write(handle as never, 'a', 1)).rejects.toThrow(TypeError);
    await expect(table.read(handle as never, 'a', 1)).rejects.toThrow(accepted);
  });

  test("a TypeORM DataSource of another database names the database's type", async () => {
    const sqlite = {
      options: { type: 'sqlite' },
      query: async () => [],
      getRepository: () => undefined,
      transaction: async () => undefined,
      createQueryRunner: () => undefined,
    };
    await expect(table.write(sqlite as never, 'a', 1)).rejects.toThrow(
      /supports PostgreSQL and MariaDB\/MySQL; got a TypeORM data-source of another database \(type sqlite\)/,
    );
  });

  test('a Knex instance of another client names it', async () => {
    const knexSqlite = Object.assign(() => undefined, {
      raw: async () => [],
      transaction: async () => undefined,
      client: { dialect: 'sqlite3' },
    });
    await expect(table.write(knexSqlite as never, 'a', 1)).rejects.toThrow(/a Knex instance for sqlite3/);
  });

  test('a handle of the other dialect than the one given', async () => {
    const sent: string[] = [];
    const pgLike = { query: async (text: string) => (sent.push(text), { rows: [], rowCount: 0 }) };
    const mysqlTable = new FencedTable({ table: 'accounts', dialect: 'mysql' });
    await expect(mysqlTable.write(pgLike, 'a', 1)).rejects.toThrow(
      /dialect 'mysql', but the handle is a PostgreSQL one/,
    );
    expect(sent).toEqual([]);
    expect(() => new FencedTable({ table: 'accounts', dialect: 'sqlite' as never })).toThrow(
      InvalidFencedValuesError,
    );
  });
});
