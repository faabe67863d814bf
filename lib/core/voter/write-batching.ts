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
 * many locks at once). Every socket corked in a tick is uncorked by one shared process.nextTick
 * (not one per socket). A "tick" is a batching window: it opens with the first command sent after
 * the last window closed, and closes in that tick's process.nextTick queue, before the event loop
 * reads replies or fires timers.
 */

/** The current batching window: its number, whether it is open, and the sockets corked in it. */
let windowId = 0;
let open = false;
let corked: Corkable[] = [];
/** Settles when the current window closes, for callers that must know their writes have left. */
let closing: { promise: Promise<void>; resolve: () => void } | undefined;

function closeWindow(): void {
  open = false;
  const streams = corked;
  corked = [];
  for (const stream of streams) stream.uncork();
  const settled = closing;
  closing = undefined;
  settled?.resolve();
}

const WRITTEN: Promise<void> = Promise.resolve();

/**
 * Resolves once every write made so far has been handed to its socket: at the end of this tick
 * when a socket is corked in the current window (its writes wait for the window to close), at once
 * otherwise.
 */
export function writesHandedOver(): Promise<void> {
  if (!open || corked.length === 0) return WRITTEN;
  if (!closing) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    closing = { promise, resolve };
  }
  return closing.promise;
}

/** The current window's number, opening one when none is open. */
export function currentWindow(): number {
  if (!open) {
    open = true;
    windowId++;
    process.nextTick(closeWindow);
  }
  return windowId;
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

  /** Corks the socket until the end of the tick, unless this command is likely to be alone. */
  beforeWrite(stream: Corkable): void {
    const current = currentWindow();
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
    corkUntilTickEnd(stream);
  }
}

/**
 * Corks `stream` until the current window closes (each call corks once more and is undone once):
 * for a caller that corks every socket a command may take, such as a Cluster whose commands are
 * routed by slot.
 */
export function corkUntilTickEnd(stream: Corkable): void {
  currentWindow();
  stream.cork();
  corked.push(stream);
}
