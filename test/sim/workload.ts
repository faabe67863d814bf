import type { Lock } from '../../lib/core/index.js';
import type { Acquire } from '../faults/checker.js';
import type { KeyUse, OpKind, RunConfig } from './config.js';
import { ClientHistory } from './history.js';
import type { Random } from './random.js';
import type { Client, World } from './world.js';

/** Errors a lock operation may end with; any other is a violation (the engine broke). */
const EXPECTED = new Set(['LockNotAcquiredError', 'QuorumUnavailableError', 'LockLostError']);

/** A liveness probe: after the faults healed, an acquire with a wait long enough must be granted. */
export interface Probe {
  readonly worker: string;
  readonly key: string;
  readonly requestedAt: number;
  granted?: number;
  error?: string;
}

/** What the workload tells the run. */
export interface WorkloadSink {
  /** An operation ended with an error the engine must never throw. */
  unexpected(worker: string, what: string, err: unknown): void;
}

/**
 * The offered load (issue 37, item 3): each client starts an operation at least every ttl / 20
 * (whatever happened to the ones before), on at most five keys, each key with one use (a mutex, a
 * read-write lock, a semaphore): single and multi-resource mutexes, waiters (hand-overs), watchdog
 * holds, holdAtLeast, manual extensions, tryAcquire, semaphores, readers and writers. Every holder
 * reads and writes the fenced store with its token (a read-modify-write of a counter), readers read.
 */
export class Workload {
  readonly histories: ClientHistory[] = [];
  readonly probes: Probe[] = [];
  operations = 0;
  private readonly weights: number;

  constructor(
    private readonly world: World,
    private readonly config: RunConfig,
    private readonly sink: WorkloadSink,
  ) {
    this.weights = config.ops.reduce((sum, [, w]) => sum + w, 0);
  }

  /** Runs `client`'s load until `loadEnd`, then (if it lives) its liveness probes with `probeWait`. */
  drive(client: Client, rng: Random, loadEnd: number, probeWait: number): ClientHistory {
    const history = new ClientHistory(client.process.name);
    this.histories.push(history);
    const { runtime } = client;
    void client.connected.then(() => {
      const tick = () => {
        if (runtime.now() >= loadEnd) return;
        this.operations++;
        void this.operation(client, history, rng, this.pick(rng)).catch((err: unknown) =>
          this.sink.unexpected(history.worker, 'operation', err),
        );
        runtime.setTimeout(tick, rng.between(0.5, 1) * this.config.opGapMs);
      };
      tick();
      runtime.setTimeout(
        () => void this.probe(client, history, probeWait),
        Math.max(0, loadEnd - runtime.now()),
      );
    });
    return history;
  }

  private pick(rng: Random): OpKind {
    let r = rng.next() * this.weights;
    for (const [op, weight] of this.config.ops) if ((r -= weight) < 0) return op;
    return this.config.ops[0]![0];
  }

  private keysOf(kind: KeyUse['kind']): string[] {
    return this.config.keys.flatMap((use, i) => (use.kind === kind ? [`k${i}`] : []));
  }

  /** One operation: acquire (its kind's way), read-modify-write under the token, release. */
  private async operation(client: Client, h: ClientHistory, rng: Random, op: OpKind): Promise<void> {
    const { ttl } = this.config.settings;
    const mutexes = this.keysOf('mutex');
    // Mostly short holds (a lease is a safety margin, not the job's length), some long ones.
    const wait = rng.chance(0.3) ? 0 : rng.between(0, ttl);
    const hold = rng.chance(0.1) ? rng.between(0, ttl / 5) : rng.between(0, ttl / 50);
    switch (op) {
      case 'plain':
        return this.locked(client, h, rng, [rng.pick(mutexes)], { wait }, hold);
      case 'try':
        return this.locked(client, h, rng, [rng.pick(mutexes)], { try: true }, hold);
      case 'multi': {
        const keys = [...new Set([rng.pick(mutexes), rng.pick(mutexes), rng.pick(mutexes)])];
        return this.locked(client, h, rng, keys, { wait }, hold);
      }
      case 'watchdog':
        return this.locked(
          client,
          h,
          rng,
          [rng.pick(mutexes)],
          { wait, watchdog: true },
          rng.between(ttl / 2, 2 * ttl),
        );
      case 'atLeast':
        return this.locked(
          client,
          h,
          rng,
          [rng.pick(mutexes)],
          { wait, holdAtLeast: rng.between(ttl / 10, ttl / 2) },
          hold,
        );
      case 'extend':
        return this.locked(
          client,
          h,
          rng,
          [rng.pick(mutexes)],
          { wait, extend: true },
          rng.between(0, ttl / 2),
        );
      case 'sem': {
        const i = this.config.keys.findIndex((k) => k.kind === 'sem');
        const use = this.config.keys[i] as { permits: number };
        return this.locked(client, h, rng, [`k${i}`], { wait, permits: use.permits }, hold);
      }
      case 'read':
      case 'write':
        return this.locked(client, h, rng, [rng.pick(this.keysOf('rw'))], { wait, mode: op }, hold);
    }
  }

