/**
 * S1-pg (TESTING.md): S1 with PostgreSQL as the fenced store. Holders stop themselves (SIGSTOP)
 * between their read and their write and are resumed after 1.5 x ttl; the counter lives in a
 * PostgreSQL row that the library's FencedTable fences (read and write). The control runs the same
 * workload with plain SQL (no token check) and must lose updates, which proves the checker sees it.
 */
import pg from 'pg';
import { FencedTable } from '../../lib/fencing/postgres/index.js';
import { PostgresServer } from '../../lib/testing/index.js';
import { check, describePausedWrites, pausedWrites, readHistory } from './checker.js';
import { FaultEnv } from './harness.js';
import { FULL, type ScenarioResult } from './scenarios.js';

const pick = <T>(reduced: T, full: T): T => (FULL ? full : reduced);
/** The same table as test/faults/pg-store.mjs (the workers' side). */
const COUNTERS = new FencedTable<{ value: string }>({ table: 'fault_counters', keyColumn: 'resource' });

/** S1 against PostgreSQL: `fenced` through FencedTable, or plain SQL (the control). */
function holderPausePg(id: string, title: string, fenced: boolean): Promise<ScenarioResult> {
  return runPg(id, title, async (env, url) => {
    const ttl = 500;
    const duration = pick(3000, 30_000);
    const resource = id.toLowerCase();
    const workers = Array.from({ length: pick(3, 4) }, (_, k) =>
      env.spawn({
        resource,
        lock: true,
        pg: { url, fenced },
        ttl,
        wait: 3000,
        nodeTimeout: 100,
        // As in S1: the next holders hold ~0.8 x ttl, so a paused holder resumes after the next
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
    return resource;
  });
}

/** Starts PostgreSQL and the usual fault environment, runs `body`, checks the histories. */
async function runPg(
  id: string,
  title: string,
  body: (env: FaultEnv, url: string) => Promise<string>,
): Promise<ScenarioResult> {
  const started = performance.now();
  const server = await PostgresServer.start();
  const db = new pg.Client({ connectionString: server.url });
  let env: FaultEnv | undefined;
  try {
    await db.connect();
    await COUNTERS.ensureTable(db, { columns: { value: 'bigint NOT NULL DEFAULT 0' } });
    env = await FaultEnv.start({ seedGuardMarker: true });
    const resource = await body(env, server.url);
    const histories = env.historyFiles().map(readHistory);
    const crashed = histories.find((h) => h.crash);
    if (crashed) throw new Error(`worker ${crashed.worker} crashed: ${crashed.crash}`);
    const { rows } = await db.query('SELECT value FROM fault_counters WHERE resource = $1', [resource]);
    const report = check(histories, { [resource]: Number(rows[0]?.value ?? 0) });
    return {
      id,
      title,
      report,
      ...describePausedWrites(pausedWrites(report), 'PostgreSQL'),
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await env?.close();
    await db.end().catch(() => undefined);
    await server.close();
  }
}

/** S1-pg: the counter in PostgreSQL behind FencedTable's fenced read and write. */
export const s1PgFenced = () =>
  holderPausePg(
    'S1-pg',
    'holder SIGSTOPped 1.5 x ttl between read and write, PostgreSQL + FencedTable',
    true,
  );

/** The control: same workload, plain SELECT + upsert (no token check): must lose updates. */
export const s1PgUnfenced = () =>
  holderPausePg(
    'S1-pg-control',
    'same against PostgreSQL without fencing (plain SQL): must lose updates',
    false,
  );
