import { writeSync } from 'node:fs';
import { BEHAVIOURS } from './behaviours.js';
import { CLUSTER_BEHAVIOURS } from './cluster-behaviours.js';
import { DRIVERS } from './drivers.js';
import { runRow, type VoterDriver } from './harness.js';
import { firstLine, ResultTable } from './results.js';

/*
 * The voter conformance table (issue 25, item 4): every behaviour (behaviours.ts) on every voter
 * (drivers.ts). A voter that cannot have a behaviour shows a skipped test that says why. The
 * Cluster rows (cluster-behaviours.ts) run on every column of several shards.
 */

const ROWS = [...BEHAVIOURS, ...CLUSTER_BEHAVIOURS];
const CLUSTER_ROWS = new Set(CLUSTER_BEHAVIOURS.map((b) => b.id));

/** Why `driver` cannot have row `id`, if it cannot. */
function cannot(driver: VoterDriver, id: string): string | undefined {
  if (CLUSTER_ROWS.has(id) && !driver.changeOneServer) return 'one server: no shard abstains on its own';
  return driver.cannot[id];
}

const table = new ResultTable(
  ROWS.map((b) => b.id),
  DRIVERS.map((d) => d.name),
);

/**
 * Under CONFORMANCE_ROW_MARKS=1, a line on stdout as each row starts (`@@ row <column> | <row>`),
 * written straight to the file descriptor (not Jest's console), so that output a client library
 * writes there itself (GLIDE's native logger) can be told by row: glide-quiet.spec.ts reads them.
 */
function mark(what: string): void {
  if (process.env.CONFORMANCE_ROW_MARKS === '1') writeSync(1, `@@ row ${what}\n`);
}

afterAll(() => table.publish('results', 'Voter conformance: behaviours x voters', 'behaviour', 'servers'));

for (const driver of DRIVERS) {
  describe(driver.name, () => {
    beforeAll(() => driver.start(), 30_000);
    afterAll(async () => {
      mark(`${driver.name} | stop`);
      await driver.stop();
    });

    for (const behaviour of ROWS) {
      const reason = cannot(driver, behaviour.id);
      if (reason) {
        table.set(behaviour.id, driver.name, { status: 'skip', text: reason });
        test.skip(`${behaviour.id}: n/a: ${reason}`, () => undefined);
        continue;
      }
      test(behaviour.title, async () => {
        const started = performance.now();
        mark(`${driver.name} | ${behaviour.id}`);
        try {
          const notes = await runRow(driver, behaviour);
          const ms = Math.round(performance.now() - started);
          table.set(behaviour.id, driver.name, { status: 'pass', text: [...notes, `${ms} ms`].join(', ') });
        } catch (err) {
          table.set(behaviour.id, driver.name, { status: 'fail', text: firstLine(err) });
          throw err;
        }
      });
    }
  });
}
