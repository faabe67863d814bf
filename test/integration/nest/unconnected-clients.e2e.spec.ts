import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { DistributedLock, FencingToken, RedlockModule, type RedlockNode } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';

/*
 * Clients passed in unconnected (issue 40, item 2). node-redis' connect() never settles while its
 * node is down or refuses the password, so docs/clients.md passes node-redis clients unconnected:
 * the library connects them, waits at most connectTimeout, and, having opened their connections,
 * closes them on shutdown. A client the app connected stays the app's. Real redis-server nodes;
 * one is killed, or refuses the password the client sends.
 */

const CONNECT_TIMEOUT = 1000;

@Injectable()
class Orders {
  @DistributedLock('order:{0}')
  async pay(id: string, @FencingToken() token?: number): Promise<number> {
    void id;
    return token!;
  }
}

/** A node-redis client as the docs show it: created, not connected. */
type NodeRedisClient = ReturnType<typeof createClient> | ReturnType<typeof createClient5>;

async function boot(nodes: RedlockNode[]): Promise<{ app: INestApplication; bootMs: number }> {
  const started = performance.now();
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({
        nodes,
        restartGuard: false,
        connectTimeout: CONNECT_TIMEOUT,
        client: 'node-redis',
      }),
    ],
    providers: [Orders],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return { app, bootMs: performance.now() - started };
}

describe.each([
  ['node-redis 6', (url: string): NodeRedisClient => createClient({ url })],
  ['node-redis 5', (url: string): NodeRedisClient => createClient5({ url })],
])('%s clients passed in unconnected', (_name, make) => {
  test('one node down: the app boots within connectTimeout, locks on the other two, and closing it closes the clients it connected', async () => {
    const redis = await RedisNodes.start(3);
    const clients = redis.urls.map(make);
    try {
      await redis.kill(0); // nothing listens on its port: node-redis retries for ever
      const { app, bootMs } = await boot(clients);
      try {
        expect(bootMs).toBeLessThan(CONNECT_TIMEOUT + 3000);
        const orders = app.get(Orders);
        const [a, b] = [await orders.pay('1'), await orders.pay('2')];
        expect(Number.isSafeInteger(a) && Number.isSafeInteger(b)).toBe(true);
        expect(clients.map((c) => c.isOpen)).toEqual([true, true, true]);
      } finally {
        await app.close();
      }
      // Before: the down node's client went on reconnecting after close (an open handle).
      expect(clients.map((c) => c.isOpen)).toEqual([false, false, false]);
    } finally {
      for (const c of clients) if (c.isOpen) c.destroy();
      await redis.close();
    }
  });

  test('one node refuses the password: the app boots, locks on the other two, and closes the clients it connected', async () => {
    const redis = await RedisNodes.start(3, { password: 'right' });
    const urls = redis.urls.map((url, i) => (i === 0 ? url.replace(':right@', ':wrong@') : url));
    const clients = urls.map(make);
    try {
      const { app, bootMs } = await boot(clients);
      try {
        expect(bootMs).toBeLessThan(CONNECT_TIMEOUT + 3000);
        expect(Number.isSafeInteger(await app.get(Orders).pay('1'))).toBe(true);
      } finally {
        await app.close();
      }
      expect(clients.map((c) => c.isOpen)).toEqual([false, false, false]);
    } finally {
      for (const c of clients) if (c.isOpen) c.destroy();
      await redis.close();
    }
  });
});

describe('clients the app connected stay the app’s', () => {
  test('node-redis and ioredis clients connected by the app are open after close; unconnected ones (ioredis lazyConnect) are closed', async () => {
    const redis = await RedisNodes.start(3);
    const mine = createClient({ url: redis.url(0) });
    mine.on('error', () => undefined);
    await mine.connect();
    const lazy = new Redis(redis.url(1), { lazyConnect: true, enableOfflineQueue: false });
    const ready = new Redis(redis.url(2), { enableOfflineQueue: false });
    try {
      const { app } = await boot([mine, lazy, ready]);
      try {
        expect(Number.isSafeInteger(await app.get(Orders).pay('1'))).toBe(true);
      } finally {
        await app.close();
      }
      expect(mine.isOpen).toBe(true);
      expect(await mine.ping()).toBe('PONG');
      expect(ready.status).toBe('ready');
      expect(lazy.status).toBe('end'); // the library connected it, so it closed it
    } finally {
      if (mine.isOpen) mine.destroy();
      lazy.disconnect();
      ready.disconnect();
      await redis.close();
    }
  });
});
