/**
 * The clock guard (issue 26, item 1) against real redis-server voters whose wall clocks the clock
 * shim steps: Kleppmann's interleaving (a voter that held the lock steps forward, two others had
 * lost it) and a majority that steps together, refused by a client that heard those voters
 * before; no false alarm for drift or for a client whose own event loop stalled.
 */
import { NodeConfigurationError, type LockEvent, type Redlock } from '../../../lib/index.js';
import { ClockFiles, nodeClock } from '../../support/clock-shim.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

const lockKey = (r: string) => `redlock:{${r}}`;

describe('clock guard: a voter whose clock steps forward does not count', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  beforeAll(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(5, { env: (i) => clocks.env(nodeClock(i)) });
    await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).set('redlock:__restart_guard__', '0')),
    );
  });
  afterAll(async () => {
    await cluster?.close();
    clocks?.close();
  });
  afterEach(async () => {
    for (let i = 0; i < 5; i++) clocks.set(nodeClock(i), 0);
    // A voter that stepped ahead of the others is put under the restart guard for every client
    // (clock-marking.spec.ts): the next test starts with every voter trusted again.
    await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).set('redlock:__restart_guard__', '0')),
    );
  });

  /**
   * A holds `resource` on voters 0-2 (3 and 4 lost it: restarted empty, guard passed; no healing);
   * B hears every voter once (the lock is busy), then `stepped` voters jump 30 s ahead, and B tries
   * again. Returns whether B got the lock, and B's events and log.
   */
  async function interleaving(resource: string, stepped: number[], bGuard: boolean) {
    const a = await cluster.engine({ ttl: 2000, restartGuard: 2000, healHolds: false });
    const logger = new MemoryLogger();
    const b = await cluster.engine({
      ttl: 2000,
      restartGuard: 2000,
      logger,
      ...(bGuard ? {} : { clockGuard: false }),
    });
    const events: LockEvent[] = [];
    const subscription = b.events$.subscribe((e) => events.push(e));
    const held = await a.acquire(resource);
    // A holds it on every voter once every vote landed (a round decides on the first majority).
    const values = () =>
      Promise.all([0, 1, 2, 3, 4].map((i) => cluster.redis.client(i).get(lockKey(resource))));
    expect(await eventually(async () => (await values()).every((v) => v !== null), true)).toBe(true);
    await Promise.all([3, 4].map((i) => cluster.redis.client(i).del(lockKey(resource))));
    expect(await b.tryAcquire(resource)).toBeNull(); // busy on 0-2: B read their clocks
    for (const i of stepped) clocks.step(nodeClock(i), 30_000);
    // Refused: busy (a majority answered, not enough of it counted) or no quorum (too many excluded).
    const second = await b.tryAcquire(resource).catch((e: unknown) => {
      if ((e as Error).name === 'QuorumUnavailableError') return null;
      throw e;
    });
    subscription.unsubscribe();
    const overlap = second !== null && held.signal.aborted === false;
    await second?.release();
    await held.release();
    // After B's last command, its marking of a stepped voter included (it must land before the
    // next test resets the markers).
    await b.close();
    return { granted: second !== null, overlap, events, logger, b };
  }

  test("Kleppmann's interleaving: the stepped voter is refused, so the second client does not get the held lock", async () => {
    const { granted, events, logger } = await interleaving('kleppmann', [2], true);
    expect(granted).toBe(false);
    const abstaining = events.filter((e) => e.type === 'node-abstaining');
    expect(abstaining).toHaveLength(1);
    expect(abstaining[0]).toMatchObject({
      cause: 'clock',
      node: expect.stringContaining(String(cluster.redis.port(2))),
    });
    const line = logger.lines.find((l) => l.includes('stepped forward'))!;
    expect(line).toMatch(
      new RegExp(`${cluster.redis.port(2)}.* until \\d{4}-\\d\\d-\\d\\dT.*stepped forward by 29\\d{3} ms`),
    );
  });

  test('control: with the guard off the second client is granted the lock while the first still holds it', async () => {
    const { granted, overlap } = await interleaving('kleppmann-control', [2], false);
    expect(granted).toBe(true);
    expect(overlap).toBe(true);
  });

  test('a majority that steps forward together: a client that heard those voters before refuses them', async () => {
    const { granted, events } = await interleaving('majority', [0, 1, 2], true);
    expect(granted).toBe(false);
    expect(events.filter((e) => e.type === 'node-abstaining' && e.cause === 'clock')).toHaveLength(3);
  });

  test('no false alarm: voters drifting 500 ppm, and a client whose event loop stalled 1.5 s with replies in flight', async () => {
    const logger = new MemoryLogger();
    const engine: Redlock = await cluster.engine({ ttl: 400, restartGuard: 400, logger, clockGuard: 20 });
    const events: LockEvent[] = [];
    const subscription = engine.events$.subscribe((e) => events.push(e));
    for (let round = 0; round < 10; round++) {
      const lock = await engine.acquire('drift');
      await lock.release();
      await sleep(300);
      // 500 ppm: 0.15 ms more per 300 ms on every voter, shown as whole ms every few rounds.
      if (round % 4 === 3) for (let i = 0; i < 5; i++) clocks.step(nodeClock(i), 1);
    }
    const lock = engine.acquire('stall');
    // The replies arrive while this process is blocked (a stop-the-world pause of the client).
    process.nextTick(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500));
    await lock.then(
      (l) => l.release(),
      () => undefined,
    );
    const after = await engine.acquire('stall');
    await after.release();
    subscription.unsubscribe();
    expect(events.filter((e) => e.type === 'node-abstaining')).toEqual([]);
    expect(logger.lines.filter((l) => l.includes('stepped'))).toEqual([]);
  });
});

