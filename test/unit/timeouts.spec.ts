import { startTimeout, startTimeoutOrEarlier } from '../../lib/core/timeouts.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The shared time-outs of quorum rounds and lock validity, with real timers. */
describe('startTimeout', () => {
  test('fires each live time-out no earlier than its duration, in the order they were started', async () => {
    const fired: Array<{ id: number; after: number }> = [];
    const started: number[] = [];
    for (let id = 0; id < 3; id++) {
      started.push(performance.now());
      startTimeout(30, () => fired.push({ id, after: performance.now() - started[id]! }));
      await sleep(5);
    }
    await sleep(60);
    expect(fired.map((f) => f.id)).toEqual([0, 1, 2]);
    // Timer resolution is 1 ms: allow for the rounding of performance.now against it.
    for (const f of fired) expect(f.after).toBeGreaterThanOrEqual(29);
  });

  test('a cancelled time-out never fires; the ones after it still do', async () => {
    const fired: number[] = [];
    const cancelFirst = startTimeout(20, () => fired.push(1));
    startTimeout(20, () => fired.push(2));
    const cancelThird = startTimeout(20, () => fired.push(3));
    cancelFirst();
    cancelThird();
    cancelThird(); // twice is harmless
    await sleep(50);
    expect(fired).toEqual([2]);
  });

  test('time-outs started after the line went idle fire too (the line is rebuilt)', async () => {
    const fired: number[] = [];
    startTimeout(10, () => fired.push(1));
    await sleep(30);
    startTimeout(10, () => fired.push(2));
    await sleep(30);
    expect(fired).toEqual([1, 2]);
  });

  test('a time-out started from inside a firing one is served', async () => {
    const fired: number[] = [];
    startTimeout(10, () => {
      fired.push(1);
      startTimeout(10, () => fired.push(2));
    });
    await sleep(60);
    expect(fired).toEqual([1, 2]);
  });
});

describe('startTimeoutOrEarlier', () => {
  test('fires at most 1/64 of the duration early and never late', async () => {
    const started = performance.now();
    const after = await new Promise<number>((resolve) =>
      startTimeoutOrEarlier(300, () => resolve(performance.now() - started)),
    );
    expect(after).toBeGreaterThanOrEqual(300 - 300 / 64 - 1);
    expect(after).toBeLessThan(300 + 50);
  });

  test('short durations are exact', async () => {
    const started = performance.now();
    const after = await new Promise<number>((resolve) =>
      startTimeoutOrEarlier(40, () => resolve(performance.now() - started)),
    );
    expect(after).toBeGreaterThanOrEqual(39);
  });
});
