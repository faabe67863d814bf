import { BEHAVIOURS } from './behaviours.js';
import { DRIVERS } from './drivers.js';
import { runRow } from './harness.js';
import { MUTATIONS } from './mutations.js';
import { firstLine, ResultTable } from './results.js';

/*
 * Every row of the conformance table can fail: each runs against its mutant (mutations.ts: a
 * working voter broken in exactly that row's behaviour) and must fail, on the in-memory voter and
 * on ioredis 5 (the latter has every row; the other columns share the rows' code).
 */

const columns = DRIVERS.filter((d) => d.name === 'in-memory' || d.name.startsWith('ioredis 5, RESP2'));
const table = new ResultTable(
  BEHAVIOURS.map((b) => b.id),
  columns.map((d) => d.name),
  Object.fromEntries(BEHAVIOURS.map((b) => [b.id, `${b.id}: ${MUTATIONS[b.id]?.breaks ?? 'no mutant'}`])),
);

afterAll(() =>
  table.publish('mutations', 'Each row against its mutant (caught: the row failed)', 'row: its mutant'),
);

test('one mutation per row, and no mutation without a row', () => {
  expect(Object.keys(MUTATIONS).sort()).toEqual(BEHAVIOURS.map((b) => b.id).sort());
  expect(columns).toHaveLength(2);
});

for (const driver of columns) {
  describe(`${driver.name}, mutated`, () => {
    beforeAll(() => driver.start(), 30_000);
    afterAll(() => driver.stop());

    for (const behaviour of BEHAVIOURS) {
      const reason = driver.cannot[behaviour.id];
      if (reason) {
        table.set(behaviour.id, driver.name, { status: 'skip', text: 'row n/a' });
        test.skip(`${behaviour.id}: n/a: ${reason}`, () => undefined);
        continue;
      }
      test(`${behaviour.id} fails against its mutant`, async () => {
        let failure: unknown;
        try {
          await runRow(driver, behaviour, MUTATIONS[behaviour.id]!.wrap);
        } catch (err) {
          failure = err;
        }
        const caught = failure !== undefined;
        table.set(behaviour.id, driver.name, {
          status: caught ? 'pass' : 'fail',
          text: caught ? `caught: ${firstLine(failure, 70)}` : 'the row passed: NOT caught',
        });
        expect(caught).toBe(true);
      });
    }
  });
}