describe('clock guard at bootstrap: a voter whose clock is offset from the others', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  beforeAll(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(3, { env: (i) => clocks.env(nodeClock(i)) });
    clocks.set(nodeClock(1), 2000);
  });
  afterAll(async () => {
    await cluster?.close();
    clocks?.close();
  });

  test("is a NodeConfigurationError under preflight: 'error', naming the voter, the offset and the fix", async () => {
    const error = await cluster.engine({ clockGuard: 500 }).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(NodeConfigurationError);
    expect((error as Error).message).toContain(String(cluster.redis.port(1)));
    expect((error as Error).message).toMatch(/clock is (19|20)\d\d ms ahead of the median of the voters/);
    expect((error as Error).message).toMatch(/synchronise its clock/);
  });

  test("is a warning under preflight: 'warn', and nothing within the guard", async () => {
    const logger = new MemoryLogger();
    const engine = await cluster.engine({ clockGuard: 500, preflight: 'warn', logger });
    expect(logger.lines.filter((l) => l.includes('ahead of the median'))).toHaveLength(1);
    await (await engine.acquire('offset')).release();
    const quiet = new MemoryLogger();
    await cluster.engine({ clockGuard: 2500, logger: quiet });
    expect(quiet.lines.filter((l) => l.includes('median'))).toEqual([]);
  });
});

