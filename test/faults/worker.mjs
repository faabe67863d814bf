/* global setTimeout, clearTimeout, queueMicrotask, URL */
/**
 * A fault-injection client: a separate Node process that, for each job the harness gives it, opens
 * its own connections and loops
 *   acquire (through the BUILT library) -> fenced read -> hold -> fenced write -> release
 * on a counter kept in a fenced store (a redis-server that is not a lock node), appending every
 * step to a JSON-lines history with process.hrtime.bigint() timestamps (CLOCK_MONOTONIC, shared by
 * all processes of the machine). test/faults/checker.ts reads the histories.
 *
 * IPC with the harness (harness.ts); one job at a time, the process is reused across scenarios
 * (starting Node and importing the library costs more CPU than most scenarios on 2 cores):
 *   -> {type:'idle'}            waiting for a job
 *   <- {type:'job', config}     see WorkerConfig in harness.ts
 *   -> {type:'ready'}           connected; <- {type:'go', startAt, endAt} (hrtime ns as strings)
 *   -> {type:'grant'|'abort'|'released'|'attempt'|'round-done', ...} when config.notify is set
 *   <- {type:'round', resource, startAt} in `rounds` mode (barrier start, S12)
 *   <- {type:'stop'}            finish the current iteration, release and close
 *   -> {type:'job-done'} | {type:'job-failed', error}, then idle again; <- {type:'exit'}
 * Standalone (debugging): `node test/faults/worker.mjs '<config JSON>'` runs one job at once for
 * config.durationMs and exits.
 *
 * Faults the worker inflicts on itself, on purpose:
 *   pauseAt 'acquire': SIGSTOP itself right after the acquire commands were written (S2);
 *   pauseAt 'hold':    SIGSTOP itself between the fenced read and the write (S1);
 *   overstayMs:        block its event loop (Atomics.wait, no CPU) past the lease, then release or
 *                      extend before any timer could run (S13);
 *   stallMs:           block its event loop right after sending each acquire and extension, for
 *                      longer than nodeTimeout but well within the lease (S2-short).
 * The harness resumes a self-stopped worker (SIGCONT) after the pause it chose.
 * The worker does not check lock.signal before writing (unless skipWriteIfLost): a pause can always
 * fall between such a check and the write; the fenced store is what must stop a stale write.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Redis } from 'ioredis';
import { FencedWriter, Redlock } from '../../dist/index.js';

const now = () => process.hrtime.bigint();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const between = ([min, max] = [0, 0]) => min + Math.random() * (max - min);
const silent = { log() {}, warn() {}, error() {} };

/**
 * FAULTS_CLIENT: the client the lock's nodes are reached with: `ioredis` (default: URLs opened by
 * the engine), `node-redis` (URLs, `client: 'node-redis'`) or `glide` (a GlideClient per URL,
 * created here, lazily connected so that a node down at start does not stop the worker).
 */
const CLIENT = process.env.FAULTS_CLIENT ?? 'ioredis';

async function lockNodes(nodes) {
  if (CLIENT === 'node-redis') return { nodes, client: 'node-redis', close() {} };
  if (CLIENT !== 'glide') return { nodes, close() {} };
  const { GlideClient } = await import('@valkey/valkey-glide');
  const clients = await Promise.all(
    nodes.map((url) => {
      const { hostname, port } = new URL(url);
      return GlideClient.createClient({
        addresses: [{ host: hostname, port: Number(port) }],
        requestTimeout: 500,
        lazyConnect: true,
      });
    }),
  );
  return {
    nodes: clients,
    close() {
      for (const client of clients) client.close();
    },
  };
}
const send = (message) => {
  if (process.connected) process.send(message);
};

// ---- fenced store ------------------------------------------------------------------------------
// A fenced register per resource: value, `seen` (highest token that read or wrote it) and
// `written` (token of the last accepted write). A read with a token below `seen` is refused; a
// write is accepted only if token > written (the last accepted write) and token >= seen (no newer
// holder has read it since), and records its token. Fencing the read as well as the write is what
// makes a read-modify-write safe: with write-only fencing, a paused holder whose read came before
// the next holder's read, and whose write lands before that holder's write, loses an update.
const READ = `
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < seen then return {0, string.format('%.0f', seen)} end
if token > seen then redis.call('SET', KEYS[2], ARGV[1]) end
return {1, redis.call('GET', KEYS[1]) or '0'}
`;
const WRITE = `
local token = tonumber(ARGV[1])
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
local written = tonumber(redis.call('GET', KEYS[3]) or '0')
if token < seen or token <= written then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[1])
return 1
`;
const storeKeys = (resource) => [
  `fs:{${resource}}:value`,
  `fs:{${resource}}:seen`,
  `fs:{${resource}}:written`,
];
// fencing 'writer': the library's FencedWriter (fenced read and write: refused when a higher token
// is above the last accepted one) after a plain, unfenced HGET, the way its docs and the sample app
// use it; kept in one hash per resource.
const writerKey = (resource) => `fw:{${resource}}`;

