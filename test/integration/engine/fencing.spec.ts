import { Redis } from 'ioredis';
import { Redlock } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, sleep } from '../../support/cluster.js';
import { commandStats } from '../../support/commandstats.js';
import { eventually } from '../../support/eventually.js';

/**
 * S5 for fencing tokens: a minority of nodes (node 0 among the candidates) is killed and restarted
 * without persistence between grants; the tokens of one resource must still strictly increase.
 */

const GRANTS = 1000;
const RESTART_EVERY = 25;
const RESOURCE = 'fenced';
const fenceKey = `redlock:{${RESOURCE}}:fence`;

/** Small deterministic PRNG, so a failing run can be replayed from its seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('fencing tokens across node restarts without persistence (S5)', () => {
  let redis: RedisNodes;
  /**
   * Ready-made clients that reconnect every 10 ms (the engine's own connections back off up to 2 s,
   * which would make 40 restarts slow). One set per engine; they are ours to close.
   */
  let clientSets: Redis[][];
  let engines: Redlock[];

  beforeAll(async () => {
    redis = await RedisNodes.start(5);
    clientSets = [0, 1].map(() =>
      redis.urls.map((url) => {
        const client = new Redis(url, {
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          retryStrategy: () => 10,
        });
        client.on('error', () => undefined);
        return client;
      }),
    );
    // restartGuard off: the guard is tested in restart-guard.spec.ts; here restarted nodes vote at once.
    engines = clientSets.map(
      (nodes) =>
        new Redlock({ nodes, restartGuard: false, nodeTimeout: 100, ttl: 2000, logger: new MemoryLogger() }),
    );
    await Promise.all(engines.map((e) => e.connect()));
  });
  afterAll(async () => {
    await Promise.all((engines ?? []).map((e) => e.close()));
    for (const client of (clientSets ?? []).flat()) client.disconnect();
    await redis?.close();
  });

  async function allReady(timeoutMs = 5000): Promise<void> {
    const until = performance.now() + timeoutMs;
    while (!clientSets.flat().every((c) => c.status === 'ready')) {
      if (performance.now() > until) throw new Error('restarted nodes did not come back');
      await sleep(5);
    }
  }

  test(`${GRANTS} grants alternate between two clients; tokens strictly increase while 1-2 nodes restart empty`, async () => {
    const seed = Date.now() % 100_000;
    const random = mulberry32(seed);
    const tokens: number[] = [];
    const violations: string[] = [];
    const restartedCount = [0, 0, 0, 0, 0];
    let rounds = 0;
    let roundsWithTwo = 0;
    let victimsParticipated = 0;
    let victimsTotal = 0;
    // Control: a counter kept with INCR on node 0 alone (what single-node fencing does).
    const naive: number[] = [];
    let victims: number[] = [];

    for (let g = 0; g < GRANTS; g++) {
      if (g > 0 && g % RESTART_EVERY === 0) {
        // Did last round's victims take part in grants after coming back (their counter exists)?
        for (const i of victims) {
          victimsTotal++;
          if ((await clientSets[0]![i]!.exists(fenceKey)) === 1) victimsParticipated++;
        }
        const count = random() < 0.5 ? 1 : 2;
        const pool = [0, 1, 2, 3, 4];
        victims = [];
        // Node 0 is a candidate every round and is forced in every 4th round.
        if (rounds % 4 === 0) victims.push(pool.splice(0, 1)[0]!);
        while (victims.length < count) victims.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
        await Promise.all(victims.map((i) => redis.restart(i)));
        for (const i of victims) restartedCount[i]!++;
        if (victims.length === 2) roundsWithTwo++;
        rounds++;
        await allReady();
      }
      const engine = engines[g % 2]!;
      const lock = await engine.acquire(RESOURCE, { wait: 2000 });
      const previous = tokens[tokens.length - 1];
      if (previous !== undefined && !(lock.fencingToken > previous)) {
        violations.push(`grant ${g}: token ${lock.fencingToken} after ${previous} (seed ${seed})`);
      }
      tokens.push(lock.fencingToken);
      if (g % RESTART_EVERY === RESTART_EVERY - 1) naive.push(await clientSets[0]![0]!.incr('naive-fence'));
      await lock.release();
    }

    expect(violations).toEqual([]);
    expect(tokens).toHaveLength(GRANTS);
    expect(new Set(tokens).size).toBe(GRANTS);
    expect(tokens.every((t) => Number.isSafeInteger(t))).toBe(true);
    // The faults really happened, node 0 included, with one and with two nodes at a time ...
    expect(rounds).toBe(GRANTS / RESTART_EVERY - 1);
    expect(restartedCount[0]).toBeGreaterThanOrEqual(rounds / 4);
    expect(roundsWithTwo).toBeGreaterThan(0);
    expect(roundsWithTwo).toBeLessThan(rounds);
    // ... and the restarted nodes voted again afterwards (the fault reached the grants).
    expect(victimsParticipated).toBeGreaterThanOrEqual(victimsTotal * 0.8);
    // Control: the single-node counter went backwards when node 0 restarted.
    expect(naive.some((v, i) => i > 0 && v <= naive[i - 1]!)).toBe(true);
  });

  // With at most 2 of 5 counters lost at a time, the max over a majority alone keeps tokens
  // increasing. The two tests below lose the counter on EVERY node: only the time-seeded counter
  // keeps the tokens increasing then (a counter restarting at 1 goes backwards).

  test('tokens keep increasing after all 5 nodes restarted empty', async () => {
    const resource = 'fenced-all-restart';
    const before: number[] = [];
    for (let n = 0; n < 5; n++) {
      const lock = await engines[n % 2]!.acquire(resource);
      before.push(lock.fencingToken);
      await lock.release();
    }
    await Promise.all([0, 1, 2, 3, 4].map((i) => redis.restart(i)));
    await allReady();
    expect(await clientSets[0]![0]!.exists(`redlock:{${resource}}:fence`)).toBe(0);
    const after = await engines[0]!.acquire(resource, { wait: 2000 });
    expect(after.fencingToken).toBeGreaterThan(before[before.length - 1]!);
    await after.release();
  });

  test('tokens keep increasing after the fence counters idled out (fenceIdleTtl) on every node', async () => {
    const engine = new Redlock({
      nodes: clientSets[1]!,
      restartGuard: false,
      nodeTimeout: 100,
      ttl: 1000,
      fenceIdleTtl: 150,
      logger: new MemoryLogger(),
    });
    try {
      const resource = 'fenced-idle';
      const first = await engine.acquire(resource);
      await first.release();
      const second = await engine.acquire(resource);
      await second.release();
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await sleep(250);
      const counters = await Promise.all(clientSets[1]!.map((c) => c.exists(`redlock:{${resource}}:fence`)));
      expect(counters).toEqual([0, 0, 0, 0, 0]);
      const third = await engine.acquire(resource);
      await third.release();
      expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    } finally {
      await engine.close(); // does not close the clients passed in
    }
    expect(clientSets[1]!.every((c) => c.status === 'ready')).toBe(true);
  });
});