describe('clock guard: a voter ahead of the others', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  beforeAll(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(5, { env: (i) => clocks.env(nodeClock(i)) });
  });
  afterAll(async () => {
    await cluster?.close();
    clocks?.close();
  });
  afterEach(async () => {
    // Each test starts with every clock in line and every voter trusted (its marker passed).
    for (let i = 0; i < 5; i++) clocks.set(nodeClock(i), 0);
    await Promise.all(
      cluster.redis.urls.map((_, i) => cluster.redis.client(i).set('redlock:__restart_guard__', '0')),
    );
  });

  test('stepped before a new engine first read it: does not count for that engine, no second holder while the first holder’s lease runs', async () => {
    const nodes = cluster.redis;
    const holderEngine = await cluster.engine({ clockGuard: 500 });
    const holder = await holderEngine.acquire('stepped-unseen', { ttl: 20_000 });
    // Nodes 3 and 4 do not hold it: as when the holder's acquire did not reach them (a partition).
    for (const i of [3, 4]) await nodes.client(i).del(lockKey('stepped-unseen'));
    // Node 0 steps 25 s forward: the holder's key there expires. The holder's engine crashed
    // (it is not asked again), so no engine that read node 0 before hears it after the step.
    clocks.set(nodeClock(0), 25_000);
    expect(await nodes.client(0).exists(lockKey('stepped-unseen'))).toBe(0);
    // A new process: it reads node 0 for the first time, 25 s ahead of the others.
    const logger = new MemoryLogger();
    const newcomer = await cluster.engine({ clockGuard: 500, preflight: 'warn', logger });
    // Nodes 0, 3 and 4 would grant (a majority): node 0 does not count, nodes 1 and 2 are busy.
    await expect(newcomer.acquire('stepped-unseen', { ttl: 5000 })).rejects.toMatchObject({
      name: 'LockNotAcquiredError',
    });
    expect(holder.signal.aborted).toBe(false);
    const aboutNode0 = logger.lines.filter((l) => l.includes(`:${nodes.port(0)}`));
    expect(aboutNode0).toHaveLength(1);
    // One line for it: the offset's report, which says the voter does not count for now.
    expect(aboutNode0[0]).toMatch(
      /clock is 2\d{4} ms ahead of the median .* does not count toward this engine's lock quorums for \d+ ms, since a step made before this engine first read it looks the same/,
    );
    await holder.release();
  });

  // Seed 3594078474 of the simulator (test/sim/cases.ts): a voter whose clock ran ahead counted
  // again, lead and all, once the guard after its step had passed; after it lost its counters, it
  // seeded them from its clock, tokens no other voter reaches for as long as its lead, and losing
  // the voters that held such a token let the tokens of a resource go back.
  test('still ahead once its guard has passed: does not count, its grants neither decide a lock nor seed its token', async () => {
    const nodes = cluster.redis;
    const logger = new MemoryLogger();
    const engine = await cluster.engine({ ttl: 2000, restartGuard: 2000, clockGuard: 500, logger });
    await (await engine.acquire('ahead-probe')).release(); // every voter read
    clocks.step(nodeClock(0), 25_000);
    // The step is seen: node 0 is excluded here and marked for every client (its counters dropped).
    await (await engine.acquire('ahead-probe')).release();
    // The guard after the step passes: this engine's exclusion (2 s from the reading) and the
    // marker on node 0 (2 s on its own clock, from the marking, which may land later); node 0 stays
    // 25 s ahead.
    await sleep(2100);
    const markerLeftMs = async () => {
      const [marker, [seconds, micros]] = await Promise.all([
        nodes.client(0).get('redlock:__restart_guard__'),
        nodes.client(0).time(),
      ]);
      return Number(marker ?? 0) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    };
    for (let left = await markerLeftMs(); left > 0; left = await markerLeftMs()) await sleep(left + 10);
    // Nodes 1 and 2 are busy with another holder's value: only nodes 0, 3 and 4 would grant.
    for (const i of [1, 2]) await nodes.client(i).set(lockKey('ahead'), 'another-holder', 'PX', 10_000);
    const second = await engine.tryAcquire('ahead');
    await second?.release();
    expect(second?.fencingToken ?? 'refused').toBe('refused');
    for (const i of [1, 2]) await nodes.client(i).del(lockKey('ahead'));
    const lock = await engine.acquire('ahead-token');
    // The token comes from the counting voters' clocks (µs since the epoch), not from node 0's.
    const nodeTimeUs = (await nodes.client(1).time()).map(Number);
    const othersUs = nodeTimeUs[0]! * 1e6 + nodeTimeUs[1]!;
    expect((lock.fencingToken - othersUs) / 1000).toBeLessThan(5000);
    await lock.release();
    expect(
      logger.lines.filter((l) => l.includes(`:${nodes.port(0)}`) && l.includes('ahead of the median')),
    ).toHaveLength(1);
    await engine.close();
  });
});

describe('a voter whose clock is far behind the others, seeding a fence counter it does not have', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  beforeAll(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(3, { env: (i) => clocks.env(nodeClock(i)) });
    clocks.set(nodeClock(2), -5000);
  });
  afterAll(async () => {
    await cluster?.close();
    clocks?.close();
  });

  test('abstains instead of seeding, and says why: its clock, by how much, the fix', async () => {
    const logger = new MemoryLogger();
    // Half the restart guard (1 s) is what a seed may lag the proposal (the voters' median) by.
    const engine = await cluster.engine({ clockGuard: false, restartGuard: 2000, ttl: 1000, logger });
    const events: LockEvent[] = [];
    const subscription = engine.events$.subscribe((e) => events.push(e));
    const lock = await engine.acquire('far-behind'); // nodes 0 and 1 grant, node 2 abstains
    await lock.release();
    const label = engine.status()[2]!.node;
    for (let i = 0; i < 50 && !logger.lines.some((l) => l.includes(label)); i++) await sleep(20);
    subscription.unsubscribe();
    const abstaining = events.filter((e) => e.type === 'node-abstaining');
    expect(abstaining).toHaveLength(1);
    expect(abstaining[0]).toMatchObject({ node: label, cause: 'clock' });
    // Behind the proposed seed: the 5 s step, plus half the 200 ms seed window (the proposal is its
    // middle), less the time until the node read its clock, give or take half a round trip (the
    // voters' time is estimated from the midpoints of round trips): 5,100 ms, from either side.
    const behindMs = Number(
      /wall clock is (\d+) ms behind the voters' time/.exec(abstaining[0]!.reason!)?.[1],
    );
    expect(behindMs).toBeGreaterThan(4900);
    expect(behindMs).toBeLessThan(5150);
    const line = logger.lines.find((l) => l.includes(label));
    expect(line).toMatch(new RegExp(`${behindMs} ms behind .*set its clock right`));
    expect(line).not.toMatch(/no restart-guard marker/);
    // It seeded nothing: its counter is still missing.
    expect(await cluster.redis.client(2).exists(`${lockKey('far-behind')}:fence`)).toBe(0);
  });
});
