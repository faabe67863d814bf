/**
 * FencedTable's MariaDB dialect on a real MariaDB (one server for the file, by MariaDbServer): the
 * cases PostgreSQL's spec covers that depend on the dialect (NOT NULL columns without defaults,
 * concurrent writers, read-modify-writes of overlapping holders, hostile names, ensureTable on an
 * existing table), and the launcher itself.
 */
import { existsSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { FencedTable, InvalidIdentifierError } from 'nest-quorum-lock/sql';
import { MariaDbServer } from 'nest-quorum-lock/testing';

describe('FencedTable on a real MariaDB (dialect mysql)', () => {
  let server: MariaDbServer;
  let pool: mysql.Pool;
  let tables = 0;

  beforeAll(async () => {
    server = await MariaDbServer.start();
    pool = mysql.createPool({ uri: server.url, connectionLimit: 12 });
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  });

  const stored = async (table: string, id: unknown, key = 'id') => {
    const [rows] = await pool.query(`SELECT * FROM \`${table}\` WHERE \`${key}\` = ?`, [id]);
    return (rows as Array<Record<string, unknown>>)[0];
  };
  async function accounts() {
    const name = `accounts_${++tables}`;
    const table = new FencedTable<{ balance: number | null; note: string | null }>({ table: name });
    await table.ensureTable(pool, { columns: { balance: 'bigint', note: 'text' } });
    return { table, name };
  }

  test('the server: MariaDB 10.11 or later, REPEATABLE READ by default', async () => {
    const [rows] = await pool.query('SELECT VERSION() AS v, @@tx_isolation AS iso');
    const { v, iso } = (rows as Array<{ v: string; iso: string }>)[0]!;
    expect(v).toMatch(/MariaDB/);
    const [major, minor] = v.split('.').map(Number);
    expect(major! * 100 + minor!).toBeGreaterThanOrEqual(1011);
    expect(iso).toBe('REPEATABLE-READ');
  });

  test('a partial write to a table with NOT NULL columns without defaults works on existing rows', async () => {
    const t = new FencedTable<{ a: number; b: number }>({ table: 'strict_rows', keyColumn: 'k' });
    await t.ensureTable(pool, {
      keyType: 'integer',
      columns: { a: 'integer NOT NULL', b: 'integer NOT NULL' },
    });
    expect((await t.write(pool, 1, 5, { a: 1, b: 2 })).accepted).toBe(true);
    expect((await t.write(pool, 1, 6, { a: 10 })).accepted).toBe(true); // an upsert would fail (error 1364)
    expect((await t.write(pool, 1, 4, { a: 99 })).accepted).toBe(false); // refused, not a NOT NULL error
    expect((await t.read(pool, 1, 6)).row).toEqual({ k: 1, a: 10, b: 2 });
    // A new row still needs its NOT NULL columns, as in PostgreSQL.
    await expect(t.write(pool, 2, 1, { a: 1 })).rejects.toThrow(/doesn't have a default value/);
  });

  test('concurrent writers: only increasing tokens win, and the row ends with the highest', async () => {
    const { table: t, name } = await accounts();
    await t.write(pool, 'race', 1, { balance: 0 });
    const tokens = Array.from({ length: 40 }, (_, i) => i + 2).sort(() => Math.random() - 0.5);
    const results = await Promise.all(
      tokens.map(async (token) => ({ token, ...(await t.write(pool, 'race', token, { balance: token })) })),
    );
    expect(results.filter((r) => r.accepted).map((r) => r.token)).toContain(41);
    expect(await stored(name, 'race')).toMatchObject({ balance: 41, fence_token: 41 });
    for (const r of results.filter((x) => !x.accepted)) expect(r.lastToken).toBeGreaterThan(r.token);
  });

  test('concurrent creators of a missing row: no deadlock, one row, with the highest token accepted', async () => {
    const { table: t, name } = await accounts();
    let deadlocks = 0;
    for (let round = 0; round < 10; round++) {
      const key = `fresh-${round}`;
      const tokens = [3, 1, 2, 5, 4];
      const results = await Promise.allSettled(
        tokens.map((token) => t.write(pool, key, token, { balance: token })),
      );
      // The transactions the table opens itself are READ COMMITTED: under REPEATABLE READ two
      // creators of the same missing row deadlock on its gap lock (34 of 50 writes here did).
      const accepted = tokens.filter(
        (_, i) =>
          results[i]!.status === 'fulfilled' &&
          (results[i] as PromiseFulfilledResult<{ accepted: boolean }>).value.accepted,
      );
      for (const r of results)
        if (r.status === 'rejected') {
          expect(String(r.reason)).toMatch(/Deadlock/);
          deadlocks++;
        }
      const highest = Math.max(...accepted);
      expect(await stored(name, key)).toMatchObject({ fence_token: highest, balance: highest });
      results.forEach((r, i) => {
        if (r.status === 'fulfilled' && !r.value.accepted)
          expect(r.value.lastToken).toBeGreaterThan(tokens[i]!);
      });
    }
    expect(deadlocks).toBe(0);
  });

  test('concurrent read-modify-writes with the tokens of successive holders lose no update', async () => {
    const { table: t, name } = await accounts();
    await t.write(pool, 'counter', 1, { balance: 0 });
    let acknowledged = 0;
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const token = i + 2;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
        const read = await t.read(pool, 'counter', token);
        if (!read.accepted) return;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
        const { accepted } = await t.write(pool, 'counter', token, { balance: Number(read.row.balance) + 1 });
        if (accepted) acknowledged++;
      }),
    );
    expect(acknowledged).toBeGreaterThan(0);
    expect(Number((await stored(name, 'counter'))!.balance)).toBe(acknowledged);
  });

  test('identifiers are quoted: hostile names are just names, nothing else runs', async () => {
    await pool.query('CREATE TABLE IF NOT EXISTS victims (id int)');
    const name = 'x`; DROP TABLE victims; --';
    const t = new FencedTable<Record<string, unknown>>({
      table: name,
      schema: 'test',
      keyColumn: 'k`ey',
      tokenColumn: 'Fence Token',
    });
    await t.ensureTable(pool, { columns: { 'v`al; DELETE FROM victims': 'text' } });
    expect((await t.write(pool, 'a', 3, { 'v`al; DELETE FROM victims': 'ok' })).accepted).toBe(true);
    expect((await t.write(pool, 'a', 2, { 'v`al; DELETE FROM victims': 'no' })).accepted).toBe(false);
    expect((await t.read(pool, 'a', 3)).row).toEqual({ 'k`ey': 'a', 'v`al; DELETE FROM victims': 'ok' });
    const [rows] = await pool.query(`SHOW TABLES LIKE 'victims'`);
    expect(rows).toHaveLength(1);
    expect(() => new FencedTable({ table: 'a?b', dialect: 'mysql' })).toThrow(InvalidIdentifierError);
    expect(() => new FencedTable({ table: 'x'.repeat(65), dialect: 'mysql' })).toThrow(/64 characters/);
    expect(() => new FencedTable({ table: 'x'.repeat(64), dialect: 'mysql' })).not.toThrow();
    expect(() => new FencedTable({ table: 'trailing ', dialect: 'mysql' })).toThrow(/end in a space/);
  });

  test('ensureTable adds the token column to an existing table; existing rows start at 0', async () => {
    await pool.query('CREATE TABLE legacy (id varchar(64) PRIMARY KEY, balance bigint NOT NULL)');
    await pool.query(`INSERT INTO legacy VALUES ('old', 7)`);
    const t = new FencedTable<{ balance: number }>({ table: 'legacy' });
    await t.ensureTable(pool);
    await t.ensureTable(pool); // twice: the column is there now
    expect(await t.read(pool, 'old', 1)).toEqual({
      accepted: true,
      row: { id: 'old', balance: 7 },
      lastToken: 1,
    });
    expect(t.createTableSql({}, 'mysql')).toBe(
      'CREATE TABLE IF NOT EXISTS `legacy` (\n  `id` varchar(255) PRIMARY KEY,\n  `fence_token` bigint NOT NULL DEFAULT 0\n)',
    );
  });

  test('a handle of the other dialect is a TypeError that says so', async () => {
    const t = new FencedTable({ table: 'anything', dialect: 'postgres' });
    await expect(t.write(pool, 'a', 1)).rejects.toThrow(/dialect 'postgres'.*MariaDB\/MySQL/);
  });
});

test('MariaDbServer: starts on a free port, and close() ends it by pid and removes its directory', async () => {
  const server = await MariaDbServer.start();
  const pid = server.pid!;
  // Its data directory (a private field: what close() must remove).
  const dir = (server as unknown as { dir: { path: string } }).dir.path;
  try {
    expect(pid).toBeGreaterThan(0);
    expect(existsSync(dir)).toBe(true);
    const connection = await mysql.createConnection(server.url);
    try {
      const [rows] = await connection.query('SELECT DATABASE() AS db');
      expect(rows).toEqual([{ db: 'test' }]);
    } finally {
      await connection.end();
    }
  } finally {
    await server.close();
  }
  expect(server.pid).toBeUndefined();
  expect(() => process.kill(pid, 0)).toThrow();
  expect(existsSync(dir)).toBe(false);
}, 60_000);
