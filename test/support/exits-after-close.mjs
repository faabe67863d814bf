/* global setTimeout, URL */
// A process that uses a client of its own as a lock node, closes the engine, then closes its
// client, and must exit by itself: nothing of the library may remain on the client (no listener,
// timer, retry or subscription). Prints one JSON line: the client's listeners before the engine and
// after close(), by event; if the process is still alive 3 s after, a second line names the
// handles that keep it (the parent fails on its deadline either way).
// KIND: ioredis | ioredis-cluster | iovalkey | iovalkey-cluster | node-redis | node-redis-cluster |
// glide | glide-cluster. The iovalkey kinds run as an app that has iovalkey only: ioredis and
// node-redis cannot be loaded in their process.
// NODE_URLS: the standalone nodes, or the cluster's startup nodes (host:port), comma-separated.
// Imports the built package (dist/).
import Module from 'node:module';
import { Redlock } from '../../dist/index.js';

const kind = process.env.KIND;
if (kind.startsWith('iovalkey')) {
  // As in an app without them (the library loads its client packages with require(), lazily).
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (/^(ioredis|redis)(\/|$)/.test(request)) {
      throw Object.assign(new Error(`Cannot find module '${request}' (an app on iovalkey only)`), {
        code: 'MODULE_NOT_FOUND',
      });
    }
    return resolve.call(this, request, ...rest);
  };
}
const urls = process.env.NODE_URLS.split(',');
const hostPort = (url) => {
  const { hostname, port } = new URL(url.includes('://') ? url : `redis://${url}`);
  return { host: hostname, port: Number(port) };
};

/** The client (or clients, one per node) of this process, and how it closes them. */
async function openClients() {
  if (kind === 'ioredis' || kind === 'iovalkey') {
    const { Redis } = await import(kind);
    const clients = urls.map((url) => new Redis(url));
    return { nodes: clients, emitters: clients, close: () => Promise.all(clients.map((c) => c.quit())) };
  }
  if (kind === 'ioredis-cluster' || kind === 'iovalkey-cluster') {
    const { Cluster } = await import(kind === 'iovalkey-cluster' ? 'iovalkey' : 'ioredis');
    const cluster = new Cluster(urls.map(hostPort));
    await new Promise((resolve) => cluster.once('ready', resolve));
    return { nodes: [cluster], emitters: [cluster, ...cluster.nodes('all')], close: () => cluster.quit() };
  }
  if (kind === 'node-redis') {
    const { createClient } = await import('redis');
    const clients = urls.map((url) => createClient({ url }));
    await Promise.all(clients.map((c) => c.connect()));
    return { nodes: clients, emitters: clients, close: () => Promise.all(clients.map((c) => c.close())) };
  }
  if (kind === 'node-redis-cluster') {
    const { createCluster } = await import('redis');
    const cluster = createCluster({ rootNodes: urls.map((url) => ({ url: `redis://${url}` })) });
    await cluster.connect();
    // The cluster and its masters' clients (the library follows their connections).
    const emitters = [cluster, ...cluster.masters.map((master) => master.client).filter(Boolean)];
    return { nodes: [cluster], emitters, close: () => cluster.close() };
  }
  const { GlideClient, GlideClusterClient } = await import('@valkey/valkey-glide');
  if (kind === 'glide') {
    const clients = await Promise.all(
      urls.map((url) => GlideClient.createClient({ addresses: [hostPort(url)], requestTimeout: 500 })),
    );
    return { nodes: clients, emitters: [], close: async () => clients.forEach((c) => c.close()) };
  }
  const cluster = await GlideClusterClient.createClient({
    addresses: urls.map(hostPort),
    requestTimeout: 500,
  });
  return { nodes: [cluster], emitters: [], close: async () => cluster.close() };
}

/** Listeners per event name on every emitter (the client, and a Cluster's node connections). */
function listeners(emitters) {
  const counts = {};
  for (const emitter of emitters) {
    for (const event of emitter.eventNames()) {
      const name = String(event);
      counts[name] = (counts[name] ?? 0) + emitter.listenerCount(event);
    }
  }
  return counts;
}

const clients = await openClients();
const before = listeners(clients.emitters);
const engine = new Redlock({
  nodes: clients.nodes,
  restartGuard: 1000,
  ttl: 500,
  nodeTimeout: 300,
  logger: { log() {}, warn() {}, error() {} },
});
await engine.connect();
// Exercise what attaches things: waits (wake subscriptions), grants, releases.
for (let i = 0; i < 3; i++) {
  const lock = await engine.acquire(`exits-${i}`, { wait: 1500 }).catch(() => undefined);
  await lock?.release();
}
// Many at once: what a tick's commands share (a batch, a bound's abort signal) must not make Node
// warn (stderr is checked to be empty).
const many = await Promise.all(Array.from({ length: 20 }, (_, i) => engine.acquire(`exits-many-${i}`)));
await Promise.all(many.map((lock) => lock.release()));
await engine.close();
const after = listeners(clients.emitters);
await clients.close();
console.log(JSON.stringify({ before, after }));
setTimeout(() => console.log(JSON.stringify({ alive: process.getActiveResourcesInfo() })), 3000).unref();
