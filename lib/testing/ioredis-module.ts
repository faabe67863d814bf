import { ioredisModule } from '../core/clients/load.js';
import type { IoRedisTestClient } from './test-clients.js';

/**
 * The ioredis module, for the testing helpers that open ioredis clients (loaded on first use:
 * ioredis is an optional peer). Kept out of the helpers' typings (test-clients.ts).
 */
export function ioredis(): typeof import('ioredis') {
  return ioredisModule<typeof import('ioredis')>();
}

/** A plain ioredis client of a testing helper (`new Redis(url or options, options)`); its errors surface in its commands. */
export function testClient(target: string | object, options: object = {}): IoRedisTestClient {
  const { Redis } = ioredis();
  const client = (typeof target === 'string'
    ? new Redis(target, options)
    : new Redis({ ...target, ...options })) as unknown as IoRedisTestClient;
  client.on('error', () => undefined);
  return client;
}
