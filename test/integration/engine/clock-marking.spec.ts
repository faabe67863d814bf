/**
 * The clock guard for every client (issue 26): an engine whose readings show one voter's clock
 * stepped forward, ahead of a quorum of the others read in the same round, puts that voter under
 * the restart guard on the voter itself, so that engines that never saw the step (a fresh one; one
 * with the clock guard off) refuse it too until the guard has passed; voters that all move alike
 * (what a client whose own clock stood still sees) are marked for nobody. Real redis-server voters
 * whose wall clocks the clock shim steps.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LockEvent, Redlock } from '../../../lib/index.js';
import { ClockFiles, nodeClock } from '../../support/clock-shim.js';
import { MemoryLogger, TestCluster, sleep } from '../../support/cluster.js';

const MARKER = 'redlock:__restart_guard__';
const lockKey = (r: string) => `redlock:{${r}}`;
const GUARD_MS = 2000;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * A client process (the BUILT library, as an application runs it): one engine with the clock
 * guard, acquiring and releasing in a loop; prints `tick` per cycle and every warning it logs;
 * closes its engine and exits when its standard input ends.
 */
const CLIENT = `
import { Redlock } from './dist/index.js';
const say = (line) => process.stdout.write(line + '\\n');
const logger = { log() {}, debug() {}, warn: (l) => say('warn ' + l), error: (l) => say('error ' + l) };
const engine = new Redlock({ nodes: JSON.parse(process.env.LOCK_NODES), ttl: 1000, restartGuard: ${GUARD_MS}, logger });
await engine.connect();
engine.events$.subscribe((e) => { if (e.type === 'node-abstaining') say('abstaining ' + e.node); });
let done = false;
process.stdin.on('end', () => { done = true; });
process.stdin.resume();
while (!done) {
  // The acquire in flight when the process stopped fails (its validity was spent): that is right.
  const lock = await engine.acquire('stopped').catch(() => undefined);
  await lock?.release();
  say(lock ? 'tick' : 'spent');
  await new Promise((r) => setTimeout(r, 5));
}
await engine.close();
`;

