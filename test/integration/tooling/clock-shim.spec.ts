/**
 * The clock-step tooling of the clock scenarios (test/support/clock-shim.ts): a running
 * redis-server's wall clock steps at once, keys expire by it, TIME follows, and the monotonic
 * clock stays as it was (the shim shifts CLOCK_REALTIME only).
 */
import { spawnSync } from 'node:child_process';
import { RedisNodes } from '../../../lib/testing/index.js';
import { ClockFiles, nodeClock } from '../../support/clock-shim.js';

const timeMs = async (nodes: RedisNodes): Promise<number> => {
  const [s, us] = (await nodes.client(0).time()) as [number | string, number | string];
  return Number(s) * 1000 + Number(us) / 1000;
};

describe('clock shim (LD_PRELOAD, offset from a shared-mapped file)', () => {
  let clocks: ClockFiles;
  let nodes: RedisNodes;

  beforeAll(async () => {
    clocks = new ClockFiles();
    nodes = await RedisNodes.start(1, { env: (i) => clocks.env(nodeClock(i)) });
  });

  afterAll(async () => {
    await nodes?.close();
    clocks?.close();
  });

  it('steps a running redis-server forward: a key with 10 s to live is gone at once after +20 s', async () => {
    const client = nodes.client(0);
    await client.set('k', 'v', 'PX', 10_000);
    const before = await timeMs(nodes);
    expect(Math.abs(before - Date.now())).toBeLessThan(1000); // offset 0: real time
    clocks.step(nodeClock(0), 20_000);
    expect(await client.get('k')).toBeNull();
    const after = await timeMs(nodes);
    expect(after - before).toBeGreaterThan(19_900);
    expect(after - before).toBeLessThan(21_000);
  });

  it('steps back, and a restarted node keeps its offset', async () => {
    clocks.set(nodeClock(0), -3_600_000);
    expect(Date.now() - (await timeMs(nodes))).toBeGreaterThan(3_599_000);
    await nodes.restart(0);
    expect(Date.now() - (await timeMs(nodes))).toBeGreaterThan(3_599_000);
    clocks.set(nodeClock(0), 0);
    expect(Math.abs(Date.now() - (await timeMs(nodes)))).toBeLessThan(1000);
  });

  it("shifts a Node process's Date.now, not its monotonic clock (shared by every process)", () => {
    clocks.set('client', 20_000);
    const start = process.hrtime.bigint();
    const wallBefore = Date.now();
    const child = spawnSync(
      process.execPath,
      ['-e', 'process.stdout.write(`${process.hrtime.bigint()} ${Date.now()}`)'],
      { env: { ...process.env, NODE_OPTIONS: '', ...clocks.env('client') }, encoding: 'utf8' },
    );
    const end = process.hrtime.bigint();
    const wallAfter = Date.now();
    const [hr, wall] = child.stdout.split(' ');
    expect(BigInt(hr!)).toBeGreaterThanOrEqual(start);
    expect(BigInt(hr!)).toBeLessThanOrEqual(end);
    expect(Number(wall)).toBeGreaterThanOrEqual(wallBefore + 20_000);
    expect(Number(wall)).toBeLessThanOrEqual(wallAfter + 20_000);
  });
});
