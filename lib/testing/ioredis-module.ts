import { ioredisModule } from '../core/clients/load.js';

/**
 * The ioredis module, for the testing helpers that open ioredis clients (loaded on first use:
 * ioredis is an optional peer). Kept out of the helpers' typings (test-clients.ts).
 */
export function ioredis(): typeof import('ioredis') {
  return ioredisModule<typeof import('ioredis')>();
}
