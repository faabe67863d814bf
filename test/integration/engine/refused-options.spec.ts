import { createServer, type Socket } from 'node:net';
import { Redlock, RedlockOptionsError } from '../../../lib/index.js';

/*
 * A Redlock whose options are refused leaves no connection behind: a node refused before anything
 * is opened for it, and the connections opened for the nodes before it closed. A connection left
 * behind reconnects for ever with nobody to close it (seen: a Cluster opened for a `{ cluster }`
 * node refused for a braced key prefix kept Jest from exiting after the whole suite). The nodes are
 * plain TCP listeners: what matters is who connects, and who stays connected.
 */

interface Listener {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections still open. */
  readonly open: number;
  close(): Promise<void>;
}

async function listener(): Promise<Listener> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    get accepted() {
      return accepted;
    },
    get open() {
      return sockets.size;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!condition() && performance.now() < end) await sleep(20);
  return condition();
}

test('a Cluster node refused for its key prefix is never connected to', async () => {
  const cluster = await listener();
  try {
    const build = () =>
      new Redlock({ nodes: [{ cluster: [{ host: '127.0.0.1', port: cluster.port }] }], keyPrefix: '{app}:' });
    expect(build).toThrow(RedlockOptionsError);
    expect(build).toThrow(/holds a brace/);
    await sleep(300);
    expect(cluster.accepted).toBe(0);
  } finally {
    await cluster.close();
  }
});

test('when a later node is refused, the connection opened for a node before it is closed', async () => {
  const [first, cluster] = [await listener(), await listener()];
  try {
    expect(
      () =>
        new Redlock({
          nodes: [
            `redis://127.0.0.1:${first.port}`,
            { cluster: [{ host: '127.0.0.1', port: cluster.port }] },
          ],
          keyPrefix: '{app}:',
        }),
    ).toThrow(/nodes\[1\] is a Redis Cluster/);
    // The first node's connection, opened before the second node was refused, is closed (or never
    // made it), and nothing reconnects.
    expect(await until(() => first.open === 0, 2000)).toBe(true);
    const accepted = first.accepted;
    await sleep(500);
    expect({ accepted: first.accepted, open: first.open, cluster: cluster.accepted }).toEqual({
      accepted,
      open: 0,
      cluster: 0,
    });
  } finally {
    await Promise.all([first.close(), cluster.close()]);
  }
});
