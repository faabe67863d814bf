import { Redlock } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { LOCK_USER, MINIMAL_ACL } from '../../support/acl.js';
import { MemoryLogger } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * A wake subscription that failed is retried (issue 36, item 7): the lock user may not SUBSCRIBE
 * on any node at first, so the waiter's engine hears no hand-overs; it says so once per node,
 * shows it in status(), and keeps waiting (polling, its ticket kept). Once the ACL allows it, a
 * retry subscribes, status() clears, and the waiter gets the lock.
 */

describe('a failed wake subscription (real nodes, ACL)', () => {
  let nodes: RedisNodes;

  beforeAll(async () => {
    const acl = MINIMAL_ACL.filter((rule) => rule !== '+subscribe');
    nodes = await RedisNodes.start(3, { extraArgs: ['--user', LOCK_USER.username, ...acl] });
  });
  afterAll(() => nodes?.close());

  test('is reported once, shown in status(), retried with back-off until it works; the waiter keeps waiting and gets the lock', async () => {
    const asLocker = nodes.urls.map((url) =>
      url.replace('redis://', `redis://${LOCK_USER.username}:${LOCK_USER.password}@`),
    );
    const logger = new MemoryLogger();
    // preflight 'warn': its ACL probe names the missing SUBSCRIBE, as it should, without refusing.
    const waiter = new Redlock({ nodes: asLocker, restartGuard: false, preflight: 'warn', logger });
    const holder = new Redlock({ nodes: nodes.urls, restartGuard: false, logger: new MemoryLogger() });
    await Promise.all([waiter.connect(), holder.connect()]);
    try {
      const lock = await holder.acquire('contended', { ttl: 20_000 });
      const waiting = waiter.acquire('contended', { wait: 15_000 });
      const failing = await eventually(
        () => Promise.resolve(waiter.status().every((s) => s.subscriptionError !== undefined)),
        true,
      );
      expect(failing).toBe(true);
      expect(waiter.status()[0]!.subscriptionError).toMatch(/NOPERM|permission/i);
      const queued = () =>
        Promise.all(nodes.urls.map((_, i) => nodes.client(i).zcard('redlock:{contended}:queue')));
      expect(await queued()).toEqual([1, 1, 1]);

      await Promise.all(
        nodes.urls.map((_, i) => nodes.client(i).call('ACL', 'SETUSER', LOCK_USER.username, '+subscribe')),
      );
      const cleared = await eventually(
        () => Promise.resolve(waiter.status().every((s) => s.subscriptionError === undefined)),
        true,
        8000,
      );
      expect(cleared).toBe(true);
      const reported = logger.lines.filter((line) => /cannot subscribe to its wake-ups/.test(line));
      expect(reported).toHaveLength(3); // once per node, however many retries failed
      expect(logger.lines.filter((line) => /wake-ups subscribed again/.test(line))).toHaveLength(3);

      await lock.release();
      const taken = await waiting;
      expect(taken.fencingToken).toBeGreaterThan(lock.fencingToken);
      await taken.release();
    } finally {
      await Promise.all([waiter.close(), holder.close()]);
    }
  }, 30_000);
});
