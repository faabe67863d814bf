/**
 * S1 through the ORMs apps use (issue 38): holders stop themselves (SIGSTOP) between their read and
 * their write and are resumed after 1.5 x ttl, as in S1-pg, with the counter written through
 * TypeORM on PostgreSQL (S1-typeorm-pg) or through Knex on MariaDB (S1-knex-mariadb), FencedTable
 * given the ORM's own handle. Each control runs the same workload through the same ORM without
 * the fence and must lose updates, which proves the checker sees it.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { FencedTable } from '../../lib/fencing/sql/index.js';
import { MariaDbServer, PostgresServer } from '../../lib/testing/index.js';
import { check, describePausedWrites, pausedWrites, readHistory } from './checker.js';
import { FaultEnv } from './harness.js';
import { FULL, type ScenarioResult } from './scenarios.js';

const pick = <T>(reduced: T, full: T): T => (FULL ? full : reduced);
/** The same table as test/faults/sql-store.mjs (the workers' side). */
const COUNTERS = new FencedTable<{ value: unknown }>({ table: 'fault_counters', keyColumn: 'resource' });

type Kind = 'typeorm-pg' | 'knex-mariadb';

/** A database server of `kind`, its URL, and how to read the final counter. */
async function startDatabase(kind: Kind) {
  if (kind === 'typeorm-pg') {
    const server = await PostgresServer.start();
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    await COUNTERS.ensureTable(client, { columns: { value: 'bigint NOT NULL DEFAULT 0' } });
    return {
      url: server.url,
      name: 'PostgreSQL',
      counter: async (resource: string) =>
        Number(
          (await client.query('SELECT value FROM fault_counters WHERE resource = $1', [resource])).rows[0]
            ?.value ?? 0,
        ),
      close: async () => {
        await client.end().catch(() => undefined);
        await server.close();
      },
    };
  }
  const server = await MariaDbServer.start();
  const connection = await mysql.createConnection(server.url);
  await COUNTERS.ensureTable(connection, { columns: { value: 'bigint NOT NULL DEFAULT 0' } });
  return {
    url: server.url,
    name: 'MariaDB',
    counter: async (resource: string) => {
      const [rows] = await connection.query('SELECT value FROM fault_counters WHERE resource = ?', [
        resource,
      ]);
      return Number((rows as Array<{ value?: unknown }>)[0]?.value ?? 0);
    },
    close: async () => {
      await connection.end().catch(() => undefined);
      await server.close();
    },
  };
}

/** S1 through `kind`'s ORM: `fenced` by FencedTable on the ORM's handle, or plain ORM calls (the control). */
async function holderPauseSql(
  id: string,
  title: string,
  kind: Kind,
  fenced: boolean,
): Promise<ScenarioResult> {
  const started = performance.now();
  const db = await startDatabase(kind);
  let env: FaultEnv | undefined;
  try {
    env = await FaultEnv.start({ seedGuardMarker: true });
    const ttl = 500;
    const duration = pick(3000, 30_000);
    const resource = id.toLowerCase();
    const workers = Array.from({ length: pick(3, 4) }, (_, k) =>
      env!.spawn({
        resource,
        lock: true,
        sql: { kind, url: db.url, fenced },
        ttl,
        wait: 3000,
        nodeTimeout: 100,
        // As in S1-pg: the next holders hold ~0.8 x ttl, so a paused holder resumes after the next
        // holder's read and before its write, where a stale write does the most harm.
        ...(k < pick(1, 2)
          ? { pauseAt: 'hold' as const, pauseEvery: pick(1, 2), holdMs: [5, 20] as [number, number] }
          : { holdMs: [0.7 * ttl, 0.9 * ttl] as [number, number] }),
      }),
    );
    await env.ready(workers);
    const supervisor = env.superviseSelfPauses(workers, () => 1.5 * ttl);
    try {
      env.go(workers, duration);
      await env.finish(workers, duration + 30_000);
    } finally {
      await supervisor.stop();
    }
    const histories = env.historyFiles().map(readHistory);
    const crashed = histories.find((h) => h.crash);
    if (crashed) throw new Error(`worker ${crashed.worker} crashed: ${crashed.crash}`);
    const report = check(histories, { [resource]: await db.counter(resource) });
    return {
      id,
      title,
      report,
      ...describePausedWrites(pausedWrites(report), db.name),
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await env?.close();
    await db.close();
  }
}

/** S1-typeorm-pg: the counter written through a TypeORM DataSource on PostgreSQL, FencedTable on it. */
export const s1TypeOrmPg = () =>
  holderPauseSql(
    'S1-typeorm-pg',
    'holder SIGSTOPped 1.5 x ttl between read and write, TypeORM DataSource on PostgreSQL + FencedTable',
    'typeorm-pg',
    true,
  );

/** The control: the same through TypeORM's plain query and upsert, no token check: must lose updates. */
export const s1TypeOrmPgControl = () =>
  holderPauseSql(
    'S1-typeorm-pg-control',
    'same through TypeORM without fencing (query + upsert): must lose updates',
    'typeorm-pg',
    false,
  );

/** S1-knex-mariadb: the counter written through Knex (mysql2) on MariaDB, FencedTable on it. */
export const s1KnexMariaDb = () =>
  holderPauseSql(
    'S1-knex-mariadb',
    'holder SIGSTOPped 1.5 x ttl between read and write, Knex on MariaDB + FencedTable',
    'knex-mariadb',
    true,
  );

/** The control: the same through Knex's plain select and upsert, no token check: must lose updates. */
export const s1KnexMariaDbControl = () =>
  holderPauseSql(
    'S1-knex-mariadb-control',
    'same through Knex on MariaDB without fencing (select + upsert): must lose updates',
    'knex-mariadb',
    false,
  );
