import { QuorumUnavailableError, Redlock } from '../../../lib/index.js';
import { SentinelGroup } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';

/*
 * A Sentinel-managed primary as a voter, against real processes: a primary, its replica and one
 * Sentinel (SentinelGroup, lib/testing/sentinel-group.ts), ended by pid in afterAll. ioredis
 * finds the primary through the Sentinel and, after a failover, the promoted replica. With the
 * restart guard on, the identity guard makes the promoted replica abstain (fault scenario S15);
 * here the guard is off, to measure how soon the voter is back.
 */

let group: SentinelGroup;
let engine: Redlock | undefined;

beforeAll(async () => {
  group = await SentinelGroup.start({ sentinels: 1, downAfterMs: 1000 });
});

afterAll(async () => {
  await engine?.close();
  await group?.close();
});

it('locks through a Sentinel-managed primary, and votes again from the promoted replica after a failover', async () => {
  const logger = new MemoryLogger();
  engine = new Redlock({ nodes: [group.nodeOptions], restartGuard: false, preflight: 'warn', logger });
  await engine.connect();
  // The label names the Sentinels and the primary's name: stable across failovers, no password.
  const sentinels = group.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',');
  expect(engine.voters[0]!.label).toBe(`sentinel://${sentinels}/mymaster`);

  const first = await engine.acquire('invoice:1', { ttl: 2000 });
  await expect(engine.tryAcquire('invoice:1')).resolves.toBeNull();
  await first.release();

  const killed = await group.killPrimary();
  const started = performance.now();
  // While nobody serves, the one voter cannot vote.
  await expect(engine.acquire('invoice:1')).rejects.toBeInstanceOf(QuorumUnavailableError);
  const promoted = await group.waitForFailover(killed);
  expect(promoted).not.toBe(killed);
  const failoverMs = performance.now() - started;
  let lock;
  while (!lock) {
    lock = await engine.tryAcquire('invoice:1', { ttl: 2000 }).catch(() => null);
    if (!lock) await new Promise((r) => setTimeout(r, 25));
    expect(performance.now() - started).toBeLessThan(15_000);
  }
  const backMs = performance.now() - started;
  // Tokens keep increasing: the counter was replicated (or, if lost, is seeded from the clock).
  expect(lock.fencingToken).toBeGreaterThan(first.fencingToken);
  await lock.release();
  process.stdout.write(
    `sentinel failover: promoted after ${Math.round(failoverMs)} ms, voter granting after ${Math.round(backMs)} ms\n`,
  );
});
