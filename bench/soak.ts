/**
 * `npm run soak` (issue 14, item 3): a long mixed workload in one process against 5 real
 * redis-server nodes, looking for leaks and for safety violations that only show over time.
 *
 * Workload, all at once: uncontended acquire/release over a pool of keys, waiters contending for a
 * few keys, watchdog-held long locks (`using` + watchdog), `@DistributedLock` routes of a small
 * NestJS app over real HTTP, `inspect` calls, and the nodes restarting: every ~15 s one node is
 * SIGKILLed and started again empty (no persistence). The restart guard is ON and short
 * (`restartGuard: 3000`): a restarted node abstains for 3 s, so the identity guard's path runs on
 * every restart, and the overlap check below stays meaningful (with the guard off, a restarted
 * node that granted one of exactly 3 votes could let a second holder in). Beside them, one more
 * engine is closed under load and built again every 15 s (`Churn`): once its close() resolved, no
 * lock key or queue entry of it may be left on the nodes.
 *
 * Measured twice, after a warm-up of 10 % of the run and at the end, at a quiescent point (every
 * loop paused between operations, no node restarting, every node voting again): heap used after
 * `global.gc()`, active resources by type (`process.getActiveResourcesInfo()`), listeners on the
 * engines' ioredis connections, wake-channel subscriptions (PUBSUB NUMSUB on every node), client
 * connections on the servers and `Timeout`s. Quiescent points make the two snapshots comparable:
 * what differs between them is what the run leaked, not what happened to be in flight.
 *
 * Exits non-zero when a pass criterion fails (printed in the table): heap growth over 5 %, growth
 * of the counts beyond the slack given in {@link CRITERIA}, an unhandled rejection, a
 * MaxListenersExceededWarning, an unexpected error type, an overlapping hold, or a fencing token
 * that did not increase.
 *
 * Knobs: `SOAK_SECONDS` (default 600) is the length of the load, pauses for snapshots excluded;
 * `SOAK_HEAP_SNAPSHOTS=<dir>` writes a V8 heap snapshot at both measurements; `SOAK_INJECT` runs
 * the controls (see {@link INJECT}).
 */
import 'reflect-metadata';
import { request as httpRequest, type Server } from 'node:http';
import { join } from 'node:path';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module, Param, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  DistributedLock,
  EngineClosedError,
  FencingToken,
  LockLostError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  Redlock,
  RedlockModule,
  type Lock,
  type RedlockLogger,
} from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';

const NODE_COUNT = 5;
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const WARMUP_FRACTION = 0.1;
/**
 * Controls that show the checks can fail: `SOAK_INJECT=heap,listeners,overlap` leaks memory on
 * every contended hold, an ioredis listener on every restart, and fakes unlocked holds.
 */
const INJECT = new Set((process.env.SOAK_INJECT ?? '').split(',').filter(Boolean));
const leaked: unknown[] = [];
/** When set, a V8 heap snapshot is written there at both measurements (to find what grew). */
const HEAP_SNAPSHOT_DIR = process.env.SOAK_HEAP_SNAPSHOTS;
const RESTART_EVERY_MS = 15_000;
/** Short guard, see the header; every lease of the run is at most this. */
const RESTART_GUARD_MS = 3000;
/** The machine is shared (2 cores, other agents): generous per-node timeout, leases well above it. */
const NODE_TIMEOUT_MS = 250;
const TTL_MS = 2000;

const UNCONTENDED_LOOPS = 4;
/** Bounded so that the fencing counters on the nodes (idle TTL 7 days) and our tracker stay bounded. */
const UNCONTENDED_KEYS = 2000;
const CONTENDED_WORKERS = 8;
const CONTENDED_KEYS = 3;
const WATCHDOG_LOOPS = 2;
const HTTP_LOOPS = 3;
const HTTP_KEYS = 2;
const INSPECT_LOOPS = 1;
/** The churned engine (see {@link Churn}): closed and built again under load every CHURN_EVERY_S. */
const CHURN_LOOPS = 3;
const CHURN_EVERY_S = 15;

