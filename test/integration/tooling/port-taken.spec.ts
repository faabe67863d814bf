/**
 * The launchers of `nest-quorum-lock/testing` pick a port that is free (freePort: bind 0, close)
 * and then start the server on it; another process may take the port in between (an outgoing
 * connection's ephemeral port, another test run's server: `bind: Address already in use` in a
 * loaded full run). Each launcher then tries another port, a bounded number of times. The thief
 * below takes chosen ports the moment freePort lets go of them, so the race is lost every time it
 * is asked to be, not once in a thousand runs.
 */
import net from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  MariaDbServer,
  PostgresServer,
  RedisClusterNodes,
  RedisNodes,
  SentinelGroup,
} from '../../../lib/testing/index.js';
import { PORT_ATTEMPTS } from '../../../lib/testing/free-port.js';

/**
 * Listens on the port of the `n`th socket closed in this process (0, 1, ...) when `steal(n)` says
 * so, before the closer hears that its socket is closed: freePort's pick is then taken by the time
 * a server tries to bind it. Only freePort closes listening sockets while a test runs here.
 */
class PortThief {
  /** Ports handed out by freePort, in order. */
  readonly picked: number[] = [];
  /** The ones taken. */
  readonly stolen: number[] = [];
  private readonly held: net.Server[] = [];
  private readonly close = net.Server.prototype.close;

  constructor(steal: (n: number) => boolean) {
    const { close, picked, stolen, held } = this;
    net.Server.prototype.close = function (this: net.Server, callback?: (err?: Error) => void) {
      const address = this.address();
      if (!address || typeof address !== 'object') return close.call(this, callback);
      const n = picked.push(address.port) - 1;
      if (!steal(n)) return close.call(this, callback);
      return close.call(this, (err?: Error) => {
        const squatter = net.createServer();
        squatter.once('error', () => callback?.(err)); // someone else was quicker: nothing to do
        squatter.listen(address.port, address.address, () => {
          held.push(squatter);
          stolen.push(address.port);
          callback?.(err);
        });
      });
    };
  }

  /** Puts close() back and gives the stolen ports up. */
  async restore(): Promise<void> {
    net.Server.prototype.close = this.close;
    await Promise.all(this.held.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

async function withThief<T>(
  steal: (n: number) => boolean,
  run: (thief: PortThief) => Promise<T>,
): Promise<T> {
  const thief = new PortThief(steal);
  try {
    return await run(thief);
  } finally {
    await thief.restore();
  }
}

async function ping(url: string): Promise<string> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.ping();
  } finally {
    client.disconnect();
  }
}

describe('a port taken between the pick and the bind', () => {
  test('RedisNodes: the nodes whose first port was taken start on another one', async () => {
    // The three nodes pick at once: picks 0-2 are their first, all taken.
    await withThief(
      (n) => n < 3,
      async (thief) => {
        const nodes = await RedisNodes.start(3);
        try {
          expect(thief.stolen).toHaveLength(3);
          for (const port of nodes.ports) expect(thief.stolen).not.toContain(port);
          for (const url of nodes.urls) expect(await ping(url)).toBe('PONG');
          // A restart keeps the node's port.
          const port = nodes.port(1);
          await nodes.restart(1);
          expect(nodes.port(1)).toBe(port);
          expect(await ping(nodes.url(1))).toBe('PONG');
        } finally {
          await nodes.close();
        }
      },
    );
  });

  test('RedisClusterNodes: the cluster forms on the ports the nodes got', async () => {
    await withThief(
      (n) => n < 3,
      async (thief) => {
        const cluster = await RedisClusterNodes.start(3);
        try {
          expect(thief.stolen).toHaveLength(3);
          const client = cluster.client();
          try {
            await client.set('port-taken', '1');
            expect(await client.get('port-taken')).toBe('1');
          } finally {
            client.disconnect();
          }
        } finally {
          await cluster.close();
        }
      },
    );
  });

  test('SentinelGroup: the primary, the replica and the Sentinel each lose their first port', async () => {
    // One launch after another: every even pick is a launch's first.
    await withThief(
      (n) => n % 2 === 0,
      async (thief) => {
        const group = await SentinelGroup.start();
        try {
          expect(thief.stolen).toHaveLength(3);
          expect(thief.stolen).not.toContain(group.sentinelPorts[0]);
          expect(await group.primaryPort()).toBe(group.servers[0].port(0));
        } finally {
          await group.close();
        }
      },
    );
  });

  test('PostgresServer and MariaDbServer: started on the next port', async () => {
    await withThief(
      (n) => n === 0,
      async (thief) => {
        const server = await PostgresServer.start();
        try {
          expect(thief.stolen).toEqual([thief.picked[0]]);
          expect(server.port).toBe(thief.picked[1]);
          const client = new pg.Client({ connectionString: server.url });
          await client.connect();
          try {
            expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
          } finally {
            await client.end();
          }
        } finally {
          await server.close();
        }
      },
    );
    await withThief(
      (n) => n === 0,
      async (thief) => {
        const server = await MariaDbServer.start();
        try {
          expect(thief.stolen).toEqual([thief.picked[0]]);
          expect(server.port).toBe(thief.picked[1]);
        } finally {
          await server.close();
        }
      },
    );
  }, 120_000);

  test(`gives up after ${PORT_ATTEMPTS} ports, saying so; any other failure is not retried`, async () => {
    await withThief(
      () => true,
      async (thief) => {
        const err = await RedisNodes.start(1).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message).toMatch(
          new RegExp(
            `^every port tried on 127\\.0\\.0\\.1 was taken before the server could bind it \\(\\d+(, \\d+){${PORT_ATTEMPTS - 1}}\\)`,
          ),
        );
        expect((err as Error).message).toContain('Address already in use');
        expect(thief.stolen).toHaveLength(PORT_ATTEMPTS);
      },
    );
    await withThief(
      () => false,
      async (thief) => {
        const err = await RedisNodes.start(1, { extraArgs: ['--no-such-directive', 'x'] }).catch(
          (e: unknown) => e,
        );
        expect((err as Error).message).toMatch(/exited \(1\) while starting/);
        expect(thief.picked).toHaveLength(1);
      },
    );
  });
});
