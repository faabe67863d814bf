import type { Runtime } from '../../lib/core/runtime.js';
import type { Random } from './random.js';

/** The epoch the simulated wall clocks start from (2030-01-01T00:00:00Z): fixed, so a replay is exact. */
export const SIM_EPOCH_MS = 1_893_456_000_000;

/**
 * A simulated process: a client (an engine and its workload), a server, or the world itself. A
 * paused process runs nothing until it resumes (its events wait: a pause lands between two events,
 * at an await point); a dead one runs nothing ever again.
 */
export class SimProcess {
  pausedUntil = 0;
  dead = false;

  constructor(readonly name: string) {}
}

export interface SimEvent {
  at: number;
  seq: number;
  owner: SimProcess;
  fire: () => void;
  cancelled: boolean;
}

const NOTHING = (): void => undefined;

/** Calls `step` once per macrotask (so every microtask queued by one step runs before the next). */
type Pump = (step: () => boolean, done: (err?: unknown) => void) => void;

/**
 * Virtual time: one queue of events, each fired at its time in (time, order of scheduling) order,
 * with every microtask it queued drained before the next one fires (the engine's promise chains run
 * to their next await on virtual time, exactly as on Node's event loop, in an order fixed by the
 * seed). Nothing here reads a real clock.
 */
export class Scheduler {
  /** Simulated real time, ms since the run's start. */
  now = 0;
  /** The process whose event (or whose microtasks after it) is running. */
  current: SimProcess;
  /** Events fired so far. */
  fired = 0;
  /** A hash of every event fired (time and process): two runs of one seed end with the same. */
  trace = 0x811c9dc5;
  private heap: SimEvent[] = [];
  private seq = 0;
  private halted = false;
  /** Cancelled events still in the heap (most timers are cancelled: a command's time-out). */
  private cancelledInHeap = 0;

  constructor(
    readonly world: SimProcess,
    private readonly pump: Pump,
  ) {
    this.current = world;
  }

  /** Fires `fire` as `owner` at `at` (not before now); returns the event, to {@link cancel} it. */
  at(at: number, owner: SimProcess, fire: () => void): SimEvent {
    const event: SimEvent = {
      at: at < this.now ? this.now : at,
      seq: this.seq++,
      owner,
      fire,
      cancelled: false,
    };
    this.push(event);
    return event;
  }

  /**
   * Cancels an event: what it would have run is let go at once (a cancelled time-out holds its
   * promise chain otherwise, until its time), and the heap is rebuilt without the cancelled once
   * they are most of it. The order of the rest is (time, order of scheduling) either way.
   */
  cancel(event: SimEvent): void {
    if (event.cancelled) return;
    event.cancelled = true;
    event.fire = NOTHING;
    if (++this.cancelledInHeap > 64 && this.cancelledInHeap * 2 > this.heap.length) this.compact();
  }

  /** Runs until `until` (ms) or until no event is left; rejects with the first error an event threw. */
  run(until: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pump(
        () => {
          for (;;) {
            if (this.halted) return false;
            const event = this.heap[0];
            if (!event || event.at > until) return false;
            this.pop();
            if (event.cancelled) {
              this.cancelledInHeap--;
              continue;
            }
            if (event.owner.dead) {
              event.cancelled = true; // out of the heap: a later cancel counts nothing
              continue;
            }
            if (event.owner.pausedUntil > event.at) {
              // Paused: it runs when the process resumes, after what was due before it.
              event.at = event.owner.pausedUntil;
              event.seq = this.seq++;
              this.push(event);
              continue;
            }
            this.now = event.at;
            this.current = event.owner;
            this.fired++;
            this.trace = Math.imul(this.trace ^ (event.at * 1000), 0x01000193) ^ event.owner.name.length;
            // Out of the heap: a cancel after it fired (a time-out's, once its promise settled) counts nothing.
            const fire = event.fire;
            event.cancelled = true;
            event.fire = NOTHING;
            fire();
            return true;
          }
        },
        (err) => {
          this.current = this.world;
          if (err === undefined) {
            this.now = Math.max(this.now, Math.min(until, this.heap[0]?.at ?? until));
            resolve();
          } else reject(err);
        },
      );
    });
  }

  /** Ends {@link run} before the next event. */
  halt(): void {
    this.halted = true;
  }

  /** Runs `fn` as `owner` (construction of a process's objects outside an event). */
  as<T>(owner: SimProcess, fn: () => T): T {
    const before = this.current;
    this.current = owner;
    try {
      return fn();
    } finally {
      this.current = before;
    }
  }

  private compact(): void {
    const live = this.heap.filter((event) => !event.cancelled);
    this.heap = [];
    this.cancelledInHeap = 0;
    for (const event of live) this.push(event);
  }

  private push(event: SimEvent): void {
    const heap = this.heap;
    let i = heap.push(event) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(event, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = event;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * A process's {@link Runtime}: its monotonic clock is the simulated time, its wall clock that plus
 * its own offset (and drift), its timers events of its own, its randomness a stream of the seed.
 */
export class ProcessRuntime implements Runtime {
  constructor(
    private readonly sim: Scheduler,
    readonly process: SimProcess,
    private readonly rng: Random,
    /** The wall clock's offset from the simulated epoch, ms, and its drift (ppm). */
    readonly clock: { offsetMs: number; driftPpm: number } = { offsetMs: 0, driftPpm: 0 },
  ) {}

  now = (): number => this.sim.now;

  wallNow = (): number => SIM_EPOCH_MS + this.sim.now * (1 + this.clock.driftPpm / 1e6) + this.clock.offsetMs;

  setTimeout(fire: () => void, ms: number): () => void {
    const event = this.sim.at(this.sim.now + (ms > 0 ? ms : 0), this.process, fire);
    return () => this.sim.cancel(event);
  }

  defer(fire: () => void): void {
    this.sim.at(this.sim.now, this.process, fire);
  }

  /**
   * After the current continuations (the simulated transports batch no writes; a voter's release
   * batch closes here). A promise reaction, not `queueMicrotask`: the seal refuses the global.
   */
  endOfTick(fire: () => void): void {
    void Promise.resolve().then(fire);
  }

  random = (): number => this.rng.next();

  randomText = (bytes: number): string => this.rng.text(bytes);
}
