/**
 * For the repository's own type-check of node-redis-boot.ts only: run.mjs copies
 * docs/examples/node-redis-module.ts into each node-redis app as `src/locks.module.ts` instead.
 */
export * from '../../../docs/examples/node-redis-module.js';
