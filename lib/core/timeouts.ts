/** Cancels a time-out started with {@link startTimeout}; calling it again does nothing. */
export type CancelTimeout = () => void;

/**
 * A pending time-out. A class, not an object literal, on purpose: an entry lives for its whole
 * duration (100 ms for a round), so V8 sees most objects of its allocation site survive a
 * young-generation collection and allocates them straight in the old generation from then on
 * ("allocation-site pretenuring", which follows literals, not class instances). Measured under
 * many concurrent locks (bench B2): with a literal here, V8 pretenured it and other allocation
 * sites of an acquire, 150 MB of 30,000 acquires' objects reached the old generation (28-47 MB
 * before the engine's redesign, 18-47 MB now), garbage collection took twice the time, and
 * `--no-allocation-site-pretenuring` made the difference disappear.
 */
class Pending {
  constructor(
    readonly deadline: number,
    public fire: (() => void) | undefined,
  ) {}
}

/**
 * The time-outs of one duration. Started one after the other, their deadlines come in the order
 * they were started, so one timer, armed for the oldest pending deadline, serves them all; a
 * cancelled time-out is only marked, and the timer is left alone.
 *
 * Why not one `setTimeout` each: a quorum round starts a time-out and nearly always cancels it a
 * fraction of a millisecond later. Node keeps a list per duration and tears it down whenever it
 * empties, so a caller that locks sequentially rebuilt it twice per lock (about 10 us of the
 * ~400 us an uncontended acquire + release costs in all).
 */
class TimeoutLine {
  private readonly pending: Pending[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  start(fire: () => void): CancelTimeout {
    const entry = new Pending(performance.now() + this.ms, fire);
    this.pending.push(entry);
    if (!this.timer) this.arm(this.ms);
    return () => {
      entry.fire = undefined;
    };
  }

  private arm(ms: number): void {
    // Unref'd: a round in flight keeps the process alive through its sockets, not its time-out.
    this.timer = setTimeout(this.expire, ms).unref();
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    const due: Array<() => void> = [];
    while (this.head < this.pending.length) {
      const entry = this.pending[this.head]!;
      if (entry.fire && entry.deadline > now) break;
      this.head++;
      if (entry.fire) due.push(entry.fire);
    }
    if (this.head === this.pending.length) {
      this.pending.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
    const next = this.pending[this.head];
    if (next) this.arm(Math.max(1, Math.ceil(next.deadline - now)));
    else this.onIdle();
    for (const fire of due) fire();
  };
}

const lines = new Map<number, TimeoutLine>();

/**
 * Calls `fire` after `ms` milliseconds unless the returned function is called first. For the
 * many short-lived time-outs of quorum rounds (see TimeoutLine); the timer does not keep the
 * process alive.
 */
export function startTimeout(ms: number, fire: () => void): CancelTimeout {
  const duration = Math.max(1, Math.ceil(ms));
  let line = lines.get(duration);
  if (!line) {
    line = new TimeoutLine(duration, () => lines.delete(duration));
    lines.set(duration, line);
  }
  return line.start(fire);
}

/**
 * Like {@link startTimeout}, but may fire up to 1/64 of `ms` early, never late: for deadlines
 * where early is the safe side (a lease given up before it runs out), so that time-outs of
 * slightly different lengths share one line (each lock's validity differs by a few ms).
 */
export function startTimeoutOrEarlier(ms: number, fire: () => void): CancelTimeout {
  const grain = ms < 128 ? 1 : 2 ** (Math.floor(Math.log2(ms)) - 6);
  return startTimeout(Math.floor(ms / grain) * grain, fire);
}

/** What {@link settleWithin} resolves with when `ms` passed first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Resolves with `promise`'s value, or with {@link TIMED_OUT} when `ms` pass first (a rejection
 * is passed on). The one time-out race of the library: a node that is down or paused must not
 * hang a PING, a QUIT or a SUBSCRIBE, and with it shutdown or a health check.
 */
export function settleWithin<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    const cancel = startTimeout(ms, () => resolve(TIMED_OUT));
    promise.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (err: unknown) => {
        cancel();
        reject(err);
      },
    );
  });
}
