import { BEHAVIOURS } from './behaviours.js';
import { DRIVERS } from './drivers.js';
import { runRow } from './harness.js';
import { firstLine, ResultTable } from './results.js';

/*
 * The voter conformance table (issue 25, item 4): every behaviour (behaviours.ts) on every voter
 * (drivers.ts). A voter that cannot have a behaviour shows a skipped test that says why.
 */

const table = new ResultTable(
  BEHAVIOURS.map((b) => b.id),
  DRIVERS.map((d) => d.name),
);

afterAll(() => table.publish('results', 'Voter conformance: behaviours x voters', 'behaviour'));

for (const driver of DRIVERS) {
  describe(driver.name, () => {
    beforeAll(() => driver.start(), 30_000);
    afterAll(() => driver.stop());

    for (const behaviour of BEHAVIOURS) {
      const reason = driver.cannot[behaviour.id];
      if (reason) {
        table.set(behaviour.id, driver.name, { status: 'skip', text: reason });
        test.skip(`${behaviour.id}: n/a: ${reason}`, () => undefined);
        continue;
      }
      test(behaviour.title, async () => {
        const started = performance.now();
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
