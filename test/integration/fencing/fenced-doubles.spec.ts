import pg from 'pg';
import { FencedWriter } from 'nest-quorum-lock';
import { FencedTable } from 'nest-quorum-lock/sql';
import {
  InMemoryFencedTable,
  InMemoryFencedWriter,
  PostgresServer,
  RedisNodes,
  type IoRedisTestClient,
} from 'nest-quorum-lock/testing';
import { closeAfterSessions } from '../../support/postgres-sessions.js';
import {
  FENCED_BEHAVIOURS,
  type Call,
  type FencedStoreUnderTest,
  type ReadOutcome,
  type Stored,
  type WriteOutcome,
} from './fenced-store-behaviours.js';

/*
 * The in-memory fenced stores of nest-quorum-lock/testing held to the real ones: every row of the
 * shared behaviour table runs on the real store (FencedWriter on a real redis-server, FencedTable on
 * a real PostgreSQL) and on its double, and then each call's reply, or error class and message, must
 * be the same on both.
 */

/** Records each call of a store's own API: its reply, or its error's class and message. */
async function recorded<T>(calls: Call[], call: string, fn: () => Promise<T>): Promise<T> {
  try {
    const reply = await fn();
    calls.push({ call, reply });
    return reply;
  } catch (err) {
    const e = err as Error;
    calls.push({ call, threw: e.constructor.name, message: e.message });
    throw err;
  }
}

const show = (value: unknown) => (typeof value === 'number' ? String(value) : JSON.stringify(value));

/** A FencedWriter (real or in memory) as the table drives it. */
function writerUnderTest(
  writer: FencedWriter,
  hash: (key: string) => Promise<Record<string, string> | undefined>,
): FencedStoreUnderTest {
  const calls: Call[] = [];
  return {
    tokenName: writer.fenceField,
    calls,
    async read(key, token): Promise<ReadOutcome> {
      const r = await recorded(calls, `hgetall ${key} ${show(token)}`, () =>
        writer.hgetall(key, token as number),
      );
      return { accepted: r.accepted, values: r.fields, lastToken: r.lastToken };
    },
    write(key, token, values): Promise<WriteOutcome> {
      return recorded(calls, `hset ${key} ${show(values)} ${show(token)}`, () =>
        writer.hset(key, values, token as number),
      );
    },
    async stored(key): Promise<Stored | undefined> {
      const all = await hash(key);
      if (!all) return undefined;
      const { [writer.fenceField]: fence, ...values } = all;
      return { values, token: Number(fence) };
    },
  };
}

type Account = { balance: string | null; note: string | null };

/** A FencedTable (real or in memory) as the table drives it; `row` looks at the stored row. */
function tableUnderTest(
  table: FencedTable<Account>,
  db: unknown,
  row: (key: string) => Promise<Record<string, unknown> | undefined>,
): FencedStoreUnderTest {
  const calls: Call[] = [];
  const values = (r: Record<string, unknown> | undefined) =>
    r &&
    (Object.fromEntries(
      Object.entries(r).filter(([column, v]) => column !== 'id' && column !== 'fence_token' && v !== null),
    ) as Record<string, string>);
  return {
    tokenName: 'fence_token',
    calls,
    async read(key, token): Promise<ReadOutcome> {
      const r = await recorded(calls, `read ${key} ${show(token)}`, () =>
        table.read(db as pg.Pool, key, token as number),
      );
      return { accepted: r.accepted, values: values(r.row), lastToken: r.lastToken };
    },
    write(key, token, v): Promise<WriteOutcome> {
      return recorded(calls, `write ${key} ${show(token)} ${show(v)}`, () =>
        table.write(db as pg.Pool, key, token as number, v as Partial<Account>),
      );
    },
    async stored(key): Promise<Stored | undefined> {
      const r = await row(key);
      return r && { values: values(r)!, token: Number(r.fence_token) };
    },
  };
}

let redis: RedisNodes;
let postgres: PostgresServer;
let pool: pg.Pool;
let client: IoRedisTestClient;
let tables = 0;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisNodes.start(1), PostgresServer.start()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
  client = redis.client(0);
});
afterAll(async () => {
  await pool?.end();
  await Promise.all([redis?.close(), closeAfterSessions(postgres)]);
});

const KINDS = [
  {
    kind: 'FencedWriter on redis-server vs InMemoryFencedWriter',
    async real(): Promise<FencedStoreUnderTest> {
      await client.flushall();
      return writerUnderTest(new FencedWriter(client), async (key) => {
        const all = await client.hgetall(key);
        return Object.keys(all).length ? all : undefined;
      });
    },
    double(): FencedStoreUnderTest {
      const writer = new InMemoryFencedWriter();
      return writerUnderTest(writer, async (key) => writer.hashOf(key));
    },
  },
  {
    kind: 'FencedTable on PostgreSQL vs InMemoryFencedTable',
    async real(): Promise<FencedStoreUnderTest> {
      const table = new FencedTable<Account>({ table: `doubles_${++tables}` });
      await table.ensureTable(pool, { columns: { balance: 'text', note: 'text' } });
      return tableUnderTest(table, pool, async (key) => {
        const { rows } = await pool.query(`SELECT * FROM ${table.qualifiedName} WHERE id = $1`, [key]);
        return rows[0] as Record<string, unknown> | undefined;
      });
    },
    double(): FencedStoreUnderTest {
      const table = new InMemoryFencedTable<Account>({
        table: 'accounts',
        columnDefaults: { balance: null, note: null }, // what the real table's DDL gives a new row
      });
      return tableUnderTest(table, {}, async (key) => table.rowOf(key));
    },
  },
];

describe.each(KINDS)('$kind', (kind) => {
  test.each(FENCED_BEHAVIOURS)('$name', async (behaviour) => {
    const real = await kind.real();
    const double = kind.double();
    for (const [which, store] of [
      ['the real store', real],
      ['the double', double],
    ] as const) {
      await behaviour.run(store).catch((err: Error) => {
        err.message = `${which}: ${err.message}`;
        throw err;
      });
    }
    expect(double.calls).toEqual(real.calls);
  });
});
