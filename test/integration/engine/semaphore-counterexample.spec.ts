import { Redis } from 'ioredis';
import { RedlockSemaphore } from 'redis-semaphore';
import type { Redlock } from '../../../lib/index.js';
import { TestCluster } from '../../support/cluster.js';

/*
 * S26, the counter-example to counting holders per node: 3 nodes, 2 permits, three clients, each
 * cut off from a different node (its ACL user disabled there: `ACL SETUSER cN off`, and its
 * connections there closed). A count per node admits a client wherever a majority of the nodes it
 * reaches has room, and every node sees only two of the three clients: all three are admitted.
 * Slots, each a Redlock of its own, admit at most two: two clients that hold slots hold them on
 * majorities, and any two majorities share a node.
 *
 * The control is redis-semaphore's RedlockSemaphore (a count per node, admitted on a majority) in
 * the same run, on the same nodes and users.
 */

const PASSWORD = 'client-secret';
const user = (client: number) => `c${client}`;

describe('S26: 3 nodes, 2 permits, three clients each cut off from a different node', () => {
  let cluster: TestCluster;
  const clients: Redis[] = [];

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    // Users c0..c2 on every node, each disabled on "its" node.
    for (let node = 0; node < 3; node++) {
      const admin = cluster.redis.client(node);
      for (let client = 0; client < 3; client++) {
        await admin.call('ACL', 'SETUSER', user(client), 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
      }
      await admin.call('ACL', 'SETUSER', user(node), 'off');
      await admin.call('CLIENT', 'KILL', 'USER', user(node));
    }
  });
  afterAll(async () => {
    clients.forEach((c) => c.disconnect());
    await cluster?.close();
  });

  /** Client `client`'s URL of node `node`, as its ACL user. */
  const url = (client: number, node: number) =>
    `redis://${user(client)}:${PASSWORD}@127.0.0.1:${cluster.redis.port(node)}`;

  test('ours admits at most 2; RedlockSemaphore (the control) admits 3', async () => {
    // Ours: each client an engine over all three nodes, as its own user (one node refuses it).
    const engines: Redlock[] = [];
    for (let client = 0; client < 3; client++) {
      engines.push(
        await cluster.engine({
          nodes: [0, 1, 2].map((node) => url(client, node)),
          connectTimeout: 1000,
          nodeTimeout: 500,
        }),
      );
    }
    for (let client = 0; client < 3; client++) {
      expect(engines[client]!.status().map((s) => s.reachable)).toEqual([0, 1, 2].map((n) => n !== client));
    }
    // One after the other (the counter-example needs no race): each tries once.
    const ours = [];
    for (const engine of engines) ours.push(await engine.tryAcquire('s26', { permits: 2, ttl: 10_000 }));
    const oursAdmitted = ours.filter((lock) => lock !== null).length;

    // The control: one ioredis client per node and client, as the same users.
    const theirs: boolean[] = [];
    for (const client of [0, 1, 2]) {
      theirs.push(
        await (async () => {
          const redis = [0, 1, 2].map((node) => {
            const c = new Redis(url(client, node), {
              lazyConnect: true,
              maxRetriesPerRequest: 0,
              enableOfflineQueue: false,
            });
            c.on('error', () => undefined); // the node that refuses this user says so on every reconnection
            clients.push(c);
            return c;
          });
          await Promise.all(redis.map((c) => c.connect().catch(() => undefined)));
          const semaphore = new RedlockSemaphore(redis, 's26-control', 2, {
            lockTimeout: 10_000,
            acquireTimeout: 500,
            retryInterval: 20,
            refreshInterval: 0,
          });
          return semaphore.tryAcquire().catch(() => false);
        })(),
      );
    }
    const theirsAdmitted = theirs.filter(Boolean).length;
    console.log(
      `S26: ours admitted ${oursAdmitted} of 3 (permits 2); RedlockSemaphore admitted ${theirsAdmitted} of 3`,
    );
    expect(oursAdmitted).toBeLessThanOrEqual(2);
    expect(oursAdmitted).toBe(2); // both permits are usable
    expect(theirsAdmitted).toBe(3);
    // The holders' slots are distinct.
    const permits = ours.filter((l) => l !== null).map((l) => l!.permit);
    expect(new Set(permits).size).toBe(permits.length);
    await Promise.all(ours.map((l) => l?.release()));

    // The same three at once, waiting: two hold, the third waits in line until one releases.
    const held: number[] = [];
    let holding = 0;
    let most = 0;
    await Promise.all(
      engines.map((engine, client) =>
        engine.using(
          's26-waiting',
          async () => {
            most = Math.max(most, ++holding);
            await new Promise((r) => setTimeout(r, 200));
            held.push(client);
            holding--;
          },
          { permits: 2, wait: 5000, ttl: 2000 },
        ),
      ),
    );
    console.log(`S26, the three waiting: at most ${most} at once; all ${held.length} served in turn`);
    expect(most).toBe(2);
    expect(held.sort()).toEqual([0, 1, 2]);
  });
});