describe('first grants: the majority agrees on the seed (no second fencing round)', () => {
  let redis: RedisNodes;
  let engine: Redlock;

  beforeAll(async () => {
    redis = await RedisNodes.start(5);
    engine = new Redlock({ nodes: redis.urls, restartGuard: false, logger: new MemoryLogger() });
    await engine.connect();
  });
  afterAll(async () => {
    await engine?.close();
    await redis?.close();
  });

  test('on never-used keys every node seeds the same counter, the token, and no node is raised', async () => {
    const admin = redis.urls.map((_, i) => redis.client(i));
    await Promise.all(admin.map((c) => c.config('RESETSTAT')));
    for (let i = 0; i < 20; i++) {
      const lock = await engine.acquire(`first-${i}`);
      await lock.release();
      // The acquire resolved at a majority: let the last nodes' replies land before looking.
      const seeded = new Array(5).fill(String(lock.fencingToken));
      const counters = await eventually(
        () => Promise.all(admin.map((c) => c.get(`redlock:{first-${i}}:fence`))),
        seeded,
      );
      expect(counters).toEqual(seeded);
    }
    // One acquire and one release per node per lock: 40 script calls each, no raise-fence round.
    const forty = new Array(5).fill(40);
    const calls = await eventually(
      () => Promise.all(admin.map(async (c) => (await commandStats(c, 'evalsha')).calls)),
      forty,
    );
    expect(calls).toEqual(forty);
  });
});