/**
 * Pass criteria. Listener and subscription counts are structural (one set per connection, one
 * subscription per engine and node): any growth is a leak, so no slack. Handles and timers are
 * taken at a quiescent point but may still include one transient thing the engine does on its
 * own: a socket the HTTP server is closing, an ioredis reconnect or admission-retry timer, the
 * re-arm of an idle queue check. 2 handles and 3 timers cover that; a leak of one per operation
 * or per restart would be thousands (or at least dozens) over the run.
 */
/**
 * The heap criterion leaves out V8's code spaces: JIT-compiled code keeps growing for a while as
 * more functions get optimised (a heap-snapshot diff of a 60 s run: +0.50 MB of code of +0.61 MB
 * in all), which is not data the process retains; with it, a 60 s run sits at 3-4 % and would
 * fail by chance. The total is printed beside it.
 */
const CRITERIA = {
  heapGrowthPct: 5,
  handleSlack: 2,
  timerSlack: 3,
  listenerSlack: 0,
  subscriptionSlack: 0,
  serverClientSlack: 0,
} as const;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const now = () => performance.now();
const log = (message: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}`);

/* ------------------------------------------------------------------------------------------------ */
/* Failure collection: anything here fails the run.                                                 */

const failures: string[] = [];
function fail(message: string): void {
  if (failures.length < 50) failures.push(message);
  else if (failures.length === 50) failures.push('... (more failures dropped)');
}

let unhandledRejections = 0;
process.on('unhandledRejection', (reason) => {
  unhandledRejections++;
  fail(`unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
});
let maxListenerWarnings = 0;
process.on('warning', (warning) => {
  if (warning.name === 'MaxListenersExceededWarning') {
    maxListenerWarnings++;
    fail(`${warning.name}: ${warning.message}`);
  } else {
    log(`warning: ${warning.name}: ${warning.message}`);
  }
});

/* ------------------------------------------------------------------------------------------------ */
/* Safety tracking, online and bounded: one entry per resource, not a history that grows with time */
/* (a growing history would itself show up as heap growth).                                         */

interface ResourceState {
  /** Holders between grant and release, per our timestamps: more than 1 is an overlap. */
  holders: number;
  /** performance.now() of the current (last) grant and of the last release. */
  grantedAt: number;
  releasedAt: number;
  lastToken: number;
}

class SafetyTracker {
  private readonly resources = new Map<string, ResourceState>();
  overlaps = 0;
  tokenViolations = 0;
  holds = 0;

  /** Entries are created up front, so the tracker's size does not change after warm-up. */
  prepare(resource: string): void {
    this.resources.set(resource, { holders: 0, grantedAt: 0, releasedAt: 0, lastToken: -Infinity });
  }

  /** Call as soon as a grant is known (after acquire resolves / when the handler starts). */
  granted(resource: string, token: number): void {
    const state = this.resources.get(resource);
    if (!state) throw new Error(`untracked resource ${resource}`);
    const at = now();
    if (state.holders > 0) {
      this.overlaps++;
      fail(
        `overlap on ${resource}: granted at ${at.toFixed(1)} ms while held since ${state.grantedAt.toFixed(1)} ms`,
      );
    }
    // Grants of one resource are serialised (else it is an overlap, above), so grant order is the
    // order in which the tokens were issued: each must exceed the previous one.
    if (!(token > state.lastToken)) {
      this.tokenViolations++;
      fail(`token order on ${resource}: ${token} after ${state.lastToken}`);
    }
    state.holders++;
    state.grantedAt = at;
    state.lastToken = token;
    this.holds++;
  }

