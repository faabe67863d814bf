import type { Lock, Redlock } from '../../../lib/index.js';
import { realRuntime, type Runtime } from '../../../lib/core/runtime.js';
import { TestCluster, severConnections, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';
import { apartFrom, subscribers, ticketErrorMs, waiting } from '../../support/waiting-line.js';

const lockKey = (r: string) => `redlock:{${r}}`;
const queueKey = (r: string) => `${lockKey(r)}:queue`;
const lockValue = (lock: Lock) => (lock as unknown as { value: string }).value;
/** The turn: how long a node hands a lock over for (max(4 x nodeTimeout, 200) ms). */
const TURN_MS = 400;

/**
 * The real runtime, except that a timer coming due while `hold()` is in force fires when its lift
 * is called (a cancelled one does not).
 */
function holdingTimers(): { runtime: Runtime; hold(): () => void } {
  let held: Promise<void> | undefined;
  const runtime: Runtime = {
    ...realRuntime,
    setTimeout(fire, ms) {
      let cancelled = false;
      const cancel = realRuntime.setTimeout(() => {
        if (!held) return fire();
        void held.then(() => cancelled || fire());
      }, ms);
      return () => {
        cancelled = true;
        cancel();
      };
    },
  };
  const hold = () => {
    let lift!: () => void;
    held = new Promise((resolve) => (lift = resolve));
    return () => {
      held = undefined;
      lift();
    };
  };
  return { runtime, hold };
}

/**
 * A release hands the lock to the first waiter for one resource: the waiter holds it once a
 * majority of nodes has, without asking again (see fair-queue.spec.ts for the order of waiters).
 */
describe('a lock handed over in line', () => {
  let cluster: TestCluster;
  let holder: Redlock;

  beforeAll(async () => {
    cluster = await TestCluster.start(5);
    holder = await cluster.engine();
    // Connect the admin clients now: a lease read right after a grant must not wait for a handshake.
    await Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).ping()));
  });
  afterAll(() => cluster?.close());

  const pttls = (resource: string) =>
    Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).pttl(lockKey(resource))));
  const values = (resource: string) =>
    Promise.all(cluster.redis.urls.map((_, i) => cluster.redis.client(i).get(lockKey(resource))));

  /** `waiter` waits for `resource` while the holder has it; resolves the waiter's lock after the release. */
  async function handOver(resource: string, waiter: Redlock, ttl = 10_000): Promise<Lock> {
    const first = await holder.acquire(resource, { ttl: 10_000 });
    const next = waiter.acquire(resource, { wait: 5000, ttl });
    await waiting(cluster, waiter, resource, 1);
    await first.release();
    return next;
  }

  test('starts with the short lease of a turn, never beyond what a majority of nodes holds, then is extended to end as a grant of its ttl would', async () => {
    // The keys must be read before the watchdog's first extension (half a turn after the hand-over).
    // On a loaded machine this test's own continuation can come later than that, so the waiter's
    // timers are held while the keys are read: its extension cannot be sent before the reads.
    const timers = holdingTimers();
    const waiter = await cluster.engine({ runtime: timers.runtime });
    let lock!: Lock;
    let grantedAt: number;
    let askedAt: number;
    let held: Array<string | null>;
    let leases: number[];
    for (let attempt = 1; ; attempt++) {
      const lift = timers.hold();
      lock = await handOver(attempt === 1 ? 'short-lease' : `short-lease-${attempt}`, waiter);
      grantedAt = Date.now();
      askedAt = Date.now();
      [held, leases] = await Promise.all([values(lock.resources[0]!), pttls(lock.resources[0]!)]);
      lift();
      // A waiter that took the hand-overs too late to count them (a stall longer than the turn)
      // takes them with an attempt instead, whose lease is its ttl: such a try is made again.
      if (lock.expiresAt - grantedAt <= TURN_MS) break;
      await lock.release();
      if (attempt === 3) throw new Error('the waiter took the lock by an attempt, 3 tries in a row');
    }
    const resource = lock.resources[0]!;
    const ours = leases.filter((_, i) => held[i] === lockValue(lock)).sort((a, b) => b - a);
    expect(ours.length).toBeGreaterThanOrEqual(3);
    expect(ours[0]).toBeLessThanOrEqual(TURN_MS);
    // The lock ends no later than a majority's keys do (each read after askedAt; ms rounding).
    expect(lock.expiresAt).toBeLessThanOrEqual(askedAt + ours[2]! + 2);
    expect(lock.expiresAt - askedAt).toBeGreaterThan(TURN_MS / 2);

    await sleep(TURN_MS / 2 + 100); // the extension runs halfway through the turn
    expect(lock.signal.aborted).toBe(false);
    expect(lock.expiresAt - Date.now()).toBeGreaterThan(9000);
    expect(Math.min(...(await pttls(resource)))).toBeGreaterThan(9000);
    // It ends no later than a grant of its ttl (10 s) by an attempt would have: maxHold and the
    // caller's ttl mean the same for a lock handed over.
    expect(lock.expiresAt).toBeLessThanOrEqual(grantedAt + 10_000);
    await lock.release();
  });

  test("a caller's ttl shorter than the turn still bounds the lock", async () => {
    const waiter = await cluster.engine();
    const lock = await handOver('short-ttl', waiter, 150);
    expect(lock.expiresAt - Date.now()).toBeLessThanOrEqual(150);
    await lock.release();
  });

  test('a waiter whose process is gone is skipped at once, not after its turn', async () => {
    const first = await holder.acquire('gone', { ttl: 10_000 });
    const dead = await cluster.engine();
    const alive = await cluster.engine();
    const apartMs = ticketErrorMs(dead) + ticketErrorMs(alive);
    const askedFirst = performance.now();
    const deadLock = dead.acquire('gone', { wait: 5000 });
    deadLock.catch(() => undefined);
    await waiting(cluster, dead, 'gone', 1);
    await apartFrom(askedFirst, apartMs);
    const aliveLock = alive.acquire('gone', { wait: 5000 });
    await waiting(cluster, alive, 'gone', 2);
    // Both of the dead waiter's connections go, as when its process is killed.
    severConnections(dead);
    // The nodes skip a waiter nobody listens for once they have seen its subscriptions go.
    expect(await eventually(() => subscribers(cluster, dead), [0, 0, 0, 0, 0])).toEqual([0, 0, 0, 0, 0]);
    const released = performance.now();
    await first.release();
    const lock = await aliveLock;
    // Nobody listens for the dead waiter on any node, so each node passed on to the next in line
    // at once. Handing it to the dead one would have cost its turn (400 ms) and a re-check.
    expect(performance.now() - released).toBeLessThan(TURN_MS);
    expect(await values('gone')).toEqual(new Array(5).fill(lockValue(lock)));
    await lock.release();
  });

  test('a waiter whose attempt got part of the nodes frees them and keeps its place under a new value', async () => {
    // Held on nodes 2-4 by an engine of its own; nodes 0 and 1 are free.
    const minority = await cluster.engine({}, [2, 3, 4]);
    const old = await minority.acquire('split', { ttl: 10_000 });
    const waiter = await cluster.engine();
    const lock$ = waiter.acquire('split', { wait: 5000 });
    // Its attempt got nodes 0 and 1, and was queued on 2-4: it gives 0 and 1 back, and its place
    // in the queues on 2-4 then carries its new value (one entry each, no leftover of the old).
    // Polled, not slept on: on a busy machine its attempts may take longer than usual.
    const queued = () =>
      Promise.all([2, 3, 4].map((i) => cluster.redis.client(i).zrange(queueKey('split'), 0, -1)));
    // Settled: one entry queued on each of 2-4, all the same value, and 0-1 free, alike in two reads
    // 200 ms apart. Read once, the queues may still show the old value: the requeue that renames it
    // is on its way (a release before it hands the lock to the old value, and the requeue passes
    // that on to the new one: conformance row requeue-handed; this row is about the queues).
    const state = async () => JSON.stringify([await queued(), (await values('split')).slice(0, 2)]);
    const settledWithin = performance.now() + 5000;
    for (let seen = ''; ; await sleep(200)) {
      const now = await state();
      const [queues, free] = JSON.parse(now) as [string[][], unknown[]];
      const ready = queues.every((q) => q.length === 1) && new Set(queues.flat()).size === 1;
      if (now === seen && ready && free.every((v) => v === null)) break;
      if (performance.now() > settledWithin) throw new Error(`not settled within 5 s: ${now}`);
      seen = now;
    }
    const queues = await queued();
    expect(queues.map((q) => q.length)).toEqual([1, 1, 1]);
    expect(new Set(queues.flat()).size).toBe(1);
    const released = performance.now();
    await old.release(); // nodes 2-4 hand the lock to the waiter: a majority
    const lock = await lock$;
    expect(performance.now() - released).toBeLessThan(200);
    expect(lockValue(lock)).toBe(queues[0]![0]);
    expect(lock.fencingToken).toBeGreaterThan(old.fencingToken);
    await lock.release();
  });

  test('what nodes handed a waiter before it gave back a partial grant passes to its new value, not to nobody', async () => {
    // Held on nodes 0-1 by one engine and on 2-4 by another; the waiter queues on all five, and
    // a second waiter queues behind it.
    const onTwo = await cluster.engine({}, [0, 1]);
    const onThree = await cluster.engine({}, [2, 3, 4]);
    const two = await onTwo.acquire('passed-on', { ttl: 10_000 });
    const three = await onThree.acquire('passed-on', { ttl: 10_000 });
    const waiter = await cluster.engine();
    const behind = await cluster.engine();
    const apartMs = ticketErrorMs(waiter) + ticketErrorMs(behind);
    const askedFirst = performance.now();
    const lock$ = waiter.acquire('passed-on', { wait: 5000 });
    await waiting(cluster, waiter, 'passed-on', 1);
    await apartFrom(askedFirst, apartMs);
    const behind$ = behind.acquire('passed-on', { wait: 5000 });
    await waiting(cluster, behind, 'passed-on', 2);
    // Nodes 0 and 1 hand the lock to the waiter: not a majority. Half a turn later it tries, gets
    // 0 and 1, finds 2-4 busy, gives 0 and 1 back and renames its place: the release hands them on
    // to the first in line, which is the waiter under its new value (not the one behind it).
    await two.release();
    await sleep(TURN_MS / 2 + 100);
    const renamed = await cluster.redis.client(2).zrange(queueKey('passed-on'), 0, 0);
    expect((await values('passed-on')).slice(0, 2)).toEqual([renamed[0], renamed[0]]);
    await three.release(); // nodes 2-4 hand it over too: the waiter holds all five
    const lock = await lock$;
    expect(lockValue(lock)).toBe(renamed[0]);
    expect(await values('passed-on')).toEqual(new Array(5).fill(lockValue(lock)));
    await lock.release();
    await (await behind$).release();
  });
});
