import { Observable, Subject } from 'rxjs';

/** What happened to a lock or a voter (see `Redlock.events$` / `LockService.events$`). */
export interface LockEvent {
  readonly type:
    | 'acquired'
    | 'busy'
    | 'unavailable'
    | 'extended'
    | 'released'
    | 'lost'
    | 'healed'
    | 'node-down'
    | 'node-up'
    | 'node-abstaining';
  /** The lock's resources (empty for node events). */
  readonly resources: readonly string[];
  /** The lock's fencing token (first resource), on acquired / extended / released / lost. */
  readonly fencingToken?: number;
  /**
   * acquired / busy / unavailable: how long the acquire took, ms; released / lost: how long the
   * lock was held, ms; node-abstaining: for how long the node abstains, ms.
   */
  readonly durationMs?: number;
  /** The node (log-safe label) of a node event. */
  readonly node?: string;
  /** Why: a lost lock's reason, a node's error. */
  readonly reason?: string;
  /**
   * node-abstaining: what made the node abstain: it restarted or lost its data (`restart`), it is
   * not the server that wrote its guard marker (`identity`: a restart or a failover), or its wall
   * clock stepped forward (`clock`, see the `clockGuard` option) or is too far behind the others'
   * to seed a fencing counter it lost (`clock` too; `reason` says by how much).
   */
  readonly cause?: 'restart' | 'identity' | 'clock';
}

/**
 * The engine's event stream. Emitting costs nothing measurable while nobody listens: callers
 * check {@link LockEvents.observed} before they build an event.
 */
export class LockEvents {
  private readonly subject = new Subject<LockEvent>();
  /** Listeners other than the Observable's (OpenTelemetry instruments), called synchronously. */
  private readonly taps: Array<(event: LockEvent) => void> = [];
  private subscribers = 0;
  /**
   * Whether anybody listens (a tap, a subscriber of `events$`): build no event otherwise. A field,
   * updated as listeners come and go: it is read on every lock.
   */
  observed = false;
  readonly events$: Observable<LockEvent> = new Observable((subscriber) => {
    this.subscribers++;
    this.observed = true;
    const subscription = this.subject.subscribe(subscriber);
    return () => {
      subscription.unsubscribe();
      this.observed = --this.subscribers > 0 || this.taps.length > 0;
    };
  });

  emit(event: LockEvent): void {
    for (const tap of this.taps) tap(event);
    this.subject.next(event);
  }

  /** Calls `listener` for every event (synchronously, in order); returns how to stop. */
  tap(listener: (event: LockEvent) => void): () => void {
    this.taps.push(listener);
    this.observed = true;
    return () => {
      const i = this.taps.indexOf(listener);
      if (i >= 0) this.taps.splice(i, 1);
      this.observed = this.subscribers > 0 || this.taps.length > 0;
    };
  }

  /** Completes the stream (engine closed). */
  complete(): void {
    this.subject.complete();
  }
}
