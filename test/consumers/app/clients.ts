/**
 * For the repository's own type-check of main.ts only: run.mjs copies one of clients-*.ts into
 * each generated app as `src/clients.ts` instead of this file.
 */
export * from './clients-ioredis.js';