/** Polls `check` every 20 ms until it holds, at most `timeoutMs`; returns whether it did. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 3000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
}

describe('clock guard for every client: a voter whose clock steps ahead of the others is marked', () => {
  let cluster: TestCluster;
  let clocks: ClockFiles;

  /** Voter `i`'s restart-guard marker, ms left on its own clock (0: none running). */
  async function markerLeftMs(i: number): Promise<number> {
    const client = cluster.redis.client(i);
    const [marker, [seconds, micros]] = await Promise.all([client.get(MARKER), client.time()]);
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return Math.max(0, Number(marker ?? '0') - now);
  }

  /** Whether `engine` is granted `resource` while voters 3 and 4 hold it for someone else: only with voter 2. */
  async function grantedWithVoter2(engine: Redlock, resource: string): Promise<boolean> {
    await Promise.all(
      [3, 4].map((i) => cluster.redis.client(i).set(lockKey(resource), 'someone', 'PX', 10_000)),
    );
    const lock = await engine.tryAcquire(resource, { ttl: 1000 }).catch((e: unknown) => {
      if ((e as Error).name === 'QuorumUnavailableError') return null;
      throw e;
    });
    await lock?.release();
    await Promise.all([3, 4].map((i) => cluster.redis.client(i).del(lockKey(resource))));
    return lock !== null;
  }

  beforeEach(async () => {
    clocks = new ClockFiles();
    cluster = await TestCluster.start(5, { env: (i) => clocks.env(nodeClock(i)) });
    await Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).set(MARKER, '0')));
  });
  afterEach(async () => {
    await cluster?.close();
    clocks?.close();
  });

  test('engine A sees voter 2 step +30 s and marks it; a fresh engine B and an engine C without the clock guard refuse voter 2 until the guard passed, B until its clock is back', async () => {
    const logger = new MemoryLogger();
    const a = await cluster.engine({ ttl: 1000, restartGuard: GUARD_MS, logger });
    // C connected before the step and reads no clock at all: only the voter's marker can stop it.
    const c = await cluster.engine({ ttl: 1000, restartGuard: GUARD_MS, clockGuard: false });
    expect(await grantedWithVoter2(c, 'before')).toBe(true); // voter 2 counts for C, and its counter exists
    await (await a.acquire('warm')).release();

    clocks.step(nodeClock(2), 30_000);
    await (await a.acquire('after-step')).release(); // voters 0, 1, 3, 4 grant; voter 2's reply shows the step
    expect(await eventually(async () => (await markerLeftMs(2)) > GUARD_MS - 500)).toBe(true);
    expect(await markerLeftMs(0)).toBe(0);
    // The fence counters on voter 2 are gone, so every grant there reads the marker.
    expect(await cluster.redis.client(2).exists(`${lockKey('before')}:fence`)).toBe(0);
    expect(await cluster.redis.client(0).exists(`${lockKey('before')}:fence`)).toBe(1);
    expect(logger.lines.some((l) => l.includes('under the restart guard for every client'))).toBe(true);
    const marked = performance.now();

    // B starts after the marking (its identity check reads the running marker), with preflight
    // 'error': voter 2's clock, 30 s ahead of the others, does not fail its bootstrap, since it abstains.
    const events: LockEvent[] = [];
    const b = await cluster.engine({ ttl: 1000, restartGuard: GUARD_MS });
    const subscription = b.events$.subscribe((e) => events.push(e));
    expect(await grantedWithVoter2(b, 'fresh')).toBe(false);
    expect(await grantedWithVoter2(c, 'before')).toBe(false);
    subscription.unsubscribe();

    // Once the guard has passed on voter 2, C (no clock guard) counts it again; B does not while
    // voter 2's clock stays 30 s ahead of the voters' median (fence counters it seeds from its clock
    // would be ahead of every other voter's reach: seed 3594078474 of the simulator).
    await sleep(Math.max(0, marked + GUARD_MS + 100 - performance.now()));
    expect(await grantedWithVoter2(c, 'before')).toBe(true);
    expect(await grantedWithVoter2(b, 'fresh')).toBe(false);
    // NTP steps voter 2 back: B counts it again once the exclusion of its last reading ahead has run out.
    clocks.set(nodeClock(2), 0);
    expect(await eventually(() => grantedWithVoter2(b, 'fresh'), GUARD_MS + 2000)).toBe(true);
  });

  test('a client process stopped (SIGSTOP) for 3 s with the lock cycling marks no voter', async () => {
    const urls = cluster.redis.urls.map((_, i) => cluster.url(i));
    const child = spawn(process.execPath, ['--input-type=module', '-e', CLIENT], {
      cwd: ROOT,
      env: { ...process.env, LOCK_NODES: JSON.stringify(urls) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const ticks = () => output.split('\n').filter((l) => l === 'tick').length;
    try {
      expect(await eventually(() => Promise.resolve(ticks() >= 20), 10_000)).toBe(true);
      child.kill('SIGSTOP'); // mid-cycle: replies wait in its sockets, timers fall due
      await sleep(3000);
      const before = ticks();
      child.kill('SIGCONT');
      expect(await eventually(() => Promise.resolve(ticks() >= before + 50), 10_000)).toBe(true);
    } finally {
      child.kill('SIGCONT');
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
    expect(output).not.toMatch(/warn|error|abstaining/);
    for (let i = 0; i < 5; i++) expect(await markerLeftMs(i)).toBe(0);
  });

  test('every voter moving alike (a client whose own clock stood still) marks none; the engine alone refuses them', async () => {
    const logger = new MemoryLogger();
    const a = await cluster.engine({ ttl: 1000, restartGuard: GUARD_MS, logger });
    const events: LockEvent[] = [];
    const subscription = a.events$.subscribe((e) => events.push(e));
    await (await a.acquire('warm')).release();
    // Every reply of that round is read before the steps: one read after them (a loaded machine;
    // the round decided at the third grant) shows its voter 30 s ahead of the round's others, which
    // rightly marks it (seen once in a bare-machine run). A PING answered on each connection comes
    // after them.
    expect(await eventually(async () => (await a.probe()).every((s) => s.reachable))).toBe(true);
    for (let i = 0; i < 5; i++) clocks.step(nodeClock(i), 30_000);
    // Each voter stepped for A alone: A counts none of them for now (its own evidence).
    await expect(a.tryAcquire('alike')).rejects.toMatchObject({ name: 'QuorumUnavailableError' });
    // The round decided at the third refusal; the last two replies follow.
    const steps = () => events.filter((e) => e.type === 'node-abstaining' && e.cause === 'clock');
    await eventually(() => Promise.resolve(steps().length === 5));
    subscription.unsubscribe();
    expect(steps()).toHaveLength(5);
    await a.close(); // every command A sent has landed
    for (let i = 0; i < 5; i++) expect(await markerLeftMs(i)).toBe(0);
    expect(logger.lines.filter((l) => l.includes('for every client'))).toEqual([]);
    // Another engine counts every voter at once.
    const b = await cluster.engine({ ttl: 1000, restartGuard: GUARD_MS });
    await (await b.acquire('alike')).release();
  });
});
