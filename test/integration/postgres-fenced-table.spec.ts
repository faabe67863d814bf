import pg from 'pg';
import {
  FencedTable,
  FencedTableError,
  InvalidFencedValuesError,
  InvalidFencingTokenError,
  InvalidIdentifierError,
} from 'nest-quorum-lock/postgres';
import { PostgresServer } from 'nest-quorum-lock/testing';
import { closeAfterSessions } from '../support/postgres-sessions.js';

/** FencedTable against a real PostgreSQL server that this test starts and stops. */
describe('FencedTable (nest-quorum-lock/postgres) on a real PostgreSQL', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  let tables = 0;

  beforeAll(async () => {
    server = await PostgresServer.start();
    pool = new pg.Pool({ connectionString: server.url, max: 12 });
  });
  afterAll(async () => {
    await pool?.end();
    await closeAfterSessions(server); // pool.end() does not wait for its connections to close
  });

  /** A fresh `accounts`-like table per test. */
  async function accounts(): Promise<FencedTable<{ balance: string | null; note: string | null }>> {
    const table = new FencedTable<{ balance: string | null; note: string | null }>({
      table: `accounts_${++tables}`,
    });
    await table.ensureTable(pool, { columns: { balance: 'bigint', note: 'text' } });
    return table;
  }
  const stored = async (table: FencedTable<object>, id: string) =>
    (await pool.query(`SELECT * FROM ${table.qualifiedName} WHERE id = $1`, [id])).rows[0];

  test('a write to a new row is accepted and creates it with the token', async () => {
    const t = await accounts();
    expect(await t.write(pool, 'alice', 10, { balance: '100' })).toEqual({ accepted: true, lastToken: 10 });
    expect(await stored(t, 'alice')).toEqual({ id: 'alice', balance: '100', note: null, fence_token: '10' });
  });

  test('a higher token overwrites; a lower one is refused and changes nothing', async () => {
    const t = await accounts();
    await t.write(pool, 'a', 10, { balance: '100', note: 'ten' });
    expect(await t.write(pool, 'a', 11, { balance: '90' })).toEqual({ accepted: true, lastToken: 11 });
    expect(await t.write(pool, 'a', 7, { balance: '1', note: 'stale' })).toEqual({
      accepted: false,
      lastToken: 11,
    });
    expect(await stored(t, 'a')).toEqual({ id: 'a', balance: '90', note: 'ten', fence_token: '11' });
  });

  test('an equal token is the same holder: its second write is accepted, a lower one still is not', async () => {
    const t = await accounts();
    expect((await t.write(pool, 'job', 5, { note: 'running' })).accepted).toBe(true);
    expect((await t.write(pool, 'job', 5, { note: 'done' })).accepted).toBe(true);
    expect((await t.write(pool, 'job', 4, { note: 'late' })).accepted).toBe(false);
    expect((await stored(t, 'job')).note).toBe('done');
  });

  test('a fenced read records its token: an older holder paused after its read cannot write', async () => {
    const t = await accounts();
    await t.write(pool, 'bob', 1, { balance: '500' });
    // Holder 2 reads and is paused; its lock expires; holder 3 reads the same balance.
    const old = await t.read(pool, 'bob', 2);
    expect(old).toEqual({ accepted: true, row: { id: 'bob', balance: '500', note: null }, lastToken: 2 });
    const next = await t.read(pool, 'bob', 3);
    expect(next.accepted).toBe(true);
    // Holder 2 resumes: its write, computed from the superseded read, is refused even though
    // holder 3 has not written yet (write-only fencing would accept it and lose an update).
    expect(await t.write(pool, 'bob', 2, { balance: '400' })).toEqual({ accepted: false, lastToken: 3 });
    expect(await t.read(pool, 'bob', 2)).toMatchObject({ accepted: false, lastToken: 3 });
    expect(await t.write(pool, 'bob', 3, { balance: '450' })).toEqual({ accepted: true, lastToken: 3 });
    expect(await stored(t, 'bob')).toMatchObject({ balance: '450', fence_token: '3' });
  });

  test('a fenced read of a missing row reserves it, so an older holder cannot create it afterwards', async () => {
    const t = await accounts();
    const read = await t.read(pool, 'new', 8);
    expect(read).toEqual({ accepted: true, row: { id: 'new', balance: null, note: null }, lastToken: 8 });
    expect((await t.write(pool, 'new', 7, { balance: '1' })).accepted).toBe(false);
    expect((await t.write(pool, 'new', 8, { balance: '2' })).accepted).toBe(true);
    expect(await stored(t, 'new')).toMatchObject({ balance: '2', fence_token: '8' });
  });

  test('a partial write to a table with NOT NULL columns without defaults works on existing rows', async () => {
    const t = new FencedTable<{ a: number; b: number }>({ table: 'strict_rows', keyColumn: 'k' });
    await t.ensureTable(pool, {
      keyType: 'integer',
      columns: { a: 'integer NOT NULL', b: 'integer NOT NULL' },
    });
    expect((await t.write(pool, 1, 5, { a: 1, b: 2 })).accepted).toBe(true);
    expect((await t.write(pool, 1, 6, { a: 10 })).accepted).toBe(true); // an upsert would fail here
    expect((await t.write(pool, 1, 4, { a: 99 })).accepted).toBe(false); // refused, not a NOT NULL error
    expect((await t.read(pool, 1, 6)).row).toEqual({ k: 1, a: 10, b: 2 });
  });

  test('concurrent writers: only increasing tokens win, and the row ends with the highest', async () => {
    const t = await accounts();
    await t.write(pool, 'race', 1, { balance: '0' });
    // 40 writers with tokens 2..41 in shuffled order, all at once over 12 connections.
    const tokens = Array.from({ length: 40 }, (_, i) => i + 2).sort(() => Math.random() - 0.5);
    const results = await Promise.all(
      tokens.map(async (token) => ({
        token,
        ...(await t.write(pool, 'race', token, { balance: String(token) })),
      })),
    );
    const accepted = results.filter((r) => r.accepted).map((r) => r.token);
    expect(accepted).toContain(41);
    // In commit order every accepted token was higher than all before it, so the row holds the max.
    expect(await stored(t, 'race')).toMatchObject({ balance: '41', fence_token: '41' });
    for (const r of results.filter((x) => !x.accepted)) expect(r.lastToken).toBeGreaterThan(r.token);
  });

  test('concurrent read-modify-writes with the tokens of successive holders lose no update', async () => {
    const t = await accounts();
    await t.write(pool, 'counter', 1, { balance: '0' });
    // Holders overlap (as if each earlier one were paused): every increment that was acknowledged
    // must be in the final value, and stale ones must be refused.
    let acknowledged = 0;
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const token = i + 2;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
        const read = await t.read(pool, 'counter', token);
        if (!read.accepted) return;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
        const { accepted } = await t.write(pool, 'counter', token, {
          balance: String(Number(read.row.balance) + 1),
        });
        if (accepted) acknowledged++;
      }),
    );
    expect(acknowledged).toBeGreaterThan(0);
    expect(Number((await stored(t, 'counter')).balance)).toBe(acknowledged);
  });

  test('works inside a transaction on a pool client (rolled back with it)', async () => {
    const t = await accounts();
    await t.write(pool, 'tx', 1, { balance: '10' });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      expect((await t.write(client, 'tx', 2, { balance: '20' })).accepted).toBe(true);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await stored(t, 'tx')).toMatchObject({ balance: '10', fence_token: '1' });
  });

  test('identifiers are quoted: hostile names are just names, nothing else runs', async () => {
    await pool.query('CREATE TABLE IF NOT EXISTS victims (id int)');
    const name = 'x"; DROP TABLE victims; --';
    const t = new FencedTable<Record<string, unknown>>({
      table: name,
      schema: 'public',
      keyColumn: 'k"ey',
      tokenColumn: 'Fence Token',
    });
    await t.ensureTable(pool, { columns: { 'v"al; DELETE FROM victims': 'text' } });
    expect((await t.write(pool, 'a', 3, { 'v"al; DELETE FROM victims': 'ok' })).accepted).toBe(true);
    expect((await t.write(pool, 'a', 2, { 'v"al; DELETE FROM victims': 'no' })).accepted).toBe(false);
    expect((await t.read(pool, 'a', 3)).row).toEqual({ 'k"ey': 'a', 'v"al; DELETE FROM victims': 'ok' });
    const { rows } = await pool.query(`SELECT to_regclass('public.victims') AS t`);
    expect(rows[0].t).toBe('victims');
    expect(t.qualifiedName).toBe('"public"."x""; DROP TABLE victims; --"');
  });

  test('typed errors for bad names, tokens, keys and values, before any SQL is sent', async () => {
    expect(() => new FencedTable({ table: '' })).toThrow(InvalidIdentifierError);
    expect(() => new FencedTable({ table: 'a\0b' })).toThrow(InvalidIdentifierError);
    expect(() => new FencedTable({ table: 'x'.repeat(64), dialect: 'postgres' })).toThrow(
      /longer than 63 bytes/,
    );
    expect(() => new FencedTable({ table: 't', keyColumn: 'id', tokenColumn: 'id' })).toThrow(
      InvalidFencedValuesError,
    );
    const t = new FencedTable({ table: 'never_created' });
    const sent: string[] = [];
    const spy = { query: async (text: string) => (sent.push(text), { rows: [], rowCount: 0 }) };
    for (const token of [0, -1, 1.5, Number.NaN, 2 ** 53, '5' as unknown as number]) {
      await expect(t.write(spy, 'a', token, {})).rejects.toBeInstanceOf(InvalidFencingTokenError);
      await expect(t.read(spy, 'a', token)).rejects.toBeInstanceOf(InvalidFencingTokenError);
    }
    await expect(t.write(spy, null, 1, {})).rejects.toBeInstanceOf(InvalidFencedValuesError);
    await expect(t.write(spy, 'a', 1, { fence_token: 9 })).rejects.toThrow(/token column/);
    await expect(t.write(spy, 'a', 1, { id: 'b' })).rejects.toThrow(/key column/);
    await expect(t.write(spy, 'a', 1, { '': 1 })).rejects.toBeInstanceOf(InvalidIdentifierError);
    // Without a dialect, PostgreSQL's limit applies once the handle says PostgreSQL (MariaDB's is 64 characters).
    await expect(new FencedTable({ table: 'x'.repeat(64) }).write(spy, 'a', 1)).rejects.toThrow(
      /longer than 63 bytes/,
    );
    expect(sent).toEqual([]);
    const err = new InvalidIdentifierError('', 'table', 'why');
    expect(err).toBeInstanceOf(FencedTableError);
    expect(err.name).toBe('InvalidIdentifierError');
  });

  test('ensureTable adds the token column to an existing table; existing rows start at 0', async () => {
    await pool.query('CREATE TABLE legacy (id text PRIMARY KEY, balance bigint NOT NULL)');
    await pool.query(`INSERT INTO legacy VALUES ('old', 7)`);
    const t = new FencedTable<{ balance: string }>({ table: 'legacy' });
    await t.ensureTable(pool);
    expect(await t.read(pool, 'old', 1)).toEqual({
      accepted: true,
      row: { id: 'old', balance: '7' },
      lastToken: 1,
    });
  });
});