/** Runs one job (one worker of one scenario run) to its end. */
async function runJob(cfg) {
  const fd = openSync(cfg.history, 'a');
  /** Appends one event; synchronous, so a SIGKILL never loses an event that happened. */
  const log = (ev, fields = {}, t = now()) =>
    writeSync(fd, `${JSON.stringify({ ev, t: String(t), ...fields })}\n`);
  const notify = (message) => {
    if (cfg.notify) send(message);
  };
  /** hrtime (ns) at which the lock's current validity ends, from its epoch-ms expiresAt. */
  const validityEnd = (lock) => String(now() + BigInt(Math.round((lock.expiresAt - Date.now()) * 1e6)));

  // Messages of this job: go / round / stop (one waiter at a time).
  let stopping = false;
  let waiter;
  const onMessage = (message) => {
    if (message?.type === 'stop') stopping = true;
    if (waiter && (message?.type === waiter.type || message?.type === 'stop')) {
      const { resolve } = waiter;
      waiter = undefined;
      resolve(message);
    }
  };
  process.on('message', onMessage);
  const nextMessage = (type) =>
    stopping ? Promise.resolve({ type: 'stop' }) : new Promise((resolve) => (waiter = { type, resolve }));
  // Registered before we report ready, so that the harness's go cannot arrive unheard.
  const goMessage = cfg.rounds
    ? undefined
    : cfg.go
      ? Promise.resolve({ type: 'go', ...cfg.go })
      : nextMessage('go');

  const store = new Redis(cfg.store, { maxRetriesPerRequest: 1 });
  store.on('error', () => undefined);
  store.defineCommand('fencedRead', { numberOfKeys: 2, lua: READ });
  store.defineCommand('fencedWrite', { numberOfKeys: 3, lua: WRITE });
  const writer = cfg.fencing === 'writer' ? new FencedWriter(store) : undefined;
  // cfg.pg (S1-pg) or cfg.sql (S1-typeorm-pg, S1-knex-mariadb): the counter lives in a SQL
  // database instead (pg-store.mjs, sql-store.mjs), opened in the try below.
  let pgStore;
  const lock = cfg.lock && !cfg.peer ? await lockNodes(cfg.nodes) : undefined;
  // cfg.peer (S25's control): redis-semaphore's RedlockSemaphore instead of our engine.
  const peer = cfg.lock && cfg.peer ? await peerSemaphore(cfg) : undefined;
  const engine = lock
    ? new Redlock({
        nodes: lock.nodes,
        ...(lock.client ? { client: lock.client } : {}),
        ttl: cfg.ttl,
        nodeTimeout: cfg.nodeTimeout,
        restartGuard: cfg.restartGuard,
        ...(cfg.clockGuard === undefined ? {} : { clockGuard: cfg.clockGuard }),
        ...(cfg.healHolds === undefined ? {} : { healHolds: cfg.healHolds }),
        retryDelay: cfg.retryDelay,
        retryJitter: cfg.retryJitter,
        connectTimeout: 3000,
        logger: silent,
      })
    : undefined;
  // S23's control only: waiting tickets from this process's wall clock, as before issue 26 (a
  // switch on the engine's voter clocks, not an option of the library).
  if (engine && cfg.clientClockTickets) engine.parts.clocks.clientClockTickets = true;

  /** The iterations holding a read they act on as readers (they read and write nothing). */
  const readers = new Set();

  /** Read-modify-write of the counter under `token` (or unfenced when token is undefined). */
  async function readModifyWrite(i, resource, token, lock, holdMs) {
    // A reader (S27) reads the counter under its token, holds, and writes nothing.
    if (lock && readers.has(i)) return fencedReadOnly(i, resource, token, lock, holdMs);
    const [valueKey, seenKey, writtenKey] = storeKeys(resource);
    log('read-req', { i, resource, token });
    let value;
    if (pgStore) {
      const read = await pgStore.read(resource, token);
      value = read.value;
      log('read-ack', { i, resource, token, ok: read.ok, value });
      if (!read.ok) return;
    } else if (token === undefined) {
      value = Number((await store.get(valueKey)) ?? '0');
      log('read-ack', { i, resource, token, ok: true, value });
    } else if (writer) {
      const read = await writer.hgetall(writerKey(resource), token);
      value = Number(read.fields.value ?? '0');
      log('read-ack', { i, resource, token, ok: read.accepted, value });
      if (!read.accepted) return;
    } else {
      const [ok, v] = await store.fencedRead(valueKey, seenKey, token);
      log('read-ack', { i, resource, token, ok: ok === 1, value: Number(v) });
      if (ok !== 1) return;
      value = Number(v);
    }
    const pauseHere = lock && cfg.pauseAt === 'hold' && i % (cfg.pauseEvery ?? 1) === 0;
    const overstay = lock && cfg.overstayMs > 0 && i % (cfg.overstayEvery ?? 1) === 0;
    if (pauseHere) {
      log('pause', { i, at: 'hold' });
      process.kill(process.pid, 'SIGSTOP'); // the harness resumes us after ~1.5 x ttl
    } else if (overstay) {
      await overstayThenEnd(i, lock);
    } else if (holdMs > 0) {
      if (lock && cfg.watchdog) await sleepUnlessAborted(holdMs, lock.signal);
      else await sleep(holdMs);
    }
    if (lock && cfg.skipWriteIfLost && lock.signal.aborted) {
      log('write-skipped', { i, resource, token });
      return;
    }
    const next = value + 1;
    log('write-req', { i, resource, token, value: next });
    if (pgStore) {
      const ok = await pgStore.write(resource, token, next);
      log('write-ack', { i, resource, token, ok });
    } else if (token === undefined) {
      await store.set(valueKey, String(next));
      log('write-ack', { i, resource, token, ok: true });
    } else if (writer) {
      const { accepted } = await writer.hset(writerKey(resource), { value: next }, token);
      log('write-ack', { i, resource, token, ok: accepted });
    } else {
      const ok = await store.fencedWrite(valueKey, seenKey, writtenKey, token, String(next));
      log('write-ack', { i, resource, token, ok: ok === 1 });
    }
  }

  /** A reader's hold (S27): fenced read, hold; readers share the token of the last write. */
  async function fencedReadOnly(i, resource, token, lock, holdMs) {
    const [valueKey, seenKey] = storeKeys(resource);
    log('read-req', { i, resource, token });
    const [ok, v] = await store.fencedRead(valueKey, seenKey, token);
    log('read-ack', { i, resource, token, ok: ok === 1, value: Number(v) });
    if (holdMs > 0) await sleep(holdMs);
  }

  /**
   * S13: block the event loop past the lease (no timer can run, so the library cannot notice the
   * expiry first), then release or extend the expired lock before yielding once.
   */
  async function overstayThenEnd(i, lock) {
    log('overstay', { i, ms: cfg.overstayMs });
    block(cfg.overstayMs);
    const odd = Math.floor(i / (cfg.overstayEvery ?? 1)) % 2 === 1;
    const tq = now();
    const pending = odd ? lock.release() : lock.extend();
    const ev = odd ? 'stale-release' : 'extend';
    try {
      await pending;
      log(ev, { i, ok: true, tq: String(tq), afterExpiry: true });
    } catch (err) {
      log(ev, { i, ok: false, error: err?.name, tq: String(tq), afterExpiry: true });
    }
  }

  /** One acquire -> read-modify-write -> release. Returns whether the lock was granted. */
  async function iteration(i, resource) {
    if (peer) return peerIteration(i, resource);
    if (!engine) {
      await readModifyWrite(i, resource, undefined, undefined, between(cfg.holdMs));
      return true;
    }
    const pauseHere = cfg.pauseAt === 'acquire' && i % (cfg.pauseEvery ?? 1) === 0;
    // stallMs: continue from an I/O callback (a store reply), as most application code does, so
    // that after the stall the event loop runs due timers before it reads the sockets.
    if (cfg.stallMs > 0) await store.ping();
    // cfg.readShare (S27): this share of the acquires are reads (`mode: 'read'`), the rest writes.
    const mode = cfg.readShare === undefined ? undefined : Math.random() < cfg.readShare ? 'read' : 'write';
    const tq = now();
    log(
      'request',
      {
        i,
        resource,
        ttl: cfg.ttl,
        wait: cfg.wait,
        permits: cfg.permits,
        mode,
        paused: pauseHere || undefined,
      },
      tq,
    );
    let lock;
    try {
      const pending = engine.acquire(resource, {
        ttl: cfg.ttl,
        wait: cfg.wait,
        watchdog: cfg.watchdog === true,
        ...(cfg.permits === undefined ? {} : { permits: cfg.permits }),
        // S27-control (writeUnderReadLock): the writes take the read lock too, and write anyway.
        ...(mode === 'read' || (mode && cfg.writeUnderReadLock) ? { mode: 'read' } : {}),
      });
      // Once the acquire commands are on the wire, the replies wait in the sockets until the
      // harness resumes us (pauseAt, S2) or our stall ends (stallMs, S2-short).
      if (pauseHere) afterSend(() => process.kill(process.pid, 'SIGSTOP'));
      if (cfg.stallMs > 0) afterSend(() => block(cfg.stallMs));
      lock = await pending;
    } catch (err) {
      log('fail', {
        i,
        resource,
        error: err?.name ?? String(err),
        message: String(err?.message).slice(0, 200),
      });
      notify({ type: 'attempt', i, ok: false });
      return false;
    }
    const tg = now();
    log(
      'grant',
      {
        i,
        resource,
        token: lock.fencingToken,
        permit: lock.permit,
        // The mode the worker acts in: the lock's, or 'write' under a read lock (S27-control).
        mode: mode && (cfg.writeUnderReadLock ? mode : lock.mode),
        validityEnd: validityEnd(lock),
      },
      tg,
    );
    notify({ type: 'grant', i, token: lock.fencingToken, mode: lock.mode });
    notify({ type: 'attempt', i, ok: true });
    lock.signal.addEventListener('abort', () => {
      const reason = lock.signal.reason;
      log('abort', { i, resource, reason: reason?.name ?? String(reason), validityEnd: validityEnd(lock) });
      if (reason?.name === 'LockLostError') notify({ type: 'abort', i, reason: reason.name });
    });
    // A semaphore's tokens increase per permit: each permit has a fenced counter of its own.
    const storeResource = lock.permit === undefined ? resource : `${resource}#${lock.permit}`;
    try {
      if (lock.mode === 'read' && mode !== 'write') readers.add(i);
      await readModifyWrite(i, storeResource, lock.fencingToken, lock, between(cfg.holdMs));
      readers.delete(i);
    } catch (err) {
      log('error', {
        i,
        resource,
        error: err?.name ?? String(err),
        message: String(err?.message).slice(0, 200),
      });
    }
    if (cfg.extendBeforeRelease && lock.signal.aborted === false) {
      const tq2 = now();
      try {
        const extended = lock.extend();
        if (cfg.stallMs > 0) afterSend(() => block(cfg.stallMs));
        await extended;
        log('extend', { i, ok: true, tq: String(tq2) });
      } catch (err) {
        log('extend', {
          i,
          ok: false,
          error: err?.name,
          message: String(err?.message).slice(0, 300),
          tq: String(tq2),
        });
      }
    }
    log('release', { i, resource, validityEnd: validityEnd(lock) });
    await lock.release();
    log('released', { i, resource });
    notify({ type: 'released', i });
    return true;
  }

  /**
   * S25's control: acquire -> hold -> release with redis-semaphore's RedlockSemaphore (a count of
   * holders per node, admitted on a majority). It has no tokens, so nothing is written: the
   * checker counts holders. Its entry on a node lives lockTimeout from the attempt that made it,
   * so the hold is definite until request + ttl at the latest.
   */
  async function peerIteration(i, resource) {
    const tq = now();
    log('request', { i, resource, ttl: cfg.ttl, wait: cfg.wait, permits: cfg.permits }, tq);
    const semaphore = peer.semaphore(resource);
    try {
      await semaphore.acquire();
    } catch (err) {
      log('fail', {
        i,
        resource,
        error: err?.name ?? String(err),
        message: String(err?.message).slice(0, 200),
      });
      return false;
    }
    log('grant', { i, resource, validityEnd: String(tq + BigInt(cfg.ttl) * 1_000_000n) });
    await sleep(between(cfg.holdMs));
    log('release', { i, resource, validityEnd: String(tq + BigInt(cfg.ttl) * 1_000_000n) });
    await semaphore.release().catch(() => undefined);
    log('released', { i, resource });
    return true;
  }

  async function loop(go) {
    const endAt = BigInt(go.endAt);
    await waitUntil(BigInt(go.startAt));
    let i = 0;
    while (!stopping && now() < endAt && (cfg.iterations === undefined || i < cfg.iterations)) {
      i++;
      const granted = await iteration(i, cfg.resource);
      await sleep(between(granted ? cfg.gapMs : cfg.failBackoffMs));
    }
  }

  /** S12: one acquire per round, every worker released by the same barrier time. */
  async function rounds() {
    let i = 0;
    for (;;) {
      const message = await nextMessage('round');
      if (message.type === 'stop') return;
      i++;
      await waitUntil(BigInt(message.startAt));
      await iteration(i, message.resource);
      notify({ type: 'round-done', i });
    }
  }

  try {
    if (cfg.pg) pgStore = await (await import('./pg-store.mjs')).openPgStore(cfg.pg);
    // cfg.sql (issue 38): the counter in PostgreSQL or MariaDB through an ORM's handle (sql-store.mjs).
    if (cfg.sql) pgStore = await (await import('./sql-store.mjs')).openSqlStore(cfg.sql);
    if (engine) await engine.connect();
    if (peer) await peer.connect();
    await store.ping();
    log('start', { id: cfg.id, pid: process.pid, lock: Boolean(cfg.lock), resource: cfg.resource });
    send({ type: 'ready' });
    if (cfg.rounds) await rounds();
    else {
      const go = await goMessage;
      if (go.type === 'go') await loop(go);
    }
    log('end');
  } catch (err) {
    log('crash', { error: err?.name, message: String(err?.stack ?? err).slice(0, 2000) });
    throw err;
  } finally {
    process.off('message', onMessage);
    if (engine) await engine.close().catch(() => undefined);
    peer?.close();
    lock?.close();
    await store.quit().catch(() => store.disconnect());
    await pgStore?.close();
    closeSync(fd);
  }
}

