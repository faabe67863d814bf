/* global setTimeout */
// What one engine keeps per distinct key it locked, in a process of its own (node --expose-gc).
// For each kind of KINDS (read, semaphore, mutex) it locks keys `<kind>-leak:<n>` for n in
// [0, COUNT), each lock released at once, 32 at a time, and prints one JSON line per kind:
// { kind, keys, bytesPerKey }: the heap (after full collections, without V8's code spaces) grown
// from the first COUNT / 10 keys to the last, per key. Nodes: NODE_URLS, comma-separated.
// Imports the built package (dist/): `npm test` builds it first.
import { getHeapSpaceStatistics } from 'node:v8';
import { Redlock } from '../../dist/index.js';

const count = Number(process.env.COUNT ?? 5000);
const kinds = (process.env.KINDS ?? 'read,semaphore,mutex').split(',');
const nodes = process.env.NODE_URLS.split(',');
const CONCURRENCY = 32;
const TTL_MS = 1000;

/**
 * Heap used after full collections, without V8's code spaces (JIT code grows for a while), once
 * the released locks' timers have run out (a cancelled timer may be dropped only when due).
 */
async function dataHeap() {
  await new Promise((resolve) => setTimeout(resolve, TTL_MS + 200));
  for (let i = 0; i < 4; i++) globalThis.gc();
  return getHeapSpaceStatistics()
    .filter((space) => !space.space_name.startsWith('code'))
    .reduce((sum, space) => sum + space.space_used_size, 0);
}

const options = { read: { mode: 'read' }, semaphore: { permits: 3 }, mutex: {} };

async function lockKeys(engine, kind, first, last) {
  let next = first;
  const worker = async () => {
    while (next < last) {
      const lock = await engine.acquire(`${kind}-leak:${next++}`, { ttl: TTL_MS, ...options[kind] });
      await lock.release();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const engine = new Redlock({
  nodes,
  restartGuard: false,
  nodeTimeout: 500, // a machine busy with other tests must not fail the count
  logger: { log() {}, warn() {}, error: console.error },
});
await engine.connect();
try {
  for (const kind of kinds) {
    const tenth = Math.floor(count / 10);
    await lockKeys(engine, kind, 0, tenth);
    const before = await dataHeap();
    await lockKeys(engine, kind, tenth, count);
    const after = await dataHeap();
    const bytesPerKey = (after - before) / (count - tenth);
    console.log(JSON.stringify({ kind, keys: count, bytesPerKey }));
  }
} finally {
  await engine.close();
}
