// A process that takes locks, releases them all in one tick and exits at once (process.exit, no
// close()): `release()` resolves once its bytes are handed to the sockets, so every node must run
// every release although the process is gone. Prints one JSON line: the names it released.
// NODE_URLS: the nodes, comma-separated; NAMES: the lock names, comma-separated.
// Imports the built package (dist/).
import { Redlock } from '../../dist/index.js';

const engine = new Redlock({ nodes: process.env.NODE_URLS.split(','), restartGuard: false });
await engine.connect();
const names = process.env.NAMES.split(',');
const locks = await Promise.all(names.map((name) => engine.acquire(name, { ttl: 30_000 })));
await Promise.all(locks.map((lock) => lock.release())); // in one tick: batched, where batching is on
process.stdout.write(`${JSON.stringify({ released: names })}\n`);
process.exit(0);
