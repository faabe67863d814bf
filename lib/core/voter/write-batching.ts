/** A socket that can hold its writes back and send them in one syscall (a net.Socket). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/*
 * Batching writes per tick. Commands that the engine sends to one node in the same tick (many
 * locks taken at once) should leave in one socket write: each write is a syscall on both sides,
 * and on a loopback or a VM it wakes the other process. But a lone command, the usual case of a
 * sequential caller, gains nothing from corking: its write is only postponed to the end of the
 * tick, and a corked write costs Node's stream more (a buffered entry, then a flush).
 *
 * So a socket is corked only when its commands come in batches: from the second command of a
 * tick, or from the first when the last tick in which it was used had more than one (steady load:
 * many locks at once). Every socket corked in a tick is uncorked by one process.nextTick of the
 * engine (not one per socket). A "tick" is a batching window: it opens with the first command sent
 * after the last window closed, and closes in that tick's process.nextTick queue, before the event
 * loop reads replies or fires timers.
 *
 * The window is state of one engine (a WriteWindow, given to its voters in their VoterContext), not
 * of the module: two engines in one process batch and hand over their writes independently.
 */

const WRITTEN: Promise<void> = Promise.resolve();

/** One engine's batching window: its number, whether it is open, and the sockets corked in it. */
export class WriteWindow {
  private id = 0;
  private open = false;
  private corked: Corkable[] = [];
  /** Settles when the current window closes, for callers that must know their writes have left. */
  private closing: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly close = (): void => {
    this.open = false;
    const streams = this.corked;
    this.corked = [];
    for (const stream of streams) stream.uncork();
    const settled = this.closing;
    this.closing = undefined;
    settled?.resolve();
  };

  /** The current window's number, opening one when none is open. */
  current(): number {
    if (!this.open) {
      this.open = true;
      this.id++;
      process.nextTick(this.close);
    }
    return this.id;
  }

  /**
   * Resolves once every write made so far through this window has been handed to its socket: at
   * the end of this tick when a socket is corked in the current window (its writes wait for the
   * window to close), at once otherwise.
   */
  handedOver(): Promise<void> {
    if (!this.open || this.corked.length === 0) return WRITTEN;
    if (!this.closing) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.closing = { promise, resolve };
    }
    return this.closing.promise;
  }

  /**
   * Corks `stream` until the current window closes (each call corks once more and is undone once):
   * for a caller that corks every socket a command may take, such as a Cluster whose commands are
   * routed by slot.
   */
  corkUntilClose(stream: Corkable): void {
    this.current();
    stream.cork();
    this.corked.push(stream);
  }
}

/**
 * Write batching for one socket: call {@link beforeWrite} right before each command is written
 * to it.
 */
export class WriteBatcher {
  /** The last window in which a command was written to this socket, and how many. */
  private lastWindow = 0;
  private commands = 0;
  /** The last window in which this socket was corked. */
  private corkedWindow = 0;

  constructor(private readonly window: WriteWindow) {}

  /** Corks the socket until the end of the tick, unless this command is likely to be alone. */
  beforeWrite(stream: Corkable): void {
    const current = this.window.current();
    if (this.lastWindow !== current) {
      const batching = this.commands > 1;
      this.lastWindow = current;
      this.commands = 1;
      if (!batching) return; // a lone caller's command: out at once
    } else {
      this.commands++;
    }
    if (this.corkedWindow === current) return;
    this.corkedWindow = current;
    this.window.corkUntilClose(stream);
  }
}