  private async locked(
    client: Client,
    h: ClientHistory,
    rng: Random,
    keys: string[],
    how: {
      wait?: number;
      try?: boolean;
      watchdog?: boolean;
      holdAtLeast?: number;
      extend?: boolean;
      permits?: number;
      mode?: 'read' | 'write';
    },
    holdMs: number,
  ): Promise<void> {
    const { engine, runtime } = client;
    const { ttl } = this.config.settings;
    const now = () => runtime.now();
    const wait = how.wait ?? 0;
    const requests = keys.map((key) =>
      h.request(now(), key, ttl, how.try ? 0 : wait, { permits: how.permits, mode: how.mode }),
    );
    const options = {
      ttl,
      wait,
      ...(how.permits ? { permits: how.permits } : {}),
      ...(how.mode === 'read' ? { mode: 'read' as const } : {}),
      ...(how.holdAtLeast ? { holdAtLeast: how.holdAtLeast } : {}),
    };
    const work = (lock: Lock) => this.hold(client, h, rng, lock, keys, requests, holdMs, how);
    try {
      if (how.watchdog) {
        await engine.using(keys, work, { ...options, watchdog: true });
        return;
      }
      const lock = how.try
        ? await engine.tryAcquire(keys, { ...options, wait: undefined })
        : await engine.acquire(keys, options);
      if (!lock) {
        for (const a of requests) h.fail(a, now(), 'LockNotAcquiredError', 'tryAcquire: busy');
        return;
      }
      await work(lock);
      await lock.release();
    } catch (err) {
      const name = (err as Error)?.name ?? String(err);
      for (const a of requests)
        if (a.outcome === 'indeterminate') h.fail(a, now(), name, String((err as Error)?.message));
      if (!EXPECTED.has(name)) this.sink.unexpected(h.worker, `acquire of ${keys.join(',')}`, err);
    }
  }

  /** The holder's work: fenced reads, the hold, fenced writes (a reader only reads); then it lets go. */
  private async hold(
    client: Client,
    h: ClientHistory,
    rng: Random,
    lock: Lock,
    keys: string[],
    requests: Acquire[],
    holdMs: number,
    how: { extend?: boolean; mode?: 'read' | 'write'; watchdog?: boolean },
  ): Promise<void> {
    const { runtime, process } = client;
    const store = this.world.store;
    const now = () => runtime.now();
    const validityEnd = () => runtime.now() + (lock.expiresAt - runtime.wallNow());
    const tokens = keys.map((key) => lock.fencingTokens[key]!);
    keys.forEach((_, k) => h.grant(requests[k]!, now(), tokens[k]!, validityEnd(), lock.permit, how.mode));
    lock.signal.addEventListener('abort', () => {
      const reason = (lock.signal.reason as Error | undefined)?.name ?? String(lock.signal.reason);
      for (const a of requests) h.abort(a, now(), reason, validityEnd());
    });
    const resources = keys.map((key) => (lock.permit === undefined ? key : `${key}#${lock.permit}`));
    const values: number[] = [];
    for (let k = 0; k < keys.length; k++) {
      const op = h.op(requests[k]!, resources[k]!, 'read', tokens[k]!, now());
      const read = await store.read(process, resources[k]!, tokens[k]!);
      h.ack(op, now(), read.ok, read.value);
      if (!read.ok) return this.letGo(h, requests, now(), validityEnd());
      values.push(read.value);
    }
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const cancel = runtime.setTimeout(resolve, ms);
        // A watchdog hold ends when its lock is lost (the worker's sleepUnlessAborted).
        if (how.watchdog)
          lock.signal.addEventListener('abort', () => {
            cancel();
            resolve();
          });
      });
    if (how.extend) {
      await sleep(holdMs / 2);
      const asked = now();
      try {
        await lock.extend();
        requests.forEach((a) => h.extended(a, asked, now(), true));
      } catch (err) {
        requests.forEach((a) => h.extended(a, asked, now(), false, (err as Error)?.name));
        if ((err as Error)?.name !== 'LockLostError') this.sink.unexpected(h.worker, 'extend', err);
      }
      await sleep(holdMs / 2);
    } else await sleep(holdMs);
    if (how.mode !== 'read') {
      for (let k = 0; k < keys.length; k++) {
        const op = h.op(requests[k]!, resources[k]!, 'write', tokens[k]!, now(), values[k]! + 1);
        const ok = await store.write(process, resources[k]!, tokens[k]!, values[k]! + 1);
        h.ack(op, now(), ok);
      }
    }
    void rng;
    this.letGo(h, requests, now(), validityEnd());
  }

  private letGo(h: ClientHistory, requests: Acquire[], at: number, validityEnd: number): void {
    for (const a of requests) h.release(a, at, validityEnd);
  }

  /**
   * Liveness (issue 37, item 4): once every fault has healed, the client takes each key in turn, in
   * the key's use, waiting up to `wait`; each must be granted.
   */
  private async probe(client: Client, h: ClientHistory, wait: number): Promise<void> {
    const { engine, runtime } = client;
    const { ttl } = this.config.settings;
    for (const [i, use] of this.config.keys.entries()) {
      const key = `k${i}`;
      const probe: Probe = { worker: h.worker, key, requestedAt: runtime.now() };
      this.probes.push(probe);
      const a = h.request(
        runtime.now(),
        key,
        ttl,
        wait,
        use.kind === 'sem' ? { permits: use.permits } : use.kind === 'rw' ? { mode: 'write' } : {},
      );
      try {
        const lock = await engine.acquire(key, {
          ttl,
          wait,
          ...(use.kind === 'sem' ? { permits: use.permits } : {}),
        });
        probe.granted = runtime.now();
        h.grant(
          a,
          runtime.now(),
          lock.fencingToken,
          runtime.now() + (lock.expiresAt - runtime.wallNow()),
          lock.permit,
        );
        h.release(a, runtime.now(), runtime.now() + (lock.expiresAt - runtime.wallNow()));
        await lock.release();
      } catch (err) {
        probe.error = `${(err as Error)?.name}: ${(err as Error)?.message}`;
        h.fail(a, runtime.now(), (err as Error)?.name ?? '?', String((err as Error)?.message));
      }
    }
  }
}