/**
 * redis-semaphore's RedlockSemaphore over cfg.nodes (URLs, possibly with an ACL user each), one
 * ioredis client per node that fails fast where the node refuses this user (S26's cut).
 */
async function peerSemaphore(cfg) {
  const { RedlockSemaphore } = await import('redis-semaphore');
  const clients = cfg.nodes.map((url) => {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    client.on('error', () => undefined); // the node that refuses this user says so on every reconnection
    return client;
  });
  return {
    connect: () => Promise.all(clients.map((c) => c.connect().catch(() => undefined))),
    semaphore: (resource) =>
      new RedlockSemaphore(clients, resource, cfg.permits, {
        lockTimeout: cfg.ttl,
        acquireTimeout: cfg.wait,
        retryInterval: 10,
        refreshInterval: 0,
      }),
    close() {
      for (const c of clients) c.disconnect();
    },
  };
}

/**
 * Runs `fn` once what this tick sent is on the wire: the library batches extensions in a microtask
 * and corks each node's socket until process.nextTick, so "right after the call" is too early.
 */
function afterSend(fn) {
  queueMicrotask(() => process.nextTick(fn));
}

/** Blocks the event loop (a GC pause, a busy tick) without using CPU. */
function block(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sleepUnlessAborted(ms, signal) {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function waitUntil(t) {
  const ms = Number(t - now()) / 1e6;
  if (ms > 2) await sleep(ms - 2);
  while (now() < t) {
    // spin the last ~2 ms: a barrier start should be as simultaneous as the cores allow
  }
}

// A rejection nobody handled means a worker step went unchecked: exit non-zero at once (whatever
// --unhandled-rejections mode NODE_OPTIONS asks for), so the harness fails the run with our stderr.
process.on('unhandledRejection', (reason) => {
  process.stderr.write(`unhandled rejection in fault worker ${process.pid}: ${reason?.stack ?? reason}\n`);
  process.exit(70);
});

if (process.argv[2]) {
  // Standalone, for debugging: `node test/faults/worker.mjs '<WorkerConfig JSON with durationMs>'`
  // runs one job at once for durationMs (no harness, no IPC).
  const config = JSON.parse(process.argv[2]);
  const startAt = now() + 10_000_000n;
  const endAt = startAt + BigInt(Math.round(config.durationMs ?? 5000)) * 1_000_000n;
  runJob({ ...config, go: { startAt: String(startAt), endAt: String(endAt) } }).then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
} else {
  process.on('message', onHarnessMessage);
  send({ type: 'idle' });
}

function onHarnessMessage(message) {
  if (message?.type === 'exit') process.exit(0);
  if (message?.type !== 'job') return;
  runJob(message.config).then(
    () => {
      send({ type: 'job-done' });
      send({ type: 'idle' });
    },
    (err) => {
      send({ type: 'job-failed', error: String(err?.stack ?? err).slice(0, 2000) });
      send({ type: 'idle' });
    },
  );
}