  /** Call before release is sent: from then on another holder may legitimately be granted. */
  ended(resource: string): void {
    const state = this.resources.get(resource)!;
    state.holders--;
    state.releasedAt = now();
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* Counters of outcomes.                                                                             */

const counts = {
  uncontended: 0,
  contended: 0,
  busy: 0,
  unavailable: 0,
  watchdogHolds: 0,
  extensions: 0,
  lost: 0,
  expiredInHold: 0,
  http200: 0,
  http409: 0,
  http503: 0,
  inspects: 0,
  restarts: 0,
  events: 0,
  churnHolds: 0,
  churnCycles: 0,
  /** Acquires refused (or ended) by their engine's shutdown: expected for the churned engine. */
  closedRefusals: 0,
};

/** The first message of each expected error type, printed at the end so that a reader sees why. */
const firstErrors = new Map<string, string>();

/** Lock errors are expected under restarts and contention; anything else fails the run. */
function classify(err: unknown, where: string): void {
  if (err instanceof Error && !firstErrors.has(err.name)) {
    firstErrors.set(err.name, `${where} at ${new Date().toISOString().slice(11, 23)}: ${err.message}`);
  }
  if (err instanceof LockNotAcquiredError) counts.busy++;
  else if (err instanceof QuorumUnavailableError) counts.unavailable++;
  else if (err instanceof LockLostError) counts.lost++;
  else if (err instanceof EngineClosedError && where.startsWith('churn')) counts.closedRefusals++;
  else fail(`${where}: unexpected ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
}

/* ------------------------------------------------------------------------------------------------ */
/* Pausing every loop at once, between operations, for a snapshot.                                  */

class Gate {
  private paused: Promise<void> | undefined;
  private resume: (() => void) | undefined;
  private parked = 0;
  stopped = false;

  constructor(private readonly loops: () => number) {}

  /** Loops await this between operations. */
  async pass(): Promise<void> {
    while (this.paused) {
      this.parked++;
      await this.paused;
      this.parked--;
    }
  }

  /** Resolves once every loop is parked (or `timeoutMs` passed: then says which are not). */
  async pause(timeoutMs: number): Promise<void> {
    this.paused = new Promise((resolve) => (this.resume = resolve));
    const deadline = now() + timeoutMs;
    while (this.parked < this.loops() && now() < deadline) await sleep(20);
    if (this.parked < this.loops()) {
      fail(`only ${this.parked} of ${this.loops()} loops paused within ${timeoutMs} ms (a hang?)`);
    }
  }

  release(): void {
    const resume = this.resume;
    this.paused = undefined;
    this.resume = undefined;
    resume?.();
  }
}

let runningLoops = 0;
const gate = new Gate(() => runningLoops);

/** Runs `body` until the gate stops, passing the gate between iterations. */
async function loop(name: string, body: () => Promise<void>): Promise<void> {
  runningLoops++;
  try {
    while (!gate.stopped) {
      await gate.pass();
      if (gate.stopped) break;
      try {
        await body();
      } catch (err) {
        classify(err, name);
        // Do not spin on a node-wide outage (every error path returns at once).
        await sleep(20);
      }
    }
  } finally {
    runningLoops--;
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* The NestJS app: decorated routes, over HTTP.                                                      */

const safety = new SafetyTracker();

@Controller('soak')
class SoakController {
  /** A template key over the route parameter; contended between the HTTP loops. */
  @Get(':id')
  @DistributedLock('route:{0}', { wait: 5000, ttl: TTL_MS })
  async hit(@Param('id') id: string, @FencingToken() token: number): Promise<{ token: number }> {
    const resource = `route:${id}`;
    safety.granted(resource, token);
    await sleep(1 + Math.random() * 3);
    safety.ended(resource);
    return { token };
  }
}

function appModule(urls: string[]): new () => unknown {
  @Module({
    imports: [
      RedlockModule.forRoot({
        nodes: urls,
        ttl: TTL_MS,
        nodeTimeout: NODE_TIMEOUT_MS,
        restartGuard: RESTART_GUARD_MS,
      }),
    ],
    controllers: [SoakController],
  })
  class SoakAppModule {}
  return SoakAppModule;
}

/**
 * One GET, on a fresh connection (`agent: false`, `Connection: close`): a keep-alive pool would
 * leave a varying number of idle sockets open at snapshot time, which is not a leak.
 */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/* ------------------------------------------------------------------------------------------------ */
/* Snapshots.                                                                                        */

interface Snapshot {
  heapUsedMB: number;
  /** heapUsedMB without V8's code spaces (JIT-compiled code): what the criterion is applied to. */
  dataHeapMB: number;
  resources: Record<string, number>;
  handles: number;
  timers: number;
  listeners: number;
  listenerDetail: string;
  subscriptions: number;
  serverClients: number;
}

/** The ioredis connections of a RedisVoter (not public API: read structurally). */
interface VoterConnections {
  client?: Redis;
  subscriber?: Redis;
}

const LISTENED_EVENTS = ['message', 'ready', 'error', 'close'] as const;

function listenerCounts(engines: readonly Redlock[]): { total: number; detail: string } {
  const byEvent: Record<string, number> = {};
  let total = 0;
  for (const engine of engines) {
    for (const voter of engine.voters as unknown as VoterConnections[]) {
      for (const [role, conn] of [
        ['client', voter.client],
        ['subscriber', voter.subscriber],
      ] as const) {
        if (!conn) continue;
        for (const event of LISTENED_EVENTS) {
          const n = conn.listenerCount(event);
          byEvent[`${role}.${event}`] = (byEvent[`${role}.${event}`] ?? 0) + n;
          total += n;
        }
      }
    }
  }
  const detail = Object.entries(byEvent)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return { total, detail };
}

/** Subscribers of the engines' wake channels, summed over nodes (one per engine and node expected). */
async function subscriptionCount(nodes: RedisNodes): Promise<number> {
  let total = 0;
  for (let i = 0; i < NODE_COUNT; i++) {
    const client = nodes.client(i);
    const channels = (await client.pubsub('CHANNELS', '__redlock_wake__:*')) as string[];
    if (channels.length === 0) continue;
    const reply = (await client.pubsub('NUMSUB', ...channels)) as Array<string | number>;
    for (let j = 1; j < reply.length; j += 2) total += Number(reply[j]);
  }
  return total;
}

/** Client connections the servers see, summed over nodes (includes RedisNodes' own inspection clients). */
async function serverClientCount(nodes: RedisNodes): Promise<number> {
  let total = 0;
  for (let i = 0; i < NODE_COUNT; i++) {
    const info = await nodes.client(i).info('clients');
    total += Number(/^connected_clients:(\d+)/m.exec(info)?.[1] ?? NaN);
  }
  return total;
}

async function snapshot(engines: readonly Redlock[], nodes: RedisNodes, label: string): Promise<Snapshot> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run node with --expose-gc (npm run soak does)');
  // Several passes with a turn of the event loop between them: weak callbacks and finalizers
  // that free more on the next pass.
  for (let i = 0; i < 4; i++) {
    gc();
    await sleep(50);
  }
  const heapUsedMB = process.memoryUsage().heapUsed / 2 ** 20;
  const codeMB =
    getHeapSpaceStatistics()
      .filter((space) => space.space_name.startsWith('code_'))
      .reduce((sum, space) => sum + space.space_used_size, 0) /
    2 ** 20;
  if (HEAP_SNAPSHOT_DIR)
    log(`heap snapshot: ${writeHeapSnapshot(join(HEAP_SNAPSHOT_DIR, `soak-${label}.heapsnapshot`))}`);
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const timers = resources.Timeout ?? 0;
  const handles = Object.entries(resources)
    .filter(([type]) => type !== 'Timeout' && type !== 'Immediate')
    .reduce((sum, [, n]) => sum + n, 0);
  const listeners = listenerCounts(engines);
  return {
    heapUsedMB,
    dataHeapMB: heapUsedMB - codeMB,
    resources,
    handles,
    timers,
    listeners: listeners.total,
    listenerDetail: listeners.detail,
    subscriptions: await subscriptionCount(nodes),
    serverClients: await serverClientCount(nodes),
  };
}

/** Waits until every voter of every engine is reachable and votes (no abstention), and every subscription is back. */
async function settle(engines: readonly Redlock[], nodes: RedisNodes, timeoutMs: number): Promise<void> {
  const deadline = now() + timeoutMs;
  const expectedSubs = engines.length * NODE_COUNT;
  for (;;) {
    const connected = engines.every((e) =>
      e.status().every((s) => s.reachable && !((s.abstainingUntil ?? 0) > Date.now())),
    );
    let subs = -1;
    if (connected) subs = await subscriptionCount(nodes).catch(() => -1);
    if (connected && subs === expectedSubs) return;
    if (now() > deadline) {
      fail(`nodes did not settle within ${timeoutMs} ms (connected=${connected}, subscriptions=${subs})`);
      return;
    }
    await sleep(100);
  }
}

/** Tries a probe lock until one is granted (all start-up abstentions over), at most `timeoutMs`. */
async function untilGranted(engine: Redlock, timeoutMs: number): Promise<void> {
  const deadline = now() + timeoutMs;
  for (;;) {
    try {
      const lock = await engine.tryAcquire('soak:probe', { ttl: TTL_MS });
      if (lock) {
        await lock.release();
        return;
      }
    } catch (err) {
      if (!(err instanceof QuorumUnavailableError) || now() > deadline) throw err;
    }
    await sleep(100);
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* The workload.                                                                                     */

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;

function startWorkload(engine: Redlock, port: number): Promise<void>[] {
  const uncontended = Array.from({ length: UNCONTENDED_KEYS }, (_, i) => `free:${i}`);
  const contended = Array.from({ length: CONTENDED_KEYS }, (_, i) => `hot:${i}`);
  const longKeys = Array.from({ length: WATCHDOG_LOOPS }, (_, i) => `long:${i}`);
  const routeIds = Array.from({ length: HTTP_KEYS }, (_, i) => String(i));
  for (const key of [...uncontended, ...contended, ...longKeys, ...routeIds.map((id) => `route:${id}`)]) {
    safety.prepare(key);
  }

  /** Holds `lock` on `resource` for `holdMs`, with the overlap bookkeeping, then releases it. */
  const hold = async (resource: string, lock: Lock, holdMs: number) => {
    safety.granted(resource, lock.fencingToken);
    try {
      if (holdMs > 0) await sleep(holdMs);
      if (Date.now() > lock.expiresAt && !lock.signal.aborted) counts.expiredInHold++;
    } finally {
      safety.ended(resource);
      await lock.release();
    }
  };

  const loops: Promise<void>[] = [];
  for (let i = 0; i < UNCONTENDED_LOOPS; i++) {
    loops.push(
      loop('uncontended', async () => {
        const resource = pick(uncontended);
        // Fail fast: another loop holding the same key at this moment is a "busy", not a wait.
        const lock = await engine.acquire(resource, { ttl: TTL_MS, wait: 0 });
        await hold(resource, lock, 0);
        counts.uncontended++;
      }),
    );
  }
  for (let i = 0; i < CONTENDED_WORKERS; i++) {
    loops.push(
      loop('contended', async () => {
        const resource = pick(contended);
        if (INJECT.has('overlap') && Math.random() < 0.02) {
          // Control: a "hold" without the lock, as a broken lock would give.
          safety.granted(resource, 0);
          await sleep(3);
          safety.ended(resource);
        }
        const lock = await engine.acquire(resource, { ttl: TTL_MS, wait: 4000 });
        await hold(resource, lock, 1 + Math.random() * 4);
        if (INJECT.has('heap')) leaked.push(new Array(64).fill(counts.contended));
        counts.contended++;
      }),
    );
  }
  for (const resource of longKeys) {
    loops.push(
      loop('watchdog', async () => {
        // Held for up to 4 x its ttl: only the watchdog's extensions keep it.
        await engine.using(
          resource,
          async (lock) => {
            const grantedExpiry = lock.expiresAt;
            safety.granted(resource, lock.fencingToken);
            try {
              await sleep(1000 + Math.random() * 5000);
              if (lock.signal.aborted) counts.lost++;
              else if (lock.expiresAt > grantedExpiry) counts.extensions++;
            } finally {
              safety.ended(resource); // `using` releases after this callback
            }
          },
          { ttl: 1500, watchdog: true, wait: 1000 },
        );
        counts.watchdogHolds++;
      }),
    );
  }
  for (let i = 0; i < HTTP_LOOPS; i++) {
    loops.push(
      loop('http', async () => {
        const status = await get(port, `/soak/${pick(routeIds)}`);
        if (status === 200) counts.http200++;
        else if (status === 409) counts.http409++;
        else if (status === 503) counts.http503++;
        else fail(`HTTP ${status} from a decorated route`);
      }),
    );
  }
  for (let i = 0; i < INSPECT_LOOPS; i++) {
    loops.push(
      loop('inspect', async () => {
        const view = await engine.inspect(pick([...contended, ...longKeys]));
        if (view.held && (view.ttlMs === null || view.ttlMs < 0))
          fail(`inspect: held with ttlMs ${view.ttlMs}`);
        counts.inspects++;
        await sleep(20);
      }),
    );
  }
  return loops;
}

/**
 * An engine that is closed under load and built again, every CHURN_EVERY_S (issue 36): its loops
 * hold, wait for and contend on keys of their own (a key prefix per generation), and once close()
 * resolved no lock key and no queue entry of that generation may be left on any node that answers.
 * It is closed at each snapshot too (the snapshots then compare the same engines) and built again
 * after.
 */
class Churn {
  private generation = 0;
  engine: Redlock | undefined;
  /** Lock keys and queue entries found on the nodes after a close() resolved (each must be 0). */
  leftHeld = 0;
  leftQueued = 0;

  constructor(private readonly nodes: RedisNodes) {}

  async open(): Promise<void> {
    const engine = new Redlock({
      nodes: this.nodes.urls,
      keyPrefix: `churn${++this.generation}:`,
      ttl: TTL_MS,
      nodeTimeout: NODE_TIMEOUT_MS,
      restartGuard: RESTART_GUARD_MS,
      drainTimeout: 1000,
      logger: quietLogger,
    });
    await engine.connect();
    this.engine = engine;
  }

  async close(): Promise<void> {
    const engine = this.engine;
    if (!engine) return;
    this.engine = undefined;
    const prefix = engine.options.keyPrefix;
    await engine.close();
    counts.churnCycles++;
    for (let i = 0; i < NODE_COUNT; i++) {
      const client = this.nodes.client(i);
      const keys = (await client.keys(`${prefix}{*`).catch(() => [])) as string[];
      this.leftHeld += keys.filter((key) => key.endsWith('}')).length;
      for (const queue of keys.filter((key) => key.endsWith(':queue'))) {
        this.leftQueued += Number(await client.zcard(queue).catch(() => 0));
      }
    }
  }

  /** Closes the current generation and builds the next. */
  async cycle(): Promise<void> {
    await this.close();
    await this.open();
  }
}

function startChurn(churn: Churn): Promise<void>[] {
  const loops: Promise<void>[] = [];
  for (let i = 0; i < CHURN_LOOPS; i++) {
    loops.push(
      loop('churn', async () => {
        const engine = churn.engine;
        if (!engine) return sleep(50);
        // Two loops contend on one key (waiters are queued when close() comes), one works alone.
        const resource = i < 2 ? 'hot' : `own:${Math.floor(Math.random() * 100)}`;
        await engine.using(resource, () => sleep(1 + Math.random() * 20), { wait: 3000 });
        counts.churnHolds++;
      }),
    );
  }
  let ticks = 0;
  loops.push(
    loop('churn-cycle', async () => {
      await sleep(1000);
      if (++ticks % CHURN_EVERY_S === 0) await churn.cycle();
    }),
  );
  return loops;
}

/** Kills one node at a time and starts it again (empty), every RESTART_EVERY_MS, until stopped. */
function startRestarts(
  nodes: RedisNodes,
  firstAfterMs: number,
  onRestart?: () => void,
): { stop(): Promise<void> } {
  let stopped = false;
  let wake: (() => void) | undefined;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const done = (async () => {
    let index = 0;
    await nap(firstAfterMs);
    while (!stopped) {
      await nodes.kill(index);
      await sleep(500); // down for a moment: commands fail, the connections reconnect
      await nodes.restart(index);
      counts.restarts++;
      if (INJECT.has('listeners')) onRestart?.();
      index = (index + 1) % NODE_COUNT;
      if (!stopped) await nap(RESTART_EVERY_MS);
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
  };
}

/* ------------------------------------------------------------------------------------------------ */

const quietLogger: RedlockLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

interface Row {
  metric: string;
  start: string;
  end: string;
  limit: string;
  ok: boolean;
}

function table(rows: readonly Row[]): string {
  const header = ['metric', 'start', 'end', 'limit', 'result'];
  const cells = rows.map((r) => [r.metric, r.start, r.end, r.limit, r.ok ? 'PASS' : 'FAIL']);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

function compare(start: Snapshot, end: Snapshot): Row[] {
  const growth = (a: number, b: number) => ((b - a) / a) * 100;
  const pct = (g: number) => `${g >= 0 ? '+' : ''}${g.toFixed(2)} %`;
  const heapGrowth = growth(start.dataHeapMB, end.dataHeapMB);
  const totalGrowth = growth(start.heapUsedMB, end.heapUsedMB);
  const count = (metric: string, a: number, b: number, slack: number): Row => ({
    metric,
    start: String(a),
    end: String(b),
    limit: `<= start + ${slack}`,
    ok: b <= a + slack,
  });
  const rows: Row[] = [
    {
      metric: 'heap used after gc, without JIT code (MB)',
      start: start.dataHeapMB.toFixed(2),
      end: `${end.dataHeapMB.toFixed(2)} (${pct(heapGrowth)})`,
      limit: `growth <= ${CRITERIA.heapGrowthPct} %`,
      ok: heapGrowth <= CRITERIA.heapGrowthPct,
    },
    {
      metric: '  heap used after gc, total (MB)',
      start: start.heapUsedMB.toFixed(2),
      end: `${end.heapUsedMB.toFixed(2)} (${pct(totalGrowth)})`,
      limit: '(detail)',
      ok: true,
    },
    count('active handles (non-timer)', start.handles, end.handles, CRITERIA.handleSlack),
    count('timers (Timeout)', start.timers, end.timers, CRITERIA.timerSlack),
    count('ioredis listeners (msg/ready/err/close)', start.listeners, end.listeners, CRITERIA.listenerSlack),
    count('wake subscriptions (NUMSUB, all nodes)', start.subscriptions, end.subscriptions, 0),
    count('server client connections', start.serverClients, end.serverClients, CRITERIA.serverClientSlack),
  ];
  const types = [...new Set([...Object.keys(start.resources), ...Object.keys(end.resources)])].sort();
  for (const type of types) {
    const a = start.resources[type] ?? 0;
    const b = end.resources[type] ?? 0;
    rows.push({
      metric: `  resource ${type}`,
      start: String(a),
      end: String(b),
      limit: '(detail)',
      ok: true,
    });
  }
  rows.push(
    {
      metric: 'unhandled rejections',
      start: '-',
      end: String(unhandledRejections),
      limit: '0',
      ok: unhandledRejections === 0,
    },
    {
      metric: 'MaxListenersExceededWarning',
      start: '-',
      end: String(maxListenerWarnings),
      limit: '0',
      ok: maxListenerWarnings === 0,
    },
    {
      metric: 'overlapping holds',
      start: '-',
      end: String(safety.overlaps),
      limit: '0',
      ok: safety.overlaps === 0,
    },
    {
      metric: 'token order violations',
      start: '-',
      end: String(safety.tokenViolations),
      limit: '0',
      ok: safety.tokenViolations === 0,
    },
  );
  return rows;
}

async function main(): Promise<number> {
  if (!Number.isFinite(SOAK_SECONDS) || SOAK_SECONDS < 10) throw new Error('SOAK_SECONDS must be >= 10');
  const loadMs = SOAK_SECONDS * 1000;
  const warmupMs = loadMs * WARMUP_FRACTION;
  log(`starting ${NODE_COUNT} redis-server nodes; load ${SOAK_SECONDS} s, warm-up ${warmupMs / 1000} s`);
  const nodes = await RedisNodes.start(NODE_COUNT);
  let app: INestApplication | undefined;
  let engine: Redlock | undefined;
  let restarts: { stop(): Promise<void> } | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping the redis-server nodes`);
    void nodes.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    engine = new Redlock({
      nodes: nodes.urls,
      ttl: TTL_MS,
      nodeTimeout: NODE_TIMEOUT_MS,
      restartGuard: RESTART_GUARD_MS,
      logger: quietLogger,
    });
    await engine.connect();
    const events = engine.events$.subscribe(() => void counts.events++);
    app = await NestFactory.create(appModule(nodes.urls), { logger: false });
    await app.listen(0, '127.0.0.1');
    const port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
    const engines = [engine, app.get(Redlock)];

    // RedisNodes records the nodes fresh, so a quorum votes at once; the wait stays as a check that
    // it does before the load starts, so the first seconds measure the workload, not the start-up.
    await untilGranted(engine, 20_000);
    await untilGranted(engines[1]!, 20_000);

    const churn = new Churn(nodes);
    await churn.open();
    const loops = [...startWorkload(engine, port), ...startChurn(churn)];
    // Control (SOAK_INJECT=listeners): a listener leaked per restart, as a reconnect bug would.
    const injectListener = () =>
      (engine!.voters[0] as unknown as VoterConnections).client?.on('ready', () => {});
    // The first restart falls inside the warm-up, so that whatever a reconnect allocates once
    // (ioredis' re-subscription, the script cache reload) is in the start snapshot.
    restarts = startRestarts(nodes, warmupMs / 2, injectListener);

    const loadFor = async (ms: number) => {
      const until = now() + ms;
      while (now() < until) await sleep(Math.min(1000, until - now()));
    };
    const quiesce = async () => {
      await restarts!.stop();
      await gate.pause(15_000);
      await churn.close(); // the snapshots compare the same engines: the churned one is out of both
      await settle(engines, nodes, 10_000);
      await sleep(500); // HTTP sockets closing, released locks' hand-offs done
    };

    await loadFor(warmupMs);
    await quiesce();
    const start = await snapshot(engines, nodes, 'start');
    log(
      `start snapshot (after ${warmupMs / 1000} s warm-up): heap ${start.heapUsedMB.toFixed(2)} MB, ` +
        `resources ${JSON.stringify(start.resources)}, listeners ${start.listenerDetail}`,
    );
    const holdsAtStart = safety.holds;
    await churn.open();
    gate.release();
    restarts = startRestarts(nodes, RESTART_EVERY_MS / 2, injectListener);

    const remaining = loadMs - warmupMs;
    const reportEvery = Math.max(10_000, remaining / 10);
    for (let done = 0; done < remaining; done += reportEvery) {
      await loadFor(Math.min(reportEvery, remaining - done));
      log(
        `${Math.round((warmupMs + done + Math.min(reportEvery, remaining - done)) / 1000)} s: ` +
          `${JSON.stringify(counts)} heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MB`,
      );
    }

    await quiesce();
    const end = await snapshot(engines, nodes, 'end');
    log(
      `end snapshot: heap ${end.heapUsedMB.toFixed(2)} MB, resources ${JSON.stringify(end.resources)}, ` +
        `listeners ${end.listenerDetail}`,
    );
    gate.stopped = true;
    gate.release();
    await Promise.all(loops);
    events.unsubscribe();

    const rows = compare(start, end);
    rows.push(
      {
        metric: 'churned engines closed under load',
        start: '-',
        end: String(counts.churnCycles),
        limit: '>= 2',
        ok: counts.churnCycles >= 2,
      },
      {
        metric: '  lock keys left held after their close()',
        start: '-',
        end: String(churn.leftHeld),
        limit: '0',
        ok: churn.leftHeld === 0,
      },
      {
        metric: '  queue entries left after their close()',
        start: '-',
        end: String(churn.leftQueued),
        limit: '0',
        ok: churn.leftQueued === 0,
      },
    );
    console.log(
      `\nSoak: ${SOAK_SECONDS} s of load (${warmupMs / 1000} s warm-up), ${NODE_COUNT} nodes, ` +
        `restartGuard ${RESTART_GUARD_MS} ms, one node killed + restarted every ${RESTART_EVERY_MS / 1000} s`,
    );
    console.log(table(rows));
    console.log(
      `\nholds checked: ${safety.holds} (${safety.holds - holdsAtStart} after warm-up); outcomes: ${JSON.stringify(counts)}`,
    );
    const failed = rows.some((r) => !r.ok) || failures.length > 0 || safety.holds - holdsAtStart === 0;
    if (safety.holds - holdsAtStart === 0) failures.push('no hold after warm-up: the workload did not run');
    for (const [name, message] of firstErrors) console.log(`first ${name}: ${message}`);
    if (failures.length > 0) console.log(`\nfailures:\n- ${failures.join('\n- ')}`);
    console.log(failed ? '\nSOAK FAILED' : '\nSOAK PASSED');
    return failed ? 1 : 0;
  } finally {
    await restarts?.stop().catch(() => undefined);
    gate.stopped = true;
    gate.release();
    await app?.close().catch((err: unknown) => log(`app close: ${String(err)}`));
    await engine?.close().catch((err: unknown) => log(`engine close: ${String(err)}`));
    await nodes.close();
  }
}

/**
 * Everything was closed: the process should exit by itself. If something still holds it open
 * after a few seconds, that is a leak too: say what, and exit with a failure.
 */
function exitWhenIdle(code: number): void {
  process.exitCode = code;
  setTimeout(() => {
    console.log(`still open 5 s after closing everything: ${process.getActiveResourcesInfo().join(', ')}`);
    process.exit(1);
  }, 5000).unref();
}

main().then(exitWhenIdle, (err: unknown) => {
  console.error(err);
  exitWhenIdle(1);
});
