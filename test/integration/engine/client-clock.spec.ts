/**
 * No safety or ordering decision on the client's wall clock (issue 26, items 3 and 4): with this
 * process's Date.now() stepped by hours, abstentions end and waits run out when they should, and
 * waiters are served in the order they asked, in the voters' time. The control runs the old
 * wall-clock tickets to show that the order test can fail.
 */
import { LockNotAcquiredError, QuorumUnavailableError, type Lock, type Redlock } from '../../../lib/index.js';
import type { VoterClocks } from '../../../lib/core/guards/clock/readings.js';
import { TestCluster, sleep } from '../../support/cluster.js';
import { apartFrom, ticketErrorMs, waiting } from '../../support/waiting-line.js';

/** Steps this process's wall clock (Date.now and new Date()) by `skew.ms`, as NTP would. */
const skew = { ms: 0 };
const realNow = Date.now.bind(Date);

/** The engine's voter clocks (a test control switches their tickets back to the wall clock). */
const clocksOf = (engine: Redlock) => (engine as unknown as { parts: { clocks: VoterClocks } }).parts.clocks;

describe("the client's wall clock decides nothing", () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    Date.now = () => realNow() + skew.ms;
  });
  afterAll(async () => {
    Date.now = realNow;
    await cluster?.close();
  });
  afterEach(() => {
    skew.ms = 0;
  });

  /**
   * A holds `resource`; A1 starts waiting with this process's clock 10 s ahead, then A2 with it
   * 10 s behind; the order in which they get the lock after A's release. A2 asks once A1 is in line
   * and heard on every node and the asks are further apart than the engines' tickets can be off,
   * and A releases once both are (waiting-line.ts): the order is then the tickets', what this
   * measures, not a race to the nodes or the precision of the clock readings on a loaded machine.
   */
  async function orderUnderSkew(resource: string, wallClockTickets: boolean): Promise<string[]> {
    const holder = await cluster.engine();
    const first = await holder.acquire(resource, { ttl: 10_000 });
    const early = await cluster.engine();
    const late = await cluster.engine();
    clocksOf(early).clientClockTickets = wallClockTickets;
    clocksOf(late).clientClockTickets = wallClockTickets;
    const apartMs = ticketErrorMs(early) + ticketErrorMs(late);
    const order: string[] = [];
    const take = (engine: Redlock, name: string) =>
      engine.acquire(resource, { wait: 8000 }).then(async (lock: Lock) => {
        order.push(name);
        await sleep(10);
        await lock.release();
      });
    skew.ms = 10_000;
    const askedFirst = performance.now();
    const early$ = take(early, 'asked first (clock 10 s ahead)');
    await waiting(cluster, early, resource, 1);
    await apartFrom(askedFirst, apartMs);
    skew.ms = -10_000;
    const late$ = take(late, 'asked second (clock 10 s behind)');
    await waiting(cluster, late, resource, 2);
    skew.ms = 0;
    await first.release();
    await Promise.all([early$, late$]);
    return order;
  }

  test('waiters are served in the order they asked, in the voters time, whatever the client clock says', async () => {
    expect(await orderUnderSkew('order', false)).toEqual([
      'asked first (clock 10 s ahead)',
      'asked second (clock 10 s behind)',
    ]);
  });

  test('control: tickets from the client wall clock let the process behind jump the line', async () => {
    expect(await orderUnderSkew('order-control', true)).toEqual([
      'asked second (clock 10 s behind)',
      'asked first (clock 10 s ahead)',
    ]);
  });

  test("an abstention ends by the monotonic clock: a step of the client's clock neither ends nor stretches it", async () => {
    // New nodes: no restart-guard marker, so they abstain for the guard.
    const fresh = await TestCluster.start(3, { freshFor: [] }); // new, not recorded: they abstain
    try {
      const engine = await fresh.engine({ restartGuard: 1500, ttl: 300 });
      const refused = await engine.acquire('guarded').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(QuorumUnavailableError);
      const firstHint = (refused as QuorumUnavailableError).retryAfterMs!;
      expect(firstHint).toBeGreaterThan(1000);

      skew.ms = 3_600_000; // an hour ahead: a wall-clock abstention would be over
      const again = (await engine.acquire('guarded').catch((e: unknown) => e)) as QuorumUnavailableError;
      expect(again).toBeInstanceOf(QuorumUnavailableError);
      expect(again.retryAfterMs).toBeGreaterThan(0);
      expect(again.retryAfterMs).toBeLessThanOrEqual(firstHint);
      // Reported in epoch ms of the (stepped) wall clock, as a convenience.
      const until = engine.status()[0]!.abstainingUntil!;
      expect(until - Date.now()).toBeGreaterThan(0);
      expect(until - Date.now()).toBeLessThanOrEqual(1500);

      skew.ms = -3_600_000; // an hour behind: a wall-clock abstention would last an hour more
      await sleep(1600);
      const lock = await engine.acquire('guarded');
      expect(lock.expiresAt - Date.now()).toBeGreaterThan(0); // expiresAt: epoch ms, as Date.now
      expect(lock.expiresAt - Date.now()).toBeLessThanOrEqual(300);
      await lock.release();
    } finally {
      await fresh.close();
    }
  });

  test('a wait runs out by the monotonic clock, however the wall clock steps meanwhile', async () => {
    const holder = await cluster.engine();
    const first = await holder.acquire('deadline', { ttl: 10_000 });
    const waiter = await cluster.engine();
    const started = performance.now();
    const pending = waiter.acquire('deadline', { wait: 700 }).catch((e: unknown) => e);
    await sleep(100);
    skew.ms = 3_600_000;
    await sleep(100);
    skew.ms = -3_600_000;
    const outcome = await pending;
    const waited = performance.now() - started;
    expect(outcome).toBeInstanceOf(LockNotAcquiredError);
    expect(waited).toBeGreaterThanOrEqual(690);
    expect(waited).toBeLessThan(700 + 1000);
    await first.release();
  });
});
